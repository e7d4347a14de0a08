"""The judge-variance feature's hook implementations: its section and the gate figure of ``@MofK``.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py). The
section keeps the place documents and views have always shown it in (``before="correlations"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import GateFigure, Registry, Section

_HERE = "exam_harness.features.judge_variance"


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register("judge-variance", f"{_HERE}.section:SECTION",
                      "a judge asked K times per pair: spreads, flaky cases, variance shares (docs/judge-variance.md)",
                      before="correlations")


@hookimpl(tryfirst=True)
def pytest_exam_register_gate_figures(registry: Registry[GateFigure]) -> None:
    from exam_harness.api import HOLDING_FIGURE

    registry.register(HOLDING_FIGURE, f"{_HERE}.figures:FIGURE",
                      "EXAM-Cover with verdicts holding in M of K judge samples (a threshold's @MofK)")
