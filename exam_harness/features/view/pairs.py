"""A test point's pairs (each passage of the run's top-k with its grade, the grade's reason and the part of the
grader that decided it), looked up in the grade cache the report names, opened read-only.

The report holds one pair per run and test point: the best passage, its grade, reason and text. The other
pairs' grades are in the grade cache, keyed by content (cache.py): the key of a pair is the grader's spec
fingerprint and the request content the grader declares, so the viewer reads the exam's inputs the report
names (``settings.banks``, ``settings.runs``, relative to the folder the session ran in), rebuilds the grader
from the registry and checks that its spec is the report's before it trusts a key. Nothing is graded and
nothing is written: a pair the cache lacks is shown as such. Where the pairs cannot be looked up (recorded
grades, no cache, the inputs moved, a grader rebuilt differently), :class:`Unavailable` says why.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from exam_harness.core.errors import ExamError
from exam_harness.core.models import GradingRequest, Query, TestPoint, readable_id
from exam_harness.results.schema import ExamReport, TestPointOutcome

if TYPE_CHECKING:
    from exam_harness.core.models import ExamData
    from exam_harness.core.registry import Registry
    from exam_harness.graders.base import Grader
    from exam_harness.graders.registry import GraderRegistry
    from exam_harness.grading.cache import GradeCache
    from exam_harness.io.formats import BankFormat, RunFormat


class Lookups(Protocol):
    """What the pairs are looked up with: the graders (to rebuild the report's) and the formats (to read its inputs),
    built-in and the plugins' (the command line's ``Registries`` is one)."""

    @property
    def graders(self) -> GraderRegistry: ...

    @property
    def bank_formats(self) -> Registry[BankFormat]: ...

    @property
    def run_formats(self) -> Registry[RunFormat]: ...


@dataclass(frozen=True)
class HostLookups:
    graders: GraderRegistry
    bank_formats: Registry[BankFormat]
    run_formats: Registry[RunFormat]


def host_lookups() -> Lookups:
    """The built-in graders and formats with those the front end's plugins register, through the hook it made active
    (core/host.py; the command line's manager while a subcommand runs: the folder's conftest.py, installed plugins);
    a feature reaches the front end's plugins only this way."""
    from exam_harness.core.host import active_hook
    from exam_harness.graders.registry import default_registry
    from exam_harness.io.formats import builtin_bank_formats, builtin_run_formats

    hook = active_hook()
    found = HostLookups(default_registry(), builtin_bank_formats(), builtin_run_formats())
    hook.pytest_exam_register_graders(registry=found.graders)
    hook.pytest_exam_register_bank_formats(registry=found.bank_formats)
    hook.pytest_exam_register_run_formats(registry=found.run_formats)
    return found


class Unavailable(Exception):
    """Why a test point's pairs cannot be looked up (the message says it to the user)."""


@dataclass(frozen=True)
class PairRow:
    """One passage of the run's top-k on the test point."""

    rank: int  # its rank in the run's top-k, from 1
    passage_id: str
    grade: int | None  # None: the cache holds no grade of the pair
    reason: str | None
    decided_by: str | None
    text: str
    best: bool  # the report's best passage of the test point


@dataclass(frozen=True)
class Pairs:
    rows: list[PairRow]  # by grade, best first (pairs without a grade last), then by rank
    note: str = ""  # what the rows leave out (pairs the cache lacks)


class PairSource(Protocol):
    """Where the viewer finds a test point's pairs (a fake in the tests)."""

    def pairs(self, outcome: TestPointOutcome) -> Pairs:
        """The pairs of the outcome's run and test point; :class:`Unavailable` when they cannot be found."""

    def deciders(self, outcomes: Sequence[TestPointOutcome]) -> dict[tuple[str, str], str]:
        """(run, test point id) -> the part of the grader that decided the best grade, for the outcomes whose
        best pair the cache holds and whose grader has parts; :class:`Unavailable` when none can be read."""


class NoPairs:
    """A document whose pairs cannot be looked up at all (an evaluation, a report of recorded grades)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def pairs(self, outcome: TestPointOutcome) -> Pairs:
        raise Unavailable(self.why)

    def deciders(self, outcomes: Sequence[TestPointOutcome]) -> dict[tuple[str, str], str]:
        raise Unavailable(self.why)


def session_root(report_path: Path, report: ExamReport, given: Path | None = None) -> Path:
    """The folder the session ran in (the report's paths are relative to it): ``given``, else the first of the
    current folder, the folder above the report's (``reports/`` lies in the project) and the report's own folder
    that holds the report's runs and its grade cache, else the first that holds the runs (a project with runs of
    the same names, such as a copy of the example, is not taken for the session's when its cache is elsewhere)."""
    if given is not None:
        return given
    candidates = [Path.cwd(), report_path.resolve().parent.parent, report_path.resolve().parent]
    named = [Path(p) for p in report.settings.runs]
    cache = report.cache.path
    holding = [f for f in candidates if named and all((f / p).exists() for p in named)]
    with_cache = [f for f in holding if cache is not None and (Path(cache).is_absolute() or (f / cache).exists())]
    return next(iter([*with_cache, *holding]), candidates[0])


class CachedPairs:
    """The pairs of a pytest report from its grade cache, read-only; loads the inputs on first use."""

    def __init__(self, report: ExamReport, root: Path, lookups: Lookups) -> None:
        self.report = report
        self.root = root
        self.lookups = lookups

    # -- what is loaded once -------------------------------------------------------------------------------

    @functools.cached_property
    def grader(self) -> Grader:
        """The report's grader rebuilt from the registry, with the spec the report names (its fingerprint
        makes every cache key)."""
        from exam_harness.graders.base import GraderConfig

        spec = self.report.settings.grader
        if spec.name == "recorded":
            raise Unavailable("the report's grades are recorded ones, replayed from the run files: they are in no "
                              "grade cache")
        if spec.name not in self.lookups.graders:
            raise Unavailable(f"grader {spec.name!r} is not registered here (a plugin's? run exam-harness view "
                              "in the project whose conftest.py registers it)")
        tried: list[str] = []
        for model in dict.fromkeys([None, spec.model]):
            try:
                grader = self.lookups.graders.create(spec.name, GraderConfig(model=model))
            except ExamError as exc:
                tried.append(str(exc))
                continue
            if grader.spec().fingerprint() == spec.fingerprint():
                return grader
            tried.append(_differences(grader.spec().model_dump(), spec.model_dump()))
        raise Unavailable(f"grader {spec.name!r} rebuilt with its default options is not the report's "
                          f"({'; '.join(tried)}): its cache keys would not be the session's")

    @functools.cached_property
    def cache(self) -> GradeCache:
        from exam_harness.grading.cache import GradeCache

        named = self.report.cache.path
        if named is None:
            raise Unavailable("the session kept its grades in memory only (no grade cache)")
        path = Path(named) if Path(named).is_absolute() else self.root / named
        if not path.exists():
            raise Unavailable(f"the grade cache {path} the report names is not there (the session ran in another "
                              "folder? give it with --root)")
        try:
            return GradeCache(path, read_only=True, notify=lambda _: None)  # a reader's notices are its own
        except ExamError as exc:
            raise Unavailable(str(exc)) from None

    @functools.cached_property
    def inputs(self) -> tuple[ExamData, dict[str, tuple[Query, TestPoint, bool]]]:
        """The runs and passages, and each test point by the id the report shows: its query, the point and
        whether its bank is secret."""
        from exam_harness.exam.inputs import ExamInputs

        settings = self.report.settings
        missing = [p for p in [*settings.runs, *settings.banks] if not (self.root / p).exists()]
        if missing:
            raise Unavailable(f"the report's inputs are not under {self.root}: {', '.join(missing)} (give the "
                              "folder the session ran in with --root)")
        loader = ExamInputs(self.lookups.bank_formats, self.lookups.run_formats)
        try:
            data = loader.load_runs([self.root / p for p in settings.runs])
            banks = [b for p in settings.banks for b in loader.load_bank_file(self.root / p)]
        except ExamError as exc:
            raise Unavailable(f"the report's inputs cannot be read: {exc}") from None
        points: dict[str, tuple[Query, TestPoint, bool]] = {}
        for bank in banks:
            for tp in bank.test_points:
                entry = (bank.query, tp, bank.secret)
                points[tp.id] = entry
                points[readable_id(tp.id, tp.query_id, None if bank.secret else tp.text, tp.facet_id)] = entry
        return data, points

    # -- lookups -------------------------------------------------------------------------------------------

    def _requests(self, outcome: TestPointOutcome) -> tuple[list[GradingRequest], bool]:
        data, points = self.inputs
        found = points.get(outcome.test_point_id)
        if found is None:
            raise Unavailable(f"test point {outcome.test_point_id} is in none of the report's banks now (edited "
                              "since?)")
        query, point, secret = found
        run = data.runs.get(outcome.run)
        if run is None:
            raise Unavailable(f"run {outcome.run} is not among the report's runs now")
        reason = self.grader.supports(point)
        if reason is not None:
            raise Unavailable(f"the grader grades no such test point: {reason}")
        requests = [GradingRequest(query, point, data.passages[pid]) for pid in run.top_k(query.id,
                                                                                          self.report.settings.k)
                    if pid in data.passages]
        return requests, secret

    def _keys(self, requests: Iterable[GradingRequest]) -> list[str]:
        from exam_harness.grading.cache import cache_key

        fingerprint = self.grader.spec().fingerprint()
        return [cache_key(fingerprint, self.grader.cache_payload(r)) for r in requests]

    def pairs(self, outcome: TestPointOutcome) -> Pairs:
        from exam_harness.graders.answer_key import naming_the_gold

        requests, secret = self._requests(outcome)
        keys = self._keys(requests)
        grades = self.cache.get_grades(keys, max_grade=self.report.settings.grader.max_grade)
        rows = []
        for rank, (request, key) in enumerate(zip(requests, keys), 1):
            cached = grades.get(key)
            answer = cached.answer if cached is not None else None
            shown = answer if secret else naming_the_gold(answer, request.test_point.gold_answers,
                                                          request.passage.text)
            rows.append(PairRow(rank, request.passage.id, cached.grade if cached is not None else None, shown,
                                self.grader.decided_by(answer) if cached is not None else None,
                                "" if secret else request.passage.text, request.passage.id == outcome.best_passage))
        rows.sort(key=lambda r: (r.grade is None, -(r.grade or 0), r.rank))
        lacking = sum(r.grade is None for r in rows)
        note = f"{lacking} of {len(rows)} pairs are not in the grade cache" if lacking else ""
        return Pairs(rows, note)

    def deciders(self, outcomes: Sequence[TestPointOutcome]) -> dict[tuple[str, str], str]:
        from exam_harness.graders.base import Grader

        if type(self.grader).decided_by is Grader.decided_by:
            raise Unavailable(f"grader {self.grader.name!r} decides by one part: there is no 'decided by' to filter on")
        data, points = self.inputs
        wanted: dict[str, list[tuple[str, str]]] = {}  # a key -> every case whose best pair it is (runs share)
        for o in outcomes:
            found = points.get(o.test_point_id)
            if found is None or o.best_passage is None or o.best_passage not in data.passages:
                continue
            query, point, _ = found
            if self.grader.supports(point) is not None:
                continue
            key = self._keys([GradingRequest(query, point, data.passages[o.best_passage])])[0]
            wanted.setdefault(key, []).append((o.run, o.test_point_id))
        grades = self.cache.get_grades(wanted, max_grade=self.report.settings.grader.max_grade)
        parts: dict[tuple[str, str], str] = {}
        for key, grade in grades.items():
            part = self.grader.decided_by(grade.answer)
            if part is not None:
                parts.update(dict.fromkeys(wanted[key], part))
        return parts


def _differences(rebuilt: Mapping[str, object], reported: Mapping[str, object]) -> str:
    keys = sorted({*rebuilt, *reported})
    changed = [f"{k}: {rebuilt.get(k)!r} here, {reported.get(k)!r} in the report" for k in keys
               if rebuilt.get(k) != reported.get(k)]
    return "; ".join(changed)[:400]


def pair_source(report_path: Path, document: object, root: Path | None, lookups: Lookups) -> PairSource:
    """The pairs of ``document``: from its grade cache for a pytest report, else none (and why)."""
    if not isinstance(document, ExamReport):
        return NoPairs("an evaluation document holds no test point outcomes: its pairs are in the files it "
                       "evaluated (exam-harness analyze verify shows them)")
    return CachedPairs(document, session_root(report_path, document, root), lookups)
