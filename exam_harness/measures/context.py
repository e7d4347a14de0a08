"""What measures are computed over, and the work they share.

:class:`ScoringInput` is the graded exam as plain mappings: per query its test points (and nugget
weights), every run's ranking, the grades, the judged passages and the texts nugget F charges for.
:class:`ScoringContext` computes on demand, once, what several measures need: each run's top-k, each
passage's coverage at a tau, what each run's top-k covers, the pool of a query, its overall cover, the
length nugget F charges each run (each passage's length counted once), the qrels of a label variant,
the runs as trec_eval reads them and the trec_eval values over those qrels.

Pools (the ``pool`` parameter of n-EXAM, alpha-nDCG and the trec measures):
- ``judged``: every run's top-k plus the query's judged passages and the passages that recorded
  grades mention, as the method defines the pool;
- ``top-k``: every run's top-k only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import chain, compress, repeat
from operator import ge, itemgetter, or_
from typing import cast

from exam_harness.core.errors import InputError
from exam_harness.measures._checks import check_min_grade
from exam_harness.measures.cover import covered_by
from exam_harness.measures.nuggets import ResponseLengths
from exam_harness.measures.qrels import Qrels, QrelsCut, count_label, label_of

POOLS: tuple[str, ...] = ("judged", "top-k")
TrecValues = dict[str, dict[str, dict[str, float]]]  # run -> query -> trec name -> value


def check_pool(pool: str) -> None:
    if pool not in POOLS:
        raise InputError("unknown pool policy", field="pool", value=pool, expected=" or ".join(POOLS))


@dataclass(frozen=True)
class ScoringInput:
    """A graded exam. ``queries`` fixes the order of per-query values (it decides bootstrap draws)."""

    queries: Sequence[str]
    test_points: Mapping[str, Sequence[str]]  # query -> distinct test point ids, bank order
    rankings: Mapping[str, Mapping[str, Sequence[str]]]  # run -> query -> passage ids, best first
    grades: Mapping[tuple[str, str], int]
    nuggets: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # query -> nugget id -> weight
    # query -> nugget id -> "vital" / "okay", for the queries whose nuggets carry one (TREC RAG nuggets)
    importance: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # run -> query -> per answer sentence, each citation's support credit (a plugin's: features/citation_support)
    support: Mapping[str, Mapping[str, tuple[tuple[float | None, ...], ...]]] = field(default_factory=dict)
    judged: Mapping[str, Sequence[str]] = field(default_factory=dict)  # query -> judged / recorded passages
    responses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # run -> query -> generated text
    passage_text: Callable[[str], str | None] = lambda _pid: None
    # pairs that could not be graded: they count as uncovered, and every value resting on one is
    # marked incomplete; a passage with one gets no qrels label
    failed: Collection[tuple[str, str]] = frozenset()
    # run -> query -> passage ids in trec_eval's order (score descending, ties by id descending), for
    # trec_eval measures; None: ``rankings`` (the rank column's order) serves them too
    trec_rankings: Mapping[str, Mapping[str, Sequence[str]]] | None = None
    # the runs of generated answers (Run.generated): a measure that declares it says nothing of an answer
    # (Measure.scores_generated) gives them no value
    generated: Collection[str] = frozenset()

    @property
    def runs(self) -> list[str]:
        return list(self.rankings)


@dataclass
class _TrecPass:
    """The trec measures of one qrels cut: those announced, and pytrec_eval's values for those evaluated,
    as it gives them (run -> query -> trec_eval name -> value) and as columns (trec_eval name -> run ->
    query -> value; None until picked for ``evaluated``)."""

    wanted: set[str] = field(default_factory=set)
    evaluated: frozenset[str] = frozenset()
    raw: TrecValues = field(default_factory=dict)
    columns: dict[str, dict[str, dict[str, float]]] | None = None


class ScoringContext:
    """Lazily computed, memoised intermediate results over one :class:`ScoringInput`."""

    def __init__(self, exam: ScoringInput) -> None:
        self.exam = exam
        self._banks = {q: list(dict.fromkeys(tps)) for q, tps in exam.test_points.items()}  # an id counts once
        query_of = {t: q for q, tps in self._banks.items() for t in tps}
        self._failed: dict[str, set[str]] = {}  # query -> passages with a pair that could not be graded
        for pid, tid in exam.failed:
            if tid in query_of:
                self._failed.setdefault(query_of[tid], set()).add(pid)
        self._top: dict[int, dict[str, dict[str, list[str]]]] = {}
        self._trec_top: dict[int, dict[str, dict[str, list[str]]]] = {}
        self._grade_rows: dict[str, dict[str, tuple[int, ...]]] = {}  # query -> passage -> grades on the bank
        self._recorded_rows: dict[str, dict[str, tuple[int | None, ...]]] = {}  # the same, None: no grade
        # (tau, query) -> passage -> the bank positions it covers, as bits: a union of coverage is an OR
        self._masks: dict[tuple[int, str], dict[str, int]] = {}
        self._sets: dict[str, dict[int, frozenset[str]]] = {}  # query -> bits -> the test points they name
        self._coverage: dict[tuple[int, str], dict[str, frozenset[str]]] = {}
        self._covered: dict[tuple[int, int], dict[tuple[str, str], frozenset[str]]] = {}
        self._lengths = ResponseLengths(exam.responses, exam.passage_text)
        self._charged: dict[int, dict[str, dict[str, int]]] = {}
        self._trec_run_dicts: dict[int, dict[str, dict[str, dict[str, float]]]] = {}
        self._pools: dict[tuple[str, int], dict[str, list[str]]] = {}
        self._overall: dict[tuple[int, str, int], dict[str, frozenset[str]]] = {}
        self._qrels: dict[tuple[QrelsCut, bool], Qrels] = {}  # keyed by the cut's labels (QrelsCut.labels)
        self._segments: dict[str, frozenset[str]] | None = None  # query -> generated answers' segments
        self._trec: dict[QrelsCut, _TrecPass] = {}

    @property
    def queries(self) -> Sequence[str]:
        return self.exam.queries

    @property
    def runs(self) -> list[str]:
        return self.exam.runs

    def bank(self, query: str) -> Sequence[str]:
        return self._banks.get(query, ())

    def top_k(self, k: int) -> dict[str, dict[str, list[str]]]:
        """run -> query -> its top-k passage ids, for every query of the exam."""
        if k not in self._top:
            self._top[k] = {
                run: {q: list(ranking.get(q, ())[:k]) for q in self.queries}
                for run, ranking in self.exam.rankings.items()
            }
        return self._top[k]

    def trec_top_k(self, k: int) -> dict[str, dict[str, list[str]]]:
        """run -> query -> the top-k passage ids as trec_eval measures read them (see ``trec_rankings``)."""
        order = self.exam.trec_rankings
        if order is None:
            return self.top_k(k)
        if k not in self._trec_top:
            self._trec_top[k] = {run: {q: list(ranking.get(q, ())[:k]) for q in self.queries}
                                 for run, ranking in order.items()}
        return self._trec_top[k]

    def grade_rows(self, query: str, passages: Iterable[str]) -> dict[str, tuple[int, ...]]:
        """Per passage, its grades on the query's bank in bank order (no grade counts 0), each read once:
        coverage at every tau and the max-grade labels come from these rows."""
        known = self._grade_rows.setdefault(query, {})
        recorded = self._recorded_rows.setdefault(query, {})
        bank, grade = self.bank(query), self.exam.grades.get
        for pid in passages:
            if pid not in known:
                row = recorded[pid] = tuple(map(grade, zip(repeat(pid), bank)))
                known[pid] = tuple(0 if g is None else g for g in row) if None in row else cast("tuple[int, ...]", row)
        return known

    def recorded_rows(self, query: str, passages: Iterable[str]) -> dict[str, tuple[int | None, ...]]:
        """:meth:`grade_rows` as recorded: None where a pair has no grade (the report's outcomes and grade
        counts read these rather than look the grades up again)."""
        self.grade_rows(query, passages)
        return self._recorded_rows[query]

    def _coverage_masks(self, query: str, min_grade: int, passages: Iterable[str]) -> dict[str, int]:
        """Per passage, the bank positions it covers at ``min_grade`` as bits (bit i: the i-th test point)."""
        known = self._masks.setdefault((min_grade, query), {})
        missing = [p for p in passages if p not in known]
        if missing:
            check_min_grade(min_grade)
            rows = self.grade_rows(query, missing)
            bits = [1 << i for i in range(len(self.bank(query)))]
            for pid in missing:
                known[pid] = sum(compress(bits, map(ge, rows[pid], repeat(min_grade))))
        return known

    def _test_points(self, query: str, mask: int) -> frozenset[str]:
        """The test points of the bank positions ``mask`` names (one set per distinct mask of a query)."""
        known = self._sets.setdefault(query, {})
        found = known.get(mask)
        if found is None:
            bank = self.bank(query)
            found = known[mask] = frozenset(t for i, t in enumerate(bank) if mask >> i & 1)
        return found

    def coverage(self, query: str, min_grade: int, passages: Sequence[str]) -> dict[str, frozenset[str]]:
        """Per passage, the test points of the query it covers at ``min_grade`` (memoised per passage;
        the same sets as :func:`~exam_harness.measures.cover.passage_coverage`)."""
        known = self._coverage.setdefault((min_grade, query), {})
        missing = [p for p in passages if p not in known]
        if missing:
            masks = self._coverage_masks(query, min_grade, missing)
            for pid in missing:
                known[pid] = self._test_points(query, masks[pid])
        return known

    def covered(self, run: str, query: str, k: int, min_grade: int) -> frozenset[str]:
        """The test points of ``query`` that ``run``'s top-k covers at ``min_grade``: the union of its
        passages' coverage (memoised; EXAM-Cover, n-EXAM and nugget F read the same sets). The first call
        at a (k, tau) computes every run's on every query, each passage's coverage once."""
        known = self._covered.get((k, min_grade))
        if known is None:
            known = self._covered[(k, min_grade)] = self._covered_by_runs(k, min_grade)
        found = known.get((run, query))
        if found is None:  # a query outside the exam: as the exam's are computed
            top = self.top_k(k)[run][query]
            found = known[(run, query)] = frozenset(covered_by(self.coverage(query, min_grade, top), top))
        return found

    def _tops_by_query(self, k: int) -> Iterator[tuple[str, list[tuple[str, list[str]]], list[str]]]:
        """Per query of the exam: each run's top-k and the distinct passages among them. Work over all runs
        goes query by query, so that a query's passages and their values stay at hand."""
        top, pooled = self.top_k(k), self.pool("top-k", k)
        for q in self.queries:
            yield q, [(run, ranking[q]) for run, ranking in top.items()], pooled[q]

    def _covered_by_runs(self, k: int, min_grade: int) -> dict[tuple[str, str], frozenset[str]]:
        found: dict[tuple[str, str], frozenset[str]] = {}
        for q, tops, pooled in self._tops_by_query(k):
            masks = self._coverage_masks(q, min_grade, pooled)
            sets = self._sets.setdefault(q, {})
            for run, passages in tops:
                mask = reduce(or_, map(masks.__getitem__, passages), 0)
                covers = sets.get(mask)
                found[(run, q)] = covers if covers is not None else self._test_points(q, mask)
        return found

    def failed_passages(self, query: str) -> set[str]:
        """Passages of ``query`` with a pair that could not be graded."""
        return self._failed.get(query, set())

    def rests_on_failures(self, run: str, query: str, k: int, pool: str | None, *, segments: bool = True) -> bool:
        """Whether a run's value on a query rests on a failed pair: in its top-k, or in the pool when the
        measure reads the pool (n-EXAM's normaliser, the qrels' recall base, alpha-nDCG's ideal).
        ``segments`` False: the measure reads the pool's collection passages only (the qrels of a trec
        measure hold no generated answer's segment, see :meth:`qrels`)."""
        failed = self._failed.get(query)
        if not failed:
            return False
        passages = self.pool(pool, k)[query] if pool is not None else self.top_k(k)[run][query]
        skipped = frozenset() if segments or pool is None else self.generated_segments(query)
        return any(p in failed and p not in skipped for p in passages)

    def pool(self, pool: str, k: int) -> dict[str, list[str]]:
        """query -> the pool's passage ids (judged ones first, then each run's top-k in run order)."""
        check_pool(pool)
        key = (pool, k)
        if key not in self._pools:
            pools: dict[str, list[str]] = {}
            if pool == "top-k":
                top = self.top_k(k)
                for q in self.queries:
                    pools[q] = list(dict.fromkeys(chain.from_iterable(ranking[q] for ranking in top.values())))
            else:  # the judged passages, then the top-k pool (its order is each run's top-k in run order)
                judged, ranked = self.exam.judged, self.pool("top-k", k)
                for q in self.queries:
                    pools[q] = list(dict.fromkeys(chain(judged[q], ranked[q]))) if judged.get(q) else list(ranked[q])
            self._pools[key] = pools
        return self._pools[key]

    def overall(self, min_grade: int, pool: str, k: int) -> dict[str, frozenset[str]]:
        """query -> the test points any passage of the pool covers (n-EXAM's normaliser)."""
        key = (min_grade, pool, k)
        if key not in self._overall:
            result: dict[str, frozenset[str]] = {}
            for q, pids in self.pool(pool, k).items():
                masks = self._coverage_masks(q, min_grade, pids)
                result[q] = self._test_points(q, reduce(or_, map(masks.__getitem__, pids), 0))
            self._overall[key] = result
        return self._overall[key]

    def generated_segments(self, query: str) -> frozenset[str]:
        """The passages of ``query`` that only runs of generated answers rank: their answers' segments
        (ids the readers derive from the text, see exam_harness.io.generated), no passage of the
        collection. A passage a ranked run also ranks is the collection's, whatever ranks it besides."""
        if self._segments is None:
            ranked = [r for run, r in self.exam.rankings.items() if run not in self.exam.generated]
            answers = [r for run, r in self.exam.rankings.items() if run in self.exam.generated]
            self._segments = {}
            for q in self.queries:
                found = set(chain.from_iterable(r.get(q, ()) for r in answers))
                if found:
                    found.difference_update(chain.from_iterable(r.get(q, ()) for r in ranked))
                    self._segments[q] = frozenset(found)
        return self._segments.get(query, frozenset())

    def qrels(self, cut: QrelsCut, *, generated: bool = False) -> Qrels:
        """The EXAM-Qrels of a cut's label variant over its pool (the one qrels builder, see measures.qrels):
        the labels of the collection's passages, which the trec measures score rankings against and the
        ``*.qrels`` files hold; a generated answer's segment is none of them (:meth:`generated_segments`),
        else it would count as a relevant passage no ranking can retrieve. ``generated``: the labels of
        those segments instead (the AutoJudge judge's qrels of the answers it judges)."""
        key = (cut.labels, generated)
        if key not in self._qrels:
            qrels: Qrels = {}
            for q, pooled in self.pool(cut.pool, cut.k).items():
                bank = self.bank(q)
                if not bank:
                    continue
                failed, segments = self._failed.get(q, set()), self.generated_segments(q)
                # no label rests on a grade that failed
                pids = [p for p in pooled if p not in failed and (p in segments) == generated]
                if cut.variant == "max-grade":
                    rows = self.grade_rows(q, pids)
                    qrels[q] = {p: label_of(rows[p], cut.variant, cut.min_grade, cut.m) for p in pids}
                else:  # count and at-least-m read the coverage every other measure shares
                    masks = self._coverage_masks(q, cut.min_grade, pids)
                    qrels[q] = {p: count_label(masks[p].bit_count(), cut.variant, cut.m) for p in pids}
            self._qrels[key] = qrels
        return self._qrels[key]

    def want_trec(self, cut: QrelsCut, trec_name: str) -> None:
        """Announce a trec measure, so that one pytrec_eval pass computes all measures of the same qrels."""
        self._trec_pass(cut).wanted.add(trec_name)

    def trec(self, cut: QrelsCut, trec_name: str) -> TrecValues:
        """run -> query -> trec name -> value of the announced measures of these qrels (pytrec_eval once)."""
        from exam_harness.measures.trec import parse_trec_name

        raw = self.trec_raw(cut, trec_name)
        by_trec = {parse_trec_name(name).trec_name: name for name in self._trec[cut].evaluated}
        return {run: {q: {by_trec[t]: float(v) for t, v in values.items() if t in by_trec}
                      for q, values in by_query.items()} for run, by_query in raw.items()}

    def trec_raw(self, cut: QrelsCut, trec_name: str) -> TrecValues:
        """:meth:`trec` as pytrec_eval gives it: keyed by trec_eval name (``P_20``, ``ndcg_cut_10``), which
        a trec measure reads directly rather than have every value renamed."""
        from exam_harness.measures.trec import checked_trec_names, evaluate_raw, parse_trec_name

        done = self._trec_pass(cut)
        done.wanted.add(trec_name)
        if trec_name not in done.evaluated:
            qrels = self.qrels(cut)
            level = cut.relevance_level
            by_trec = checked_trec_names(sorted(done.wanted), level)
            asked = [parse_trec_name(n).asked for n in by_trec.values()]
            done.raw = evaluate_raw(qrels, self._trec_runs(cut.k), asked, level)
            done.evaluated, done.columns = frozenset(done.wanted), None
        return done.raw

    def trec_per_query(self, cut: QrelsCut, trec_name: str) -> dict[str, dict[str, float]]:
        """run -> query -> the value of one trec measure on every query of the exam, 0.0 where trec_eval
        reports none (a run that did not answer). Every announced measure of these qrels is picked from
        pytrec_eval's values in one pass over each run's queries (memoised; the dicts are shared)."""
        from exam_harness.measures.trec import parse_trec_name

        self.trec_raw(cut, trec_name)
        done = self._trec[cut]
        if done.columns is None:
            done.columns = self._columns(done)
        return done.columns[parse_trec_name(trec_name).trec_name]

    def _trec_pass(self, cut: QrelsCut) -> _TrecPass:
        found = self._trec.get(cut)
        if found is None:
            found = self._trec[cut] = _TrecPass()
        return found

    def _trec_runs(self, k: int) -> dict[str, dict[str, dict[str, float]]]:
        """The runs as trec_eval reads them (run_dicts): the same for every qrels cut of depth ``k``."""
        from exam_harness.measures.trec import run_scores

        runs = self._trec_run_dicts.get(k)
        if runs is None:
            top = self.trec_top_k(k)
            runs = self._trec_run_dicts[k] = {run: {} for run in top}
            for q in self.queries:  # query by query, so that the query's passage ids stay in cache
                for run, ranking in top.items():
                    runs[run][q] = run_scores(q, ranking[q])
        return runs

    def _columns(self, done: _TrecPass) -> dict[str, dict[str, dict[str, float]]]:
        """trec_eval name -> run -> query -> value of every evaluated measure of a pass."""
        from exam_harness.measures.trec import parse_trec_name

        queries = self.queries
        columns: dict[str, dict[str, dict[str, float]]] = {parse_trec_name(n).trec_name: {} for n in done.evaluated}
        no_values: dict[str, float] = {}
        for run in self.runs:
            by_query = done.raw.get(run, {})
            try:  # every query reported (the usual case): looked up once for all measures
                rows = list(map(by_query.__getitem__, queries))
            except KeyError:
                rows = [by_query.get(q, no_values) for q in queries]
            for name, column in columns.items():
                try:  # picked in C
                    column[run] = dict(zip(queries, map(itemgetter(name), rows)))
                except KeyError:
                    column[run] = {q: row.get(name, 0.0) for q, row in zip(queries, rows)}
        return columns

    def response_text(self, run: str, query: str, k: int) -> str:
        """The text nugget F charges: the full generated response, else the run's top-k passages joined."""
        text = self.exam.responses.get(run, {}).get(query)
        if text is not None:
            return text
        texts = (self.exam.passage_text(p) for p in self.top_k(k)[run][query])
        return " ".join(t for t in texts if t is not None)

    def response_length(self, run: str, query: str, k: int) -> int:
        """The length of :meth:`response_text` (non-whitespace code points), each passage counted once
        for every run that ranks it (see measures.nuggets.ResponseLengths)."""
        found = self.response_lengths(k)[run].get(query)
        return found if found is not None else self._lengths.charged(run, query, self.top_k(k)[run][query])

    def response_lengths(self, k: int) -> dict[str, dict[str, int]]:
        """run -> query -> :meth:`response_length`, for every query of the exam (memoised)."""
        found = self._charged.get(k)
        if found is None:
            found = self._charged[k] = {run: {} for run in self.runs}
            for q, tops, pooled in self._tops_by_query(k):
                lengths = self._lengths.of_passages(pooled)  # the query's passages, each counted once
                for run, passages in tops:
                    found[run][q] = self._lengths.charged(run, q, passages, lengths)
        return found
