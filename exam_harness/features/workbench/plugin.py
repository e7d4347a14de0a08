"""The Workbench feature's hook implementations: ``--export-workbench``, its writer and ``import-grades``.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py). The
writer and the subcommand are ``"module:attr"`` strings: registering the feature imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Command, ExamOptions, FeatureOptions, Registry, ScoringFront, Writer
    from exam_harness.exam.inputs import ExamInputs

_HERE = "exam_harness.features.workbench"


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.workbench.options import EXPORT

    options.add(EXPORT)


@hookimpl(tryfirst=True)
def pytest_exam_inputs(options: ExamOptions, front: ScoringFront, inputs: ExamInputs) -> None:
    from exam_harness.features.workbench.options import EXPORT, check_export

    target = options.feature(EXPORT)
    if target is not None:
        check_export(target)  # before any grading


@hookimpl(tryfirst=True)
def pytest_exam_register_reporters(registry: Registry[Writer]) -> None:
    registry.register("workbench", f"{_HERE}.writer:WRITER",
                      "workbench.jsonl.gz, the exam as a Workbench paragraph file (--export-workbench)")


@hookimpl(tryfirst=True)
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("import-grades", f"{_HERE}.command:COMMAND",
                      "a graded Workbench paragraph file's grades stored in the grade cache")
