"""The labelling screen as ``exam-harness label`` asks for it (analysis/label_screens.py: ``LabelScreen``): whether
Textual is there, and the app run on the pairs the command chose. Textual is imported only by ``label``."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from exam_harness.analysis.label_screens import LabelPair, LabelStep, StepWriter


class TextualLabelScreen:
    """:class:`~exam_harness.features.view.labelling.LabelApp` behind the ``LabelScreen`` protocol."""

    def unavailable(self) -> str | None:
        if importlib.util.find_spec("textual") is None:
            return "the labelling screen needs Textual: pip install 'exam-harness[view]'"
        return None

    def label(self, pairs: Sequence[LabelPair], write: StepWriter, *, blind: bool, earlier: int) -> list[LabelStep]:
        from exam_harness.features.view.labelling import LabelApp

        return LabelApp(pairs, write, blind=blind, earlier=earlier).run() or []


SCREEN = TextualLabelScreen()
