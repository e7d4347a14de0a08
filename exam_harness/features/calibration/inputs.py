"""What a front end gives the calibration section (``--exam-team-labels FILE`` in a pytest session,
``--team-labels FILE`` of ``evaluate`` and ``analyze agreement``): the team's labels as read, and the judges
with their grades of the exam's pairs. Read before grading where the front end can (a bad file stops the
command before a pair is graded), completed once the grades are known."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from exam_harness.features.calibration.judges import Judges, cached_judges, session_judge
from exam_harness.features.calibration.labelfile import Pair, TeamLabel, read_label_file, samples_of
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry
from exam_harness.grading import GradingOutcome
from exam_harness.models import ExamData, GraderSpec, QueryBank

NAME = "calibration"  # the key of these inputs in Scored.given, and of the section in the document


@dataclass(frozen=True)
class TeamLabels:
    """The labels of a file, and the judges to calibrate against them (the session's grader first)."""

    path: str  # as the outputs show it
    labels: Sequence[TeamLabel]
    judges: Judges


def read_team_labels(path: Path) -> list[TeamLabel]:
    """The file's labels, every line and every sample checked (an InputError names the line)."""
    labels = read_label_file(path)
    samples_of(labels)
    return labels


def team_labels(shown: str, labels: Sequence[TeamLabel], *, spec: GraderSpec, outcome: GradingOutcome,
                min_grade: int, cache: Path | None, registry: GraderRegistry, banks: Sequence[QueryBank],
                data: ExamData, config: GraderConfig) -> TeamLabels:
    """The labels with the session's judge (its grades at ``min_grade``) and the judges the cache holds for the
    exam's pairs (none where the grades were replayed or ``cache`` is None: kept in memory)."""
    from exam_harness.analysis.label_graders import labelled_requests

    first = session_judge(spec, outcome.grades, min_grade)
    pairs = [*outcome.grades, *outcome.failures]
    requests: Mapping[Pair, GradingRequest] = labelled_requests(pairs, banks, data)
    judges = cached_judges(cache if outcome.source != "recorded" else None, registry, requests, first=first,
                           session=spec, config=config, data=data)
    return TeamLabels(shown, list(labels), judges)
