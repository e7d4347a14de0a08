"""Collection: a bank file is a test module, a query a class, (test point, run) a case.

Node ids read like ``banks/example.yaml::q1::q1/3f2a...[bm25]``. A file under a bank folder (or
named on the command line) is a bank when a registered bank format claims it, so a plugin's format
is asked before any file is dismissed. Cases grade nothing: the grading plugin grades every pair
before the first case runs, and a case reads its verdict from the graded exam.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from exam_harness.errors import ConfigError, ExamError, InputError
from exam_harness.io.formats import claiming
from exam_harness.io.textio import is_hidden
from exam_harness.models import QueryBank, TestPoint
from exam_harness.pytest_plugins.state import GRADED_KEY, GradedExam, setup_of


class ExamMissed(Exception):
    """The run's top-k has no passage reaching the minimum grade on this test point."""


class ExamRequiredMissed(Exception):
    """A required test point (e.g. a vital nugget) was missed: this fails the case."""


def bank_paths(config: pytest.Config) -> list[Path]:
    """The configured bank folders and files (ini ``exam_banks``), else ``banks/`` when it exists."""
    configured = [Path(p) for p in config.getini("exam_banks")]
    if configured:
        return configured
    default = Path(config.rootpath) / "banks"
    return [default] if default.is_dir() else []


class BankFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        setup = setup_of(self.config)
        inputs = setup.exam_inputs(self.config)
        try:
            banks = inputs.load_bank_file(self.path)
            runs = inputs.run_names(list(setup.options.runs))
        except ExamError as exc:
            # Collected into one usage error after collection: no traceback, exit code 4.
            if isinstance(exc, InputError):
                exc = exc.relative_to(self.config.invocation_params.dir)
            setup.input_errors.append(str(exc))
            return
        for bank in banks:
            yield QueryNode.from_parent(self, name=bank.key, bank=bank, runs=runs)


class QueryNode(pytest.Collector):
    def __init__(self, *, bank: QueryBank, runs: list[str], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.bank = bank
        self.runs = runs

    def collect(self) -> Iterator[pytest.Item]:
        for test_point in self.bank.test_points:
            for run in self.runs:
                name = f"{test_point.id}[{run}]"
                # The id given as a string is parsed the way pytest parses ids it reads back (--lf, -k
                # node ids): the run is the parameter, as for a parametrized test.
                yield ExamCase.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}", bank=self.bank,
                                           test_point=test_point, run=run)


@dataclass(frozen=True)
class Verdict:
    """How one run did on one test point: its best grade in the top-k against tau."""

    answered: bool
    best_grade: int | None
    best_passage: str | None
    min_grade: int
    k: int
    retrieved: int

    def describe(self) -> str:
        if self.retrieved == 0:
            return "missed: the run returned no passage for this query"
        return (
            f"missed: best grade {self.best_grade} (passage {self.best_passage}) < min grade {self.min_grade} "
            f"in the run's top {self.k}"
        )


class ExamCase(pytest.Item):
    """One test point put to one run."""

    def __init__(self, *, bank: QueryBank, test_point: TestPoint, run: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.bank = bank
        self.test_point = test_point
        self.run = run
        self.user_properties.append(("exam_run", run))
        self.user_properties.append(("exam_test_point", test_point.id))
        if test_point.required:
            self.add_marker("exam_required")

    def _graded(self) -> GradedExam:
        graded = self.config.stash.get(GRADED_KEY, None)
        if graded is None:
            raise ConfigError("exam cases ran before the grading pass; is another plugin reordering the session?")
        return graded

    def _top_k(self, graded: GradedExam) -> list[str]:
        return setup_of(self.config).exam_inputs(self.config).data.runs[self.run].top_k(
            self.bank.query.id, graded.plan.k)

    def setup(self) -> None:
        graded = self._graded()
        reason = graded.grading.unsupported.get(self.test_point.id)
        if reason is not None:
            pytest.skip(f"grader {graded.plan.grader.name!r} cannot grade this test point: {reason}")
        failures = graded.grading.failures
        errors = [f"{pid}: {failures[(pid, self.test_point.id)]}" for pid in self._top_k(graded)
                  if (pid, self.test_point.id) in failures]
        if errors:
            shown = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
            message = f"grading failed for {len(errors)} passage(s) of this run: {shown}"
            # No traceback: formatting one per case would cost minutes when a server is down.
            pytest.fail(setup_of(self.config).exam_inputs(self.config).redact(message), pytrace=False)

    def verdict(self) -> Verdict:
        graded = self._graded()
        top = self._top_k(graded)
        best_grade: int | None = None
        best_passage: str | None = None
        for pid in top:
            grade = graded.grading.grades.get((pid, self.test_point.id))
            if grade is not None and (best_grade is None or grade > best_grade):
                best_grade, best_passage = grade, pid
        tau = graded.plan.min_grade
        answered = best_grade is not None and best_grade >= tau
        return Verdict(answered, best_grade, best_passage, tau, graded.plan.k, len(top))

    def runtest(self) -> None:
        result = self.verdict()
        self.user_properties.append(("exam_best_grade", result.best_grade))
        self.user_properties.append(("exam_passage", result.best_passage))
        self.user_properties.append(("exam_min_grade", result.min_grade))
        if not result.answered:
            self.user_properties.append(("exam_outcome", "required-missed" if self.test_point.required else "missed"))
            cls = ExamRequiredMissed if self.test_point.required else ExamMissed
            raise cls(result.describe())
        self.user_properties.append(("exam_outcome", "answered"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, (ExamMissed, ExamRequiredMissed)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return str(self.path), None, f"{self.test_point.kind} {self.test_point.id} [{self.run}]"


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


class ExamCollector:
    """Finds bank files, turns input errors into one usage error, and keeps the collected cases."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.cases: list[ExamCase] = []

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        config = self.config
        setup = setup_of(config)
        resolved = file_path.resolve()
        named = [Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args]
        # A bank file is collected when it lies in a configured bank folder or is named on the command line.
        if not (_under(resolved, [p.resolve() for p in setup.bank_roots]) or resolved in named):
            return None
        if is_hidden(file_path) or claiming(setup.exam_inputs(config).bank_formats, file_path) is None:
            return None
        return BankFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.cases = [item for item in items if isinstance(item, ExamCase)]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        gone = {id(item) for item in items}
        self.cases = [case for case in self.cases if id(case) not in gone]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        errors = setup_of(self.config).input_errors
        if errors:
            raise pytest.UsageError("\n".join(errors))

    def collected_banks(self) -> list[QueryBank]:
        """Banks of the collected (and not deselected) cases, each query's test points in bank order."""
        wanted: dict[str, set[str]] = {}
        banks: dict[str, QueryBank] = {}
        for case in self.cases:
            wanted.setdefault(case.bank.key, set()).add(case.test_point.id)
            banks.setdefault(case.bank.key, case.bank)
        return [
            bank.model_copy(update={"test_points": tuple(tp for tp in bank.test_points if tp.id in wanted[key])})
            for key, bank in banks.items()
        ]

    def requested_bank_files(self) -> list[Path]:
        """Bank files the command line asks for, found the way the collector finds them (for the xdist
        controller, which grades before the workers collect)."""
        setup = setup_of(self.config)
        formats = setup.exam_inputs(self.config).bank_formats
        roots = [p.resolve() for p in setup.bank_roots]
        found: dict[Path, None] = {}
        for arg in self.config.args:
            path = Path(self.config.invocation_params.dir, arg.split("::")[0]).resolve()
            if path.is_file() and claiming(formats, path) is not None:
                found[path] = None
            elif path.is_dir():
                for file in sorted(path.rglob("*")):
                    if file.is_file() and not is_hidden(file) and _under(file, roots) and claiming(formats, file):
                        found[file.resolve()] = None
        return list(found)
