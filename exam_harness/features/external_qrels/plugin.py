"""The external qrels feature's hook implementations: its options, the scoring input its section reads (the qrels
files, read before any grading) and the section.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import ExamOptions, FeatureOptions, Registry, ScoringFront, ScoringInputs, Section


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.external_qrels.options import OPTIONS

    for option in OPTIONS:
        options.add(option)


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register("external-qrels", "exam_harness.features.external_qrels.section:SECTION",
                      "every run over given qrels files, correlated with the official leaderboard and qrels (--qrels)")


@hookimpl(tryfirst=True)
def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    # evaluate's options alone (the pytest session has none of them)
    if front != "evaluate":
        return
    from exam_harness.features.external_qrels.inputs import QRELS_REQUEST, qrels_request

    request = qrels_request(options)
    if request is not None:
        inputs.set(QRELS_REQUEST, request)
