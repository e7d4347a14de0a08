"""pytest collection nodes: a bank file is a test module, a query a class, (test point, run) a case.

Node ids read like ``banks/example.yaml::q1::q1/3f2a...[bm25]``. Cases do no grading themselves:
the session grades every pair before the first case runs, and a case only reads its outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from exam_harness.errors import ExamError, InputError
from exam_harness.models import QueryBank, TestPoint
from exam_harness.stash import SESSION_KEY

if TYPE_CHECKING:
    from exam_harness.session import ExamSession

BANK_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".jsonl.gz")


class ExamMissed(Exception):
    """The run's top-k has no passage reaching the minimum grade on this test point."""


class ExamRequiredMissed(Exception):
    """A required test point (e.g. a vital nugget) was missed: this fails the case."""


class BankFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        session: ExamSession = self.config.stash[SESSION_KEY]
        try:
            banks = session.load_bank_file(self.path)
            runs = session.run_names()
        except ExamError as exc:
            # Collected into one usage error after collection: no traceback, exit code 4.
            if isinstance(exc, InputError):
                exc = exc.relative_to(self.config.invocation_params.dir)
            session.input_errors.append(str(exc))
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
                yield ExamCase.from_parent(
                    self, name=f"{test_point.id}[{run}]", bank=self.bank, test_point=test_point, run=run
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

    def setup(self) -> None:
        session: ExamSession = self.config.stash[SESSION_KEY]
        problem = session.case_problem(self)
        if problem is not None:
            kind, message = problem
            if kind == "skip":
                pytest.skip(message)
            # No traceback: formatting one per case would cost minutes when a server is down.
            pytest.fail(message, pytrace=False)

    def runtest(self) -> None:
        session: ExamSession = self.config.stash[SESSION_KEY]
        result = session.case_result(self)
        self.user_properties.append(("exam_best_grade", result.best_grade))
        self.user_properties.append(("exam_passage", result.best_passage))
        if not result.answered:
            cls = ExamRequiredMissed if self.test_point.required else ExamMissed
            raise cls(result.describe())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (ExamMissed, ExamRequiredMissed)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return str(self.path), None, f"{self.test_point.kind} {self.test_point.id} [{self.run}]"


def is_bank_path(path: str) -> bool:
    return path.endswith(BANK_SUFFIXES)

