"""The agreement feature's hook implementations: its section and its analysis (``analyze agreement``, pytest's
``--exam-analysis agreement``).

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py). The
section keeps the place documents and views have always shown it in: after the built-in ones (the significance
feature places its section before it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Analysis, Registry, Section


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register("agreement", "exam_harness.features.agreement.section:SECTION",
                      "grades against human judgments: Cohen's kappa, the min-answers views (--min-answers), direct "
                      "grades")


@hookimpl(tryfirst=True)
def pytest_exam_register_analyses(registry: Registry[Analysis]) -> None:
    # before edit-impact: where ``analyze --help`` has always listed it
    registry.register("agreement", "exam_harness.features.agreement.analysis:ANALYSIS", "agreement",
                      before="edit-impact")
