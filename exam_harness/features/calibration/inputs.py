"""The calibration feature's option and scoring input: ``--exam-team-labels FILE`` (ini ``exam_team_labels``,
``evaluate --team-labels``) names a team's label file (analysis/label_file.py); it is read and checked when the
front ends ask the features for their scoring inputs, before any pair is graded (a bad line stops the session or
command, naming it), and the section reads it with what the session graded and the judges the grade cache holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from exam_harness.analysis.label_file import TeamLabel, read_label_file, samples_of
from exam_harness.api import FeatureOption, InputKey, feature_option
from exam_harness.config.options import REPORTS

NAME = "calibration"  # the section's name in the document

TEAM_LABELS: FeatureOption[Path | None] = feature_option(
    "team-labels", None, "A team's labels of (test point, passage) pairs (exam-harness label draws them): every "
    "judge's TPR, TNR, precision, base rate and kappa against them and each EXAM-Cover, n-EXAM and nugget F score "
    "corrected by them, with 95% intervals, in the calibration section of every output; gate a corrected score with "
    "--exam-fail-under exam-cover.corrected:X or exam-cover.corrected-low:X (docs/calibration.md) (default: none)",
    Path, group=REPORTS, path=True, metavar="FILE")


@dataclass(frozen=True)
class TeamLabelInput:
    """The labels of ``--exam-team-labels`` as read, and where the section looks the other judges up: the grade
    cache (None: in memory, no other judge) and the session's grader options (a panel's members)."""

    path: str  # as the outputs show it
    labels: Sequence[TeamLabel]
    cache: Path | None
    model: str | None
    grader_options: dict[str, str]


LABELS: InputKey[TeamLabelInput] = InputKey("calibration: --exam-team-labels")


def read_team_labels(path: Path) -> list[TeamLabel]:
    """The file's labels, every line and every sample checked (an InputError names the line)."""
    labels = read_label_file(path)
    samples_of(labels)
    return labels
