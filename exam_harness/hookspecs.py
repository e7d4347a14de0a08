"""Hook specifications of exam-harness, added to pytest's plugin manager in ``pytest_addhooks``.

Implement them in a conftest.py or in a package registered under the ``pytest11`` entry point.
Every hook is called by the exam session object (``exam_harness.session.ExamSession``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from exam_harness.graders.registry import GraderRegistry
    from exam_harness.grading import GradingOutcome
    from exam_harness.models import ExamData, QueryBank
    from exam_harness.report.schema import ExamReport
    from exam_harness.session import ExamSession


@pytest.hookspec
def pytest_exam_register_graders(registry: GraderRegistry) -> None:
    """Add grader factories to ``registry`` with ``registry.register(name, factory_or_"module:attr")``.

    Called once per session, before the grader named by ``--exam-grader`` is created. A factory
    takes a :class:`exam_harness.graders.base.GraderConfig` and returns a
    :class:`exam_harness.graders.base.Grader`.
    """


@pytest.hookspec(firstresult=True)
def pytest_exam_load_bank(path: Path, config: pytest.Config) -> list[QueryBank] | None:
    """Load a bank file of a format exam-harness does not know; return ``None`` to pass.

    Called by the collector for every file under the bank paths; the first non-``None`` result
    wins and the built-in loaders run only when every implementation returned ``None``.
    """


@pytest.hookspec(firstresult=True)
def pytest_exam_load_runs(paths: list[Path], config: pytest.Config) -> ExamData | None:
    """Load the runs (systems' outputs) from ``paths``; return ``None`` to use the built-in loaders.

    Called once per session when the exam plan is built, before grading.
    """


@pytest.hookspec
def pytest_exam_grading_finished(session: ExamSession, outcome: GradingOutcome) -> None:
    """Called after the grading pass, before any exam case runs, with every grade and failure."""


@pytest.hookspec
def pytest_exam_report(session: ExamSession, report: ExamReport) -> None:
    """Render or write ``report``; called at session finish by the process that writes reports.

    The built-in reporters (rich leaderboard, JSON, qrels) implement this hook too; add your own to
    publish scores elsewhere (a dashboard, a database, a PR comment).
    """
