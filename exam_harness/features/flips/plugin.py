"""The flips feature's hook implementations: its section and its table in ``exam-harness compare``.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (pluggy calls the latest
registered plugin first; both front ends register the features before any other plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from rich.console import RenderableType

    from exam_harness.api import ExamReport, Registry, Section


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    # before "correlations": where documents and views have always shown it
    registry.register("flips", "exam_harness.features.flips.section:SECTION",
                      "test points that flipped against the kept report (--exam-compare)", before="correlations")


@hookimpl(tryfirst=True)
def pytest_exam_compare_tables(old: ExamReport, new: ExamReport, title_suffix: str,
                               limit: int | None) -> list[RenderableType] | None:
    from exam_harness.features.flips.flips import flips, flips_table

    return [flips_table(flips(old, new), title_suffix=title_suffix, limit=limit)]
