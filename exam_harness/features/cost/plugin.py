"""The cost feature's hook implementations: its section and the verdict's budget check.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (pluggy calls the latest
registered plugin first; both front ends register the features before any other plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import EvaluationReport, ExamReport, GateResult, Registry, Section


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    # before "judge-variance": where documents and views have always shown it
    registry.register("cost", "exam_harness.features.cost.section:SECTION", "an LLM grader's tokens and cost "
                      "(docs/cost.md)", before="judge-variance")


@hookimpl(tryfirst=True)
def pytest_exam_verdict_checks(document: ExamReport | EvaluationReport) -> list[GateResult] | None:
    if "cost" not in document.sections:
        return None
    from exam_harness.features.cost.budget import budget_results

    return budget_results(document.sections["cost"])  # max_cost passed all the same
