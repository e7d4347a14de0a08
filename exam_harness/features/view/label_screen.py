"""The labelling screen as ``exam-harness label`` asks for it (analysis/label_screens.py: ``LabelScreen``): whether
Textual is there, and the app run on the pairs the command chose. Textual is imported only by ``label``."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

from exam_harness.analysis.label_screens import LabelPair, LabelStep, StepWriter


def on_a_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


class TextualLabelScreen:
    """:class:`~exam_harness.features.view.labelling.LabelApp` behind the ``LabelScreen`` protocol."""

    def unavailable(self) -> str | None:
        if importlib.util.find_spec("textual") is None:
            return "the labelling screen needs Textual: pip install 'exam-harness[view]'"
        if not on_a_terminal():  # drawn into a pipe the screen is escape codes, and its keys never come
            return "the labelling screen needs a terminal on standard input and output (a pipe takes the line prompt)"
        return None

    def label(self, pairs: Sequence[LabelPair], write: StepWriter, *, blind: bool, earlier: int) -> list[LabelStep]:
        from exam_harness.features.view.labelling import LabelApp

        return LabelApp(pairs, write, blind=blind, earlier=earlier).run() or []


SCREEN = TextualLabelScreen()
