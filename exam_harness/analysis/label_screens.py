"""A labelling screen that a feature gives ``exam-harness label`` (hook ``pytest_exam_register_label_screens``).

``exam-harness label`` is a core subcommand: it draws the sample (analysis/label_sample.py), reads the label file
and writes it (analysis/label_file.py). A screen only shows the pairs it is given, in order, and takes the answers:
it knows nothing of sampling or files; the writer it is handed rewrites the file, sample weights and all, from the
steps. The command asks its registry for the first screen that can run here (``unavailable()`` is
None) under ``--screen on``, or ``auto`` on a terminal, and keeps its line prompt otherwise; so the core never
imports the feature that draws the screen (the in-tree ``view`` feature registers the Textual one). Light: the
command line's registries import it at every start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

LabelAnswer = Literal["answers", "does-not-answer", "unsure", "skip"]
ANSWERS: tuple[LabelAnswer, ...] = ("answers", "does-not-answer", "unsure", "skip")


@dataclass(frozen=True)
class LabelPair:
    """One pair to label: the test point and the passage; the judge's grade and reason (None: it could not grade
    the pair) are shown only when the screen is not blind."""

    query_id: str
    test_point_id: str
    test_point: str
    passage_id: str
    passage: str
    grade: int | None = None
    reason: str | None = None
    # what the passage is, shown in place of "passage ID": "answer of run r" for a run's generated answer
    origin: str | None = None
    # (k, n): the k-th of the n pairs of its test point asked (--unit test-point: the test point joins the sample
    # once all its pairs are labelled); None: the pair is a unit of its own
    of_unit: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """(passage id, test point id), as the label file keys a pair."""
        return (self.passage_id, self.test_point_id)


@dataclass(frozen=True)
class LabelStep:
    """The answer given to one pair (``unsure`` and ``skip``: none; the pair stays unlabelled)."""

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


def answers_given(steps: Sequence[LabelStep]) -> dict[tuple[str, str], bool]:
    """(passage id, test point id) -> label, in the order given: the label file holds yes and no only, so an unsure
    answer, like a skip (the line prompt's ``s``), leaves the pair unlabelled: out of the sample, asked again by
    the next session of the same seed."""
    return {s.pair.key: s.answer == "answers" for s in steps if s.answer in ("answers", "does-not-answer")}
