"""The plain inputs of an exam, used by the pytest plugin and the command line alike.

:class:`ExamInputs` loads bank files and run-side files through the format registries (once each),
checks that a test point id means one text across bank files, and knows what must stay secret.
:class:`ExamView` is the exam as scoring sees it: per query its test points (from banks, or from
the recorded grades of a Workbench file), the judged passages that join the pool, and the texts.

"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from exam_harness.core.answers import CitedAnswer
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.core.json_values import EMPTY
from exam_harness.core.models import ExamData, QueryBank, TestPoint
from exam_harness.core.paths import shown_path
from exam_harness.core.redaction import Redactor
from exam_harness.core.registry import Registry
from exam_harness.io.formats import BankFormat, RunFormat
from exam_harness.io.workbench import DIRECT_GRADE_SUFFIX
from exam_harness.measures.context import ScoringInput

Pair = tuple[str, str]  # (passage id, test point id)


@dataclass(frozen=True)
class SuppliedInputs:
    """Run-side files an option of a feature names (hook ``pytest_exam_inputs``), read among the runs, and the banks
    they bring, which replace the bank files' banks of their topics (TREC RAG's assignment files: the nuggets they
    assigned). ``check`` refuses a file that is not of its kind before anything is read; ``what`` names the banks
    where they replace a bank file's topics ("the nuggets the --exam-assignments files assigned")."""

    option: str  # the option naming them, as the front end spells it
    paths: tuple[Path, ...]
    check: Callable[[Path], None]
    banks: Callable[[Sequence[Path]], list[QueryBank]]
    what: str


class ExamInputs:
    """Banks and runs of one exam, each file loaded once; ``redact`` hides every bank's text."""

    def __init__(
        self, bank_formats: Registry[BankFormat], run_formats: Registry[RunFormat], *, redact: bool = False
    ) -> None:
        self.bank_formats = bank_formats
        self.run_formats = run_formats
        self.redact_all = redact
        self.banks: dict[Path, list[QueryBank]] = {}
        self._sources: dict[str, tuple[str, Path]] = {}  # test point id -> (text, first file)
        self._redactor: tuple[int, Redactor] | None = None
        self._data: ExamData | None = None
        self.responses: dict[str, dict[str, str]] = {}
        self.answers: dict[str, dict[str, CitedAnswer]] = {}  # run -> query -> cited answer (TREC RAG files)
        self.run_files: list[Path] = []
        self.warnings: list[str] = []  # what the run-side files warned about as they were read (said on stderr too)
        self.extra_runs: list[Path] = []  # run folders beside the configured ones (a live system's answers)
        # what features supply beside the runs and banks the front end was given (hook pytest_exam_inputs)
        self.supplied: list[SuppliedInputs] = []
        # what the front end was given: evaluate's run files and --bank files (pytest's --exam-runs, bank folders)
        self.given_runs: tuple[Path, ...] = ()
        self.given_banks: tuple[Path, ...] = ()
        self.notices: list[str] = []  # what reading the banks said on stderr ("warning: ..."), kept for pytest
        self._supplied_banks: list[QueryBank] | None = None
        self.system_names: Callable[[], list[str]] = list  # declared systems: runs before they are recorded

    # -- banks ---------------------------------------------------------------------------------
    def load_bank_file(self, path: Path) -> list[QueryBank]:
        """The banks of one file (loaded once), through the format that claims it."""
        if path not in self.banks:
            from exam_harness.core.display import collecting_notices
            from exam_harness.io.banks import load_bank

            with collecting_notices(self.notices):
                banks = load_bank(path, self.bank_formats)
            self._check_unique_ids(path, banks)
            self.banks[path] = list(banks)
        return self.banks[path]

    def load_banks(self, paths: Iterable[Path]) -> list[QueryBank]:
        """Every bank under ``paths`` (files, or folders searched recursively)."""
        from exam_harness.io.banks import iter_bank_files

        return [bank for path in iter_bank_files(paths, self.bank_formats) for bank in self.load_bank_file(path)]

    def _check_unique_ids(self, path: Path, banks: Sequence[QueryBank]) -> None:
        """One test point id, one text: grades are looked up by id, so a second text would silently
        read the first one's grades."""
        for bank in banks:
            for tp in bank.test_points:
                known = self._sources.setdefault(tp.id, (tp.text, path))
                if known[0] != tp.text:
                    raise InputError(
                        f"test point id {tp.id!r} is also defined in {shown_path(known[1])} with another text",
                        path=path, line=_line_of(path, tp.id) or _line_of(path, tp.text), field="id", value=tp.id,
                        expected="an id used by one test point text across all bank files",
                    )

    # -- runs ----------------------------------------------------------------------------------
    def supply(self, supplied: SuppliedInputs) -> None:
        """Add files a feature's option names (read among the runs) and the banks they bring
        (:class:`SuppliedInputs`)."""
        self.supplied.append(supplied)

    @property
    def supplied_files(self) -> list[Path]:
        """Every file the features supplied, in the order supplied."""
        return [path for supplied in self.supplied for path in supplied.paths]

    def load_runs(self, paths: Sequence[Path]) -> ExamData:
        """Read every run-side file under ``paths`` (once), and the files features supplied; see ``io/runs.py`` for
        the recognised files."""
        if self._data is None:
            from exam_harness.io.runs import load_runs

            self._check_supplied()
            extra = [p for p in [*self.extra_runs, *self.supplied_files] if p not in paths]
            loaded = load_runs([*paths, *extra], self.run_formats)
            self._data, self.responses, self.run_files = loaded.data, loaded.responses, loaded.files
            self.warnings = loaded.warnings
            self.answers = loaded.answers
        return self._data

    def _check_supplied(self) -> None:
        for supplied in self.supplied:
            for path in supplied.paths:
                supplied.check(path)

    def supplied_banks(self) -> list[QueryBank]:
        """The banks the supplied files bring (read once): what a session given such files scores on their topics."""
        if self._supplied_banks is None:
            self._check_supplied()
            self._supplied_banks = [bank for supplied in self.supplied if supplied.paths
                                    for bank in supplied.banks(supplied.paths)]
        return self._supplied_banks

    def supplied_what(self) -> str:
        """What the supplied banks are, for a message where they replace a bank file's topics."""
        return " and ".join(supplied.what for supplied in self.supplied if supplied.paths)

    def forget_runs(self) -> None:
        """Read the run files again on the next :meth:`load_runs` (systems were recorded into them)."""
        self._data = None

    @property
    def data(self) -> ExamData:
        if self._data is None:
            raise ConfigError("the runs are not loaded yet")
        return self._data

    def run_names(self, paths: Sequence[Path]) -> list[str]:
        names = sorted({*self.load_runs(paths).runs, *self.system_names()})
        if not names:
            where = ", ".join(str(p) for p in paths) or "(no runs folder)"
            raise ConfigError(
                f"no runs to examine in {where}; put TREC run files, *.responses.jsonl or Workbench files "
                "there, declare a system in conftest.py (docs/live-systems.md), or pass --exam-runs PATH"
            )
        return names

    # -- secrets -------------------------------------------------------------------------------
    @property
    def redacted(self) -> bool:
        """Whether outputs must hide bank text: ``redact``, or any loaded bank marked secret."""
        return self.redact_all or any(b.secret for banks in self.banks.values() for b in banks)

    def redact(self, text: str) -> str:
        """``text`` with every test point text, gold answer and choice of the banks replaced, in any of
        the forms a message may echo them in (see :mod:`exam_harness.core.redaction`)."""
        if not self.redacted:
            return text
        secrets = tuple(secret for banks in self.banks.values() for bank in banks for tp in bank.test_points
                        for secret in (tp.text, *tp.gold_answers, *tp.choices))
        key = hash(secrets)  # banks load lazily: rebuild when they changed
        if self._redactor is None or self._redactor[0] != key:
            self._redactor = (key, Redactor(secrets))
        return self._redactor[1](text)


def _line_of(path: Path, needle: str) -> int | None:
    """The first line of a text bank file that contains ``needle`` (for pointing at a duplicate)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                if needle in line:
                    return lineno
    except OSError:
        return None
    return None


# --- the exam as scoring sees it ------------------------------------------------------------------


DIRECT_ID_END = "/" + DIRECT_GRADE_SUFFIX


def _importance(value: str | None) -> str:
    """A nugget's TREC RAG importance as the track's scores read it: none given is vital (nuggetizer's default)."""
    return "vital" if value is None else value


def is_direct_id(test_point_id: str) -> bool:
    """Whether an id is the pseudo test point of direct (query-level) grades, never a real test point."""
    return test_point_id.endswith(DIRECT_ID_END)


@dataclass
class ExamView:
    """Per query the test points (bank order, facets merged), the passages that join the pool, the texts.

    ``pooled``: query -> passages judged for it or mentioned by the grades the view was built with
    (recorded grades, or every graded passage); with the ``judged`` pool policy they join every run's
    top-k in the pool.
    ``points``: test point id -> its model when a bank gave texts (empty on a bank-less replay).
    """

    data: ExamData
    test_points: dict[str, list[str]]
    pooled: dict[str, list[str]]
    points: dict[str, TestPoint] = field(default_factory=dict)
    query_texts: dict[str, str] = field(default_factory=dict)
    banks: list[QueryBank] = field(default_factory=list)

    @property
    def queries(self) -> list[str]:
        return [q for q, tps in self.test_points.items() if tps]

    def query_of(self) -> dict[str, str]:
        """test point id -> query id."""
        return {tid: qid for qid, tids in self.test_points.items() for tid in tids}

    def text_of(self, test_point_id: str) -> str:
        point = self.points.get(test_point_id)
        return point.text if point is not None else ""

    def without_secrets(self, secret: Callable[[str], bool]) -> ExamView:
        """The view with the text, gold answers, choices and metadata (which may quote them) of each test point
        ``secret`` picks replaced (text: ``[secret test point]``), for outputs that quote test points."""
        points = {tid: tp.model_copy(update={"text": "[secret test point]", "gold_answers": (), "choices": (),
                                             "metadata": EMPTY})
                  if secret(tid) else tp for tid, tp in self.points.items()}
        return replace(self, points=points, banks=[])

    def scoring_input(
        self,
        grades: Mapping[Pair, int],
        *,
        responses: Mapping[str, Mapping[str, str]] | None = None,
        sort_queries: bool = False,
        all_nuggets: bool = False,
        only: Iterable[str] | None = None,
        failed: Collection[Pair] = frozenset(),
        tie_order: str = "score",
    ) -> ScoringInput:
        """The measures' input (``only``: those queries). Nuggets are the bank's nugget test points; with
        ``all_nuggets`` (nugget F asked for a bank without nuggets) every test point counts as a nugget.
        ``tie_order`` orders the runs for trec_eval measures: ``score`` as trec_eval does
        (:meth:`Run.trec_order`), ``rank`` by the rank column."""
        queries = sorted(self.queries) if sort_queries else self.queries
        if only is not None:
            wanted = set(only)
            queries = [q for q in queries if q in wanted]
        nuggets: dict[str, dict[str, float]] = {}
        importance: dict[str, dict[str, str]] = {}
        for q in queries:
            weights = {t: self.points[t].weight for t in self.test_points[q]
                       if t in self.points and self.points[t].kind == "nugget"}
            if not weights and all_nuggets:
                weights = {t: (self.points[t].weight if t in self.points else 1.0) for t in self.test_points[q]}
            if weights:
                nuggets[q] = weights
            # nuggetizer's reading: a nugget without an importance is vital, any string given ("" too) is kept
            kinds: dict[str, str] = {t: _importance(self.points[t].importance) for t in weights if t in self.points}
            if any(self.points[t].importance is not None for t in kinds):
                importance[q] = kinds
        by_score = tie_order == "score"
        rankings: dict[str, dict[str, list[str]]] = {}
        trec_rankings: dict[str, dict[str, list[str]]] = {}
        for name, run in sorted(self.data.runs.items()):
            scored = by_score and run.has_scores()  # once per run, not per query
            orders = rankings[name] = {}
            trec_orders = trec_rankings[name] = {}
            for q in queries:
                orders[q], trec_orders[q] = run.orders(q, scored=scored)
        passages = self.data.passages
        return ScoringInput(
            queries=queries,
            test_points={q: self.test_points[q] for q in queries},
            rankings=rankings,
            trec_rankings=trec_rankings if by_score else None,
            grades=grades,
            nuggets=nuggets,
            importance=importance,
            judged={q: self.pooled.get(q, []) for q in queries},
            responses=responses or {},
            passage_text=lambda pid: passages[pid].text if pid in passages else None,
            failed=failed,
            generated=frozenset(name for name, run in self.data.runs.items() if run.generated),
        )


def judged_passages(data: ExamData) -> dict[str, dict[str, None]]:
    """query -> passages judged for it, in first-seen order."""
    return {qid: dict.fromkeys(judged) for qid, judged in data.judgments.items()}


def known_pool(data: ExamData) -> dict[str, dict[str, None]]:
    """query -> passages judged or ranked (at any rank) for it: where a recorded grade's query is found."""
    pool = judged_passages(data)
    for run in data.runs.values():
        for qid, ranked in run.rankings.items():
            target = pool.setdefault(qid, {})
            for r in ranked:
                target.setdefault(r.passage_id, None)
    return pool


def query_for(pid: str, tid: str, queries_of_passage: Mapping[str, list[str]], known: set[str]) -> str:
    """The query a recorded grade of ``tid`` on passage ``pid`` belongs to."""
    candidates = queries_of_passage.get(pid, [])
    if len(candidates) == 1:
        return candidates[0]
    prefixed = [q for q in (candidates or known) if tid.startswith(q + "/")]
    if len(prefixed) == 1:
        return prefixed[0]
    head = tid.split("/", 1)[0]
    if not candidates and "/" in tid:
        return head  # graded for a query nobody judged or ranked: the id rule names the query
    raise InputError(
        f"cannot tell which query test point {tid!r} (graded on passage {pid!r}) belongs to",
        field="test_point_id",
        value=tid,
        expected="ids of the form query_id/md5(text), or a bank (--bank) that lists the test point",
    )


def queries_of_passages(data: ExamData) -> tuple[dict[str, list[str]], set[str]]:
    """passage -> the queries it is judged or ranked for; and every such query."""
    pool = known_pool(data)
    queries_of: dict[str, list[str]] = {}
    for qid, pids in pool.items():
        for pid in pids:
            queries_of.setdefault(pid, []).append(qid)
    return queries_of, set(pool)


def view_from_recorded(data: ExamData, grades: Iterable[Pair]) -> ExamView:
    """An exam whose test points are those the recorded grades mention (no bank needed)."""
    judged = judged_passages(data)
    queries_of, known = queries_of_passages(data)
    test_points: dict[str, dict[str, None]] = {}
    tid_query: dict[str, str] = {}
    for pid, tid in grades:
        qid = tid_query.get(tid)
        if qid is None:
            qid = tid_query[tid] = query_for(pid, tid, queries_of, known)
            test_points.setdefault(qid, {})[tid] = None
        judged.setdefault(qid, {}).setdefault(pid, None)
    return ExamView(
        data=data,
        test_points={q: list(t) for q, t in test_points.items()},
        pooled={q: list(p) for q, p in judged.items() if q in test_points},
    )


def view_from_banks(
    data: ExamData, banks: Sequence[QueryBank], grades: Iterable[Pair] = (), *, exclude: Mapping[str, str] | None = None
) -> ExamView:
    """An exam whose test points are the banks' (facets merged per query; ``exclude`` leaves test
    points out, e.g. those the grader cannot grade); passages that ``grades`` mention for a bank's
    test point join its query's judged passages."""
    if not banks:
        raise InputError("the bank file holds no query banks", field="bank", expected="at least one query")
    judged = judged_passages(data)
    test_points: dict[str, list[str]] = {}
    points: dict[str, TestPoint] = {}
    texts: dict[str, str] = {}
    for bank in banks:
        qid = bank.query.id
        texts.setdefault(qid, bank.query.text)
        target = test_points.setdefault(qid, [])
        for tp in bank.test_points:
            if tp.id not in points and not (exclude and tp.id in exclude):
                target.append(tp.id)
                points[tp.id] = tp
    tid_query = {tid: qid for qid, tids in test_points.items() for tid in tids}
    for pid, tid in grades:
        graded_query = tid_query.get(tid)
        if graded_query is not None:
            judged.setdefault(graded_query, {}).setdefault(pid, None)
    return ExamView(
        data=data,
        test_points=test_points,
        pooled={q: list(judged.get(q, {})) for q in test_points},
        points=points,
        query_texts=texts,
        banks=list(banks),
    )
