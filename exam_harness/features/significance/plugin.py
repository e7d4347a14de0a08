"""The significance feature's hook implementations: its section and the scoring input it reads.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (pluggy calls the latest
registered plugin first; both front ends register the features before any other plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import ExamOptions, Registry, ScoringFront, ScoringInputs, Section


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    # before "agreement": where evaluate's documents and views have always shown it
    registry.register("significance", "exam_harness.features.significance.section:SECTION",
                      "paired significance tests of every run against a baseline run (--baseline)", before="agreement")


@hookimpl(tryfirst=True)
def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    # evaluate's document alone: a pytest session gates on the baseline (exam-baseline) and shows the comparisons
    # in its gates' summary instead
    if front == "evaluate" and options.baseline is not None:
        from exam_harness.features.significance.baseline import BASELINE, BaselineTest

        inputs.set(BASELINE, BaselineTest(options.baseline, options.significance, options.alpha, options.resamples,
                                          options.seed))
