"""The citation-support feature's hook implementations: ``--support`` and the pass that grades the citations.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import ExamOptions, ExtraGrading, FeatureOptions, Graded


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.citation_support.options import SUPPORT

    options.add(SUPPORT)


@hookimpl(tryfirst=True)
def pytest_exam_extra_grading(options: ExamOptions, graded: Graded) -> ExtraGrading | None:
    from exam_harness.features.citation_support.options import SUPPORT

    if not options.feature(SUPPORT):
        return None
    from exam_harness.features.citation_support.grading import grade_support

    return grade_support(options, graded)
