"""The calibration feature's hook implementations: its option, the scoring input it reads, its section, its
gate figures and the panel grader (docs/calibration.md).

``tryfirst``: an in-tree feature's entries come before a third-party plugin's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import ExamOptions, FeatureOptions, GateFigure, Registry, ScoringFront, ScoringInputs, Section
    from exam_harness.graders.registry import GraderRegistry


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.calibration.inputs import TEAM_LABELS

    options.add(TEAM_LABELS)


@hookimpl(tryfirst=True)
def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    from exam_harness.features.calibration.inputs import LABELS, TEAM_LABELS, TeamLabelInput, read_team_labels

    path = options.feature(TEAM_LABELS)
    if path is None:
        return
    from exam_harness.core.errors import ConfigError, InputError
    from exam_harness.core.paths import shown_path

    try:
        labels = read_team_labels(path)  # before any pair is graded: a bad line stops the front end here
    except InputError as exc:  # the hook's contract: a bad value is a ConfigError (a usage error, status 4)
        raise ConfigError(f"--exam-team-labels: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"--exam-team-labels {path}: cannot be read ({exc.strerror or exc})") from None
    inputs.set(LABELS, TeamLabelInput(shown_path(path), labels, options.cache, options.model,
                                      dict(options.grader_options)))


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    # first of the sections after the leaderboards: the corrected scores stand beside the raw ones
    registry.register("calibration", "exam_harness.features.calibration.section:SECTION",
                      "the judges against a team's labels and the scores they correct (--exam-team-labels, "
                      "docs/calibration.md)", before="live-systems")


@hookimpl(tryfirst=True)
def pytest_exam_register_gate_figures(registry: Registry[GateFigure]) -> None:
    from exam_harness.features.calibration.figures import FIGURES

    for figure in FIGURES:
        registry.register(figure.name, figure, figure.title)


@hookimpl(tryfirst=True)
def pytest_exam_register_graders(registry: GraderRegistry) -> None:
    registry.register("panel", "exam_harness.features.calibration.panel:PanelGrader",
                      "several judges vote on each pair (majority, unanimous or weighted), each cached as itself")
