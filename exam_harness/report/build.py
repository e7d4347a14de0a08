"""The pytest session's report, built by a pure function from the inputs, the outcome and the plan.

The exam is scored as for ``evaluate`` (results/scoring.py, at the session's one tau) and the document's
core is built by the same builder (report/core.py: build); this module adds the session's envelope.

Per-test-point outcomes and grade counts read each (passage, bank) pair's grades once
(:class:`TopGrades`), however many runs rank the passage, and each run's top-k as scoring returned
them (measures/result.py: TopK); an outcome is the rule of :func:`exam_harness.core.case_verdicts.verdict`,
which decides it whenever a pair of the top-k has no grade.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, repeat
from pathlib import Path
from typing import cast

from exam_harness.core.case_verdicts import PASSAGE_CHARS, verdict
from exam_harness.core.display import shorten
from exam_harness.core.models import QueryBank, readable_id
from exam_harness.core.paths import shown_path
from exam_harness.core.version import __version__
from exam_harness.exam.inputs import ExamInputs, view_from_banks
from exam_harness.exam.plan import ExamPlan
from exam_harness.grading.passes import GradingOutcome
from exam_harness.io.runs import collector_paused
from exam_harness.measures.qrels import Qrels, qrels_file_name, relevance_level
from exam_harness.measures.result import ExamResult, TopK
from exam_harness.report.core import build
from exam_harness.results.schema import (
    CacheSummary,
    ExamReport,
    Outcomes,
    QrelsFile,
    Settings,
    TestPointOutcome,
)
from exam_harness.results.scored import ScoringInputs
from exam_harness.results.scoring import score_exam, scoring_input
from exam_harness.results.verdict import over_fallback_limit


@dataclass(frozen=True)
class SessionOutcome:
    """What a session produced: the grades, the banks it scored and each run's case outcomes."""

    grading: GradingOutcome
    banks: Sequence[QueryBank]
    tallies: Mapping[str, Outcomes] = field(default_factory=dict)
    cache_path: str | None = None
    partial: str | None = None  # why the session covered part of the exam only
    # --exam-max-fallbacks: a run with a larger share of grades read by a fallback rule has its scores over
    # the queries holding such grades marked incomplete (None: never)
    max_fallbacks: float | None = None
    reference: tuple[str, ExamReport] | None = None  # --exam-compare: the kept report's name and the report
    judge_model: str | None = None  # the judge's model when the grader spec names none (the circularity guard)
    # what the session's features added for their sections and hooks (None: nothing; a live system's failures)
    inputs: ScoringInputs | None = None


@dataclass(frozen=True)
class BuiltReport:
    """The report and the qrels behind its qrels files (file name -> labels)."""

    report: ExamReport
    qrels: Mapping[str, Qrels]
    result: ExamResult
    # run -> query -> pairs of its top-k whose grade a fallback rule read (only queries with some)
    fallbacks: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def build_report(inputs: ExamInputs, outcome: SessionOutcome, plan: ExamPlan, *, root: Path | None = None,
                 run_paths: Sequence[Path] = ()) -> BuiltReport:
    """Score ``outcome``'s banks at the plan's tau and describe everything as an :class:`ExamReport`.

    Paths in the report are shown relative to ``root`` where they lie below it. Pure: no file is written.
    """
    with collector_paused():
        return _build_report(inputs, outcome, plan, root=root, run_paths=run_paths)


def _build_report(inputs: ExamInputs, outcome: SessionOutcome, plan: ExamPlan, *, root: Path | None,
                  run_paths: Sequence[Path]) -> BuiltReport:
    grading = outcome.grading
    view = view_from_banks(inputs.data, outcome.banks, exclude=grading.unsupported)
    tau = plan.min_grade
    exam = scoring_input(view, grading, plan, responses=inputs.responses, sort_queries=True)
    scored = score_exam(exam, view, grading, plan, [tau], qrels=True, tops=True, redact_all=inputs.redact_all)
    result = scored.result

    tops = TopGrades(inputs, outcome.banks, grading, plan.k, result.tops)
    fallbacks = fallback_counts(inputs, outcome, plan.k, result.runs)
    # --exam-max-fallbacks: a run past its share of fallback grades has its scores over the queries holding
    # them marked incomplete (results/verdict.py decides the check from the document)
    unanswered: dict[str, set[str]] = {}
    if outcome.max_fallbacks is not None:
        for run in result.runs:
            counted = sum(fallbacks.get(run, {}).values())
            if over_fallback_limit(counted, grade_counts(tops, run), outcome.max_fallbacks):
                unanswered.setdefault(run, set()).update(fallbacks[run])

    def session(run: str) -> dict[str, object]:  # what only a pytest session tallies per run
        return {"outcomes": outcome.tallies.get(run, Outcomes()), "grade_counts": grade_counts(tops, run),
                "fallbacks": sum(fallbacks.get(run, {}).values())}

    outcomes = test_point_outcomes(inputs, outcome, plan, tops)
    scored = replace(scored, outcomes=outcomes, reference=outcome.reference,
                     judge_model=outcome.judge_model, run_folders=run_paths,
                     inputs=outcome.inputs if outcome.inputs is not None else ScoringInputs())
    core = build(scored, per_query=True, unanswered=unanswered, session=session)
    report = ExamReport(
        tool_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        settings=Settings(
            grader=plan.grader, k=plan.k, min_grade=tau, qrels_m=plan.qrels_m, pool=plan.pool,
            measures=[str(m) for m in plan.requested], label_variants=list(plan.labels),
            banks=sorted({str(b.source) if root is None else shown_path(b.source, root) for b in outcome.banks}),
            runs=[str(p) if root is None else shown_path(p, root) for p in run_paths],
        ),
        cache=CacheSummary(
            path=outcome.cache_path, pairs=grading.pairs, unique_pairs=grading.unique, hits=grading.cache_hits,
            misses=grading.cache_misses, graded=grading.graded, failures=len(grading.failures),
            grading_seconds=round(grading.seconds, 3),
        ),
        queries=len({b.query.id for b in outcome.banks}),
        test_points=sum(len(b.test_points) for b in outcome.banks),
        measures=core.measures,
        systems=core.systems,
        per_query=core.per_query,
        qrels=[QrelsFile(label=label, file=qrels_file_name(label, tau, plan.qrels_m),
                         relevance_level=relevance_level(label, tau)) for label in plan.labels],
        partial=outcome.partial,
        outcomes=outcomes,
        sections=core.sections,
    )
    return BuiltReport(report, result.qrels, result, fallbacks)


class TopGrades:
    """Each run's top-k per bank and the grades of each (passage, bank) pair, read once per passage
    however many runs rank it: the per-test-point outcomes and the grade counts read them from here.

    ``scored`` (what scoring returned, measures/result.py: TopK) lends the top-k it cut for the queries it
    scored, and the grades it read for a bank whose test points are the ones it scored; any other query's
    top-k is cut here, by the rank column as :meth:`Run.top_k` does. A *row* is one passage's grades on
    one bank's test points (None: no grade). Everything is gathered bank by bank, for every run at once,
    so that a bank's passages and rows stay at hand.
    """

    def __init__(self, inputs: ExamInputs, banks: Sequence[QueryBank], grading: GradingOutcome, k: int,
                 scored: TopK | None = None) -> None:
        self.inputs, self.banks, self.k = inputs, banks, k
        # the scoring's top-k and rows serve where they are read from these grades at this k
        self.scored = scored if scored is not None and scored.k == k and scored.grades is grading.grades else None
        self._scored = self.scored.top if self.scored is not None else {}
        self.runs = sorted(inputs.data.runs)
        # queries whose top-k scoring cut for every run: its top-k pool lists their distinct passages
        self._pooled = self.scored.pooled if self.scored is not None and list(self.scored.runs) == self.runs else {}
        self._grades, self._failures = grading.grades, grading.failures
        self._points = [[tp.id for tp in bank.test_points] for bank in banks]
        self._supported = [[i for i, tid in enumerate(ids) if tid not in grading.unsupported] for ids in self._points]
        self.rows: list[tuple[int | None, ...]] = []  # row -> the passage's grades on its bank's test points
        self._counted: list[tuple[int, ...]] = []  # row -> its grades on the test points the grader can grade
        self._failed: list[int] = []  # row -> how many of those pairs could not be graded
        self._spans: list[tuple[int, int, bool]] = []  # per bank: its rows' first and end row, whether any has None
        self._tops: dict[tuple[int, str], tuple[Sequence[str], list[int]]] = {}
        self._run_rows: dict[str, list[int]] = {run: [] for run in self.runs}  # run -> its rows on every bank
        for index in range(len(banks)):
            self._gather(index)
        self._counts: dict[str, dict[str, int]] | None = None  # run -> its grade counts

    def top(self, run: str, query: str) -> Sequence[str]:
        """The passage ids of ``run``'s top-k on ``query``."""
        top = self._scored.get(run, {}).get(query)
        return top if top is not None else self.inputs.data.runs[run].top_k(query, self.k)

    def top_rows(self, index: int, run: str) -> tuple[Sequence[str], list[int]]:
        """``run``'s top-k on the ``index``-th bank's query and the row of each of its passages."""
        return self._tops[(index, run)]

    def _gather(self, index: int) -> None:
        """Every run's top-k on the ``index``-th bank and a row for each distinct passage among them."""
        qid, ids, supported = self.banks[index].query.id, self._points[index], self._supported[index]
        tops = [(run, self.top(run, qid)) for run in self.runs]
        pooled = self._pooled.get(qid)
        if pooled is None:
            pooled = list(dict.fromkeys(chain.from_iterable(top for _, top in tops)))
        scored = self.scored
        recorded = scored.rows.get(qid) if scored is not None and list(scored.banks.get(qid, ())) == ids else None
        if recorded is not None and (qid in self._pooled or all(p in recorded for p in pooled)):
            rows = list(map(recorded.__getitem__, pooled))  # scoring read these pairs' grades already
        else:
            rows = [tuple(map(self._grades.get, zip(repeat(pid), ids))) for pid in pooled]
        first = len(self.rows)
        row_of = {pid: first + i for i, pid in enumerate(pooled)}
        every = len(supported) == len(ids)
        any_none = False
        for pid, values in zip(pooled, rows):
            counted = values if every else tuple(values[i] for i in supported)
            failed = 0
            if None in values:
                any_none = True
                if None in counted:
                    failed = sum(1 for i in supported if values[i] is None and (pid, ids[i]) in self._failures)
                    counted = tuple(g for g in counted if g is not None)
            self.rows.append(values)
            self._counted.append(cast("tuple[int, ...]", counted))
            self._failed.append(failed)
        self._spans.append((first, len(self.rows), any_none))
        for run, top in tops:
            rows_of_run = list(map(row_of.__getitem__, top))
            self._tops[(index, run)] = (top, rows_of_run)
            self._run_rows[run] += rows_of_run

    def best_positions(self, index: int) -> tuple[list[list[int]], list[list[bool]] | None]:
        """Per run (in run order) and test point of the ``index``-th bank: the position in the run's top-k
        of the first passage with the highest grade (verdict()'s best passage when every pair is graded),
        and, where any row of the bank lacks a grade, whether the run's column lacks one (None: none does).
        A run with an empty top-k gets position 0 (it has no column to read)."""
        import numpy as np  # imported on use, as the package imports fast

        first, end, any_none = self._spans[index]
        width = len(self._points[index])
        rows = self.rows[first:end]
        tops = [self._tops[(index, run)][1] for run in self.runs]
        depth = max(map(len, tops), default=0)
        if not width or not depth:
            return [[0] * width for _ in tops], None
        low = np.iinfo(np.int64).min  # below every grade: what a short top-k is padded with
        values = np.array([[low if g is None else g for g in row] for row in rows] if any_none else rows,
                          dtype=np.int64).reshape(len(rows), width)
        values = np.vstack([values, np.full((1, width), low, dtype=np.int64)])
        pad = end  # the padding row, as a global row number
        at = np.array([top + [pad] * (depth - len(top)) for top in tops], dtype=np.int64) - first
        positions: list[list[int]] = values[at].argmax(axis=1).tolist()  # argmax: the first highest
        if not any_none:
            return positions, None
        missing = np.array([[g is None for g in row] for row in rows] + [[False] * width], dtype=bool)
        return positions, cast("list[list[bool]]", missing[at].any(axis=1).tolist())

    def grade_counts(self, run: str) -> dict[str, int]:
        """How often each grade occurs over ``run``'s top-k passages and the test points of their banks
        the grader can grade (``"failed"``: pairs that could not be graded)."""
        if self._counts is None:
            self._counts = self._count_runs()
        return dict(self._counts[run])

    def _count_runs(self) -> dict[str, dict[str, int]]:
        """:meth:`grade_counts` of every run, by numpy: per row how often each grade occurs and how many
        pairs failed, summed over each run's rows."""
        import numpy as np  # imported on use, as the package imports fast

        lengths = [len(c) for c in self._counted]
        flat = np.fromiter(chain.from_iterable(self._counted), dtype=np.int64, count=sum(lengths))
        values, codes = np.unique(flat, return_inverse=True)
        n_rows, n_values = len(self.rows), len(values)
        cells = np.repeat(np.arange(n_rows) * n_values, lengths) + codes.reshape(-1)  # (row, grade)
        per_row = np.bincount(cells, minlength=n_rows * n_values).reshape(n_rows, n_values)
        per_row = np.hstack([per_row, np.array(self._failed, dtype=np.int64).reshape(n_rows, 1)])  # + failed
        sizes = [len(self._run_rows[run]) for run in self.runs]
        rows = np.fromiter(chain.from_iterable(map(self._run_rows.__getitem__, self.runs)), dtype=np.intp,
                           count=sum(sizes))
        sums = np.zeros((len(self.runs), n_values + 1), dtype=np.int64)
        ranking = [i for i, size in enumerate(sizes) if size]  # runs with rows (reduceat cannot sum an empty stretch)
        if ranking:  # each run's rows are one stretch of ``rows``, one after the other: summed by reduceat
            starts = np.cumsum([0, *(sizes[i] for i in ranking[:-1])])
            sums[ranking] = np.add.reduceat(per_row[rows], starts, axis=0)
        grades = [str(int(v)) for v in values]
        found: dict[str, dict[str, int]] = {}
        for run, counts in zip(self.runs, sums.tolist()):
            run_counts = {grade: n for grade, n in zip(grades, counts) if n}
            if counts[-1]:
                run_counts["failed"] = counts[-1]
            found[run] = dict(sorted(run_counts.items()))
        return found


REPORT_REASON_CHARS = 500  # a grade's reason as the JSON report keeps it (a line shows verdicts.REASON_CHARS)
_UNSEEN = "\0unseen"  # marks a text not shortened yet; compared by identity, so no answer text is taken for it


def test_point_outcomes(inputs: ExamInputs, outcome: SessionOutcome, plan: ExamPlan,
                        tops: TopGrades | None = None) -> list[TestPointOutcome]:
    """Every run's verdict on every test point of the scored banks (texts left out for secret banks)."""
    from exam_harness.graders.answer_key import naming_the_gold  # rapidfuzz: only when a report is built

    grading = outcome.grading
    tops = tops if tops is not None else TopGrades(inputs, outcome.banks, grading, plan.k)
    tau, k, unsupported, answers, grades = plan.min_grade, plan.k, grading.unsupported, grading.answers, grading.grades
    shortened: dict[str, dict[str, str | None]] = {}  # test point -> best passage -> its reason, shortened
    texts, passage_texts = inputs.data.passages, dict[str, str | None]()  # passage -> its text, shortened
    found: list[TestPointOutcome] = []
    append, grade_rows = found.append, tops.rows
    for index, bank in enumerate(outcome.banks):
        secret = bank.secret or inputs.redact_all
        qid = bank.query.id
        # what every run's outcome on a test point shares, looked up once
        # ``shown``: the id the pytest case carries (readable_id), so an id copied from CI output is found here
        points = [(column, tp, tp.id, readable_id(tp.id, qid, None if secret else tp.text, tp.facet_id), tp.kind,
                   tp.required, None if secret else tp.text, tp.id in unsupported,
                   "required-missed" if tp.required else "missed", shortened.setdefault(tp.id, {}))
                  for column, tp in enumerate(bank.test_points)]
        positions, lacking = tops.best_positions(index)
        for i, name in enumerate(tops.runs):
            top, rows = tops.top_rows(index, name)
            at, gaps = positions[i], lacking[i] if lacking is not None else None
            for column, tp, tid, shown, kind, required, text, skipped, missed, memo in points:
                if required and not plan.required.applies(tp, name):  # required of other runs, or a baseline
                    required, missed = False, "missed"
                outcome_of: str
                best_grade: int | None
                best_passage: str | None
                if skipped or (gaps is not None and gaps[column]):  # the verdict's own rule decides
                    result = verdict(tp, top, grades, grading.failures, unsupported, min_grade=tau, k=k,
                                     required=required)
                    outcome_of, best_grade, best_passage = result.outcome, result.best_grade, result.best_passage
                elif rows:  # every pair graded: the first passage of the highest grade, as verdict() keeps it
                    position = at[column]
                    best_grade = cast("int", grade_rows[rows[position]][column])
                    best_passage = top[position]
                    outcome_of = "answered" if best_grade >= tau else missed
                else:
                    outcome_of, best_grade, best_passage = missed, None, None
                reason = passage = None
                if best_passage is not None and not secret:
                    reason = memo.get(best_passage, _UNSEEN)
                    if reason is _UNSEEN:
                        held = texts.get(best_passage)
                        raw = naming_the_gold(answers.get((best_passage, tid)), tp.gold_answers,
                                              held.text if held is not None else None)
                        reason = memo[best_passage] = shorten(raw, REPORT_REASON_CHARS) if raw is not None else None
                    passage = passage_texts.get(best_passage, _UNSEEN)
                    if passage is _UNSEEN:
                        held = texts.get(best_passage)
                        passage = passage_texts[best_passage] = (
                            shorten(held.text, PASSAGE_CHARS) if held is not None else None)
                append(TestPointOutcome(
                    run=name, query_id=qid, test_point_id=shown, kind=kind, required=required, text=text,
                    outcome=outcome_of, best_grade=best_grade, best_passage=best_passage, reason=reason,
                    best_passage_text=passage,
                ))
    return found


def grade_counts(tops: TopGrades, run: str) -> dict[str, int]:
    """How often each grade occurs over a run's top-k passages and the scored test points of their
    queries (``"failed"``: pairs that could not be graded; test points the grader cannot grade are left out)."""
    return tops.grade_counts(run)


def fallback_counts(inputs: ExamInputs, outcome: SessionOutcome, k: int,
                    runs: Sequence[str]) -> dict[str, dict[str, int]]:
    """run -> query -> how many pairs of the run's top-k passages and the query's scored test points
    have a grade that a fallback rule read (the pairs :func:`grade_counts` counts, flagged)."""
    flagged = outcome.grading.fallbacks
    if not flagged:
        return {}
    by_passage: dict[str, set[str]] = {}
    for pid, tid in flagged:
        by_passage.setdefault(pid, set()).add(tid)
    points: dict[str, set[str]] = {}
    for bank in outcome.banks:
        points.setdefault(bank.query.id, set()).update(
            tp.id for tp in bank.test_points if tp.id not in outcome.grading.unsupported)
    counts: dict[str, dict[str, int]] = {}
    for run in runs:
        ranked = inputs.data.runs[run]
        for qid, tids in points.items():
            n = sum(len(by_passage[pid] & tids) for pid in ranked.top_k(qid, k) if pid in by_passage)
            if n:
                counts.setdefault(run, {})[qid] = n
    return counts
