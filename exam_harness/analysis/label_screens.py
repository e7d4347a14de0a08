"""A labelling screen that a feature gives ``exam-harness label`` (hook ``pytest_exam_register_label_screens``).

``exam-harness label`` is a core subcommand: it picks the pairs (analysis/labels.py), reads the labels file and
writes it. A screen only shows the pairs it is given, in order, and takes the answers: it knows nothing of
sampling or files. The command asks its registry for the first screen that can run here (``unavailable()`` is
None) under ``--screen on``, or ``auto`` on a terminal, and keeps its line prompt otherwise; so the core never
imports the feature that draws the screen (the in-tree ``view`` feature registers the Textual one). Light: the
command line's registries import it at every start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from exam_harness.analysis.labels import Label

LabelAnswer = Literal["answers", "does-not-answer", "unsure", "skip"]
ANSWERS: tuple[LabelAnswer, ...] = ("answers", "does-not-answer", "unsure", "skip")


@dataclass(frozen=True)
class LabelPair:
    """One pair to label: the test point and the passage; the judge's grade and reason are shown only when the
    screen is not blind."""

    query_id: str
    test_point_id: str
    test_point: str
    passage_id: str
    passage: str
    grade: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class LabelStep:
    """The answer given to one pair (``skip``: none; the pair stays unlabelled)."""

    pair: LabelPair
    answer: LabelAnswer


StepWriter = Callable[[Sequence[LabelStep]], None]  # every step taken so far, in order; after each answer and undo


@runtime_checkable
class LabelScreen(Protocol):
    """A labelling screen (see the module docstring)."""

    def unavailable(self) -> str | None:
        """Why the screen cannot run here (a library it needs is not installed), in a sentence; None when it can."""

    def label(self, pairs: Sequence[LabelPair], write: StepWriter, *, blind: bool, earlier: int) -> list[LabelStep]:
        """Show ``pairs`` in order and return the steps taken; ``write`` is handed every step taken so far after
        each answer and undo (a killed session keeps what was labelled). ``blind`` hides the judge's grade and
        reason; ``earlier`` is the number of labels the file held before (shown in the progress)."""


def labels_of(steps: Sequence[LabelStep]) -> list[Label]:
    """The labels the steps give: the file holds yes and no; an unsure answer, like a skip, leaves the pair
    unlabelled (as the line prompt's ``s``)."""
    from exam_harness.analysis.labels import Label  # its sampling imports the support model: on first use

    return [Label(s.pair.query_id, s.pair.test_point_id, s.pair.passage_id, s.answer == "answers")
            for s in steps if s.answer in ("answers", "does-not-answer")]
