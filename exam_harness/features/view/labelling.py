"""The labelling screen of ``exam-harness label`` (Textual): one (test point, passage) pair at a time, blind by
default (the judge's grade and reason hidden), a key per answer, undo, progress; every step is handed to the
writer at once, so a killed session keeps what was labelled and the next one resumes after it.

The screen knows nothing of sampling or files: it is given the pairs to label, in order, and a writer called
with every step taken so far after each key (analysis/label_screens.py: ``StepWriter``). ``exam-harness label``
gives it the pairs of the sample its line prompt would ask and a writer of the same weighted label file
(cli/label.py), through the screen this feature registers (label_screen.py). An unsure answer, like a skip,
leaves the pair unlabelled (the file holds yes and no only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from exam_harness.analysis.label_screens import ANSWERS, LabelAnswer, LabelPair, LabelStep, StepWriter

KEYS = """\
y  the passage answers the test point      n  it does not
m  unsure (maybe)                          s  skip
u  undo the last step (also backspace)     q  quit, keeping every label given
"""


def tally(steps: Sequence[LabelStep]) -> dict[LabelAnswer, int]:
    counts: dict[LabelAnswer, int] = dict.fromkeys(ANSWERS, 0)
    for step in steps:
        counts[step.answer] += 1
    return counts


CSS = """
#progress { height: 2; background: $primary-background; }
#pair { height: 1fr; padding: 0 1; }
#said { height: auto; max-height: 3; }
"""


class LabelApp(App[list[LabelStep]]):
    """Label ``pairs`` in order; returns the steps taken (also handed to ``write`` after each one)."""

    TITLE = "exam-harness label"
    CSS = CSS
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('answers')", "answers"),
        Binding("n", "answer('does-not-answer')", "does not"),
        Binding("m", "answer('unsure')", "unsure"),
        Binding("s", "answer('skip')", "skip"),
        Binding("u,backspace", "undo", "undo"),
        Binding("q", "finish", "quit"),
    ]

    def __init__(self, pairs: Sequence[LabelPair], write: StepWriter, *, blind: bool = True, earlier: int = 0) -> None:
        super().__init__()
        self.pairs = list(pairs)
        self.write = write
        self.blind = blind
        self.earlier = earlier  # labels the file held before this session (shown in the progress line)
        self.steps: list[LabelStep] = []

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="progress")
        with VerticalScroll(id="pair"):
            yield Static(Text(""), id="shown")
        yield Static(Text(""), id="said")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#pair", VerticalScroll).focus()
        self.refresh_pair()

    @property
    def position(self) -> int:
        return len(self.steps)

    def progress_text(self) -> str:
        counts = tally(self.steps)
        labelled = counts["answers"] + counts["does-not-answer"]
        at = f"pair {self.position + 1} of {len(self.pairs)}" if self.position < len(self.pairs) else (
            f"all {len(self.pairs)} pairs done")
        earlier = f" · {self.earlier} before" if self.earlier else ""
        blind = "blind (the judge's grade is hidden)" if self.blind else "the judge's grade is shown"
        return (f"{at} · {labelled} labelled ({counts['answers']} yes, {counts['does-not-answer']} no), "
                f"{counts['unsure']} unsure, {counts['skip']} skipped{earlier}\n{blind} · each answer is saved at "
                "once: quit any time")

    def refresh_pair(self) -> None:
        self.query_one("#progress", Static).update(Text(self.progress_text(), style="bold"))
        shown = self.query_one("#shown", Static)
        if self.position >= len(self.pairs):
            shown.update(Text(f"Every pair is done.\n\nu: undo the last answer · q: finish\n\n{KEYS}"))
            return
        pair = self.pairs[self.position]
        lines = [Text(f"test point {pair.test_point_id} (query {pair.query_id})", style="bold"), Text(pair.test_point)]
        if pair.of_unit is not None:
            k, n = pair.of_unit
            lines.append(Text(f"pair {k} of {n} of this test point (it joins the sample once all {n} are labelled)",
                              style="dim"))
        lines += [Text(""), Text(pair.origin or f"passage {pair.passage_id}", style="bold"), Text(pair.passage)]
        if not self.blind:
            grade = "no grade" if pair.grade is None else str(pair.grade)
            lines += [Text(""), Text(f"the judge's grade: {grade}; its reason: {pair.reason or '–'}", style="dim")]
        lines += [Text(""), Text("Does the passage answer the test point?"),
                  Text("y yes · n no · m unsure · s skip · u undo · q quit", style="dim")]
        shown.update(Text("\n").join(lines))
        self.query_one("#pair", VerticalScroll).scroll_home(animate=False)

    def say(self, text: str) -> None:
        self.query_one("#said", Static).update(Text(text))

    def action_answer(self, answer: str) -> None:
        if self.position >= len(self.pairs):
            self.say("every pair is done: u to undo the last answer, q to finish")
            return
        chosen: LabelAnswer = next(a for a in ANSWERS if a == answer)
        self.steps.append(LabelStep(self.pairs[self.position], chosen))
        self.write(list(self.steps))
        left = " (left unlabelled: a later session asks it again)" if chosen in ("unsure", "skip") else ""
        self.say(f"{self.steps[-1].pair.passage_id} on {self.steps[-1].pair.test_point_id}: {chosen}{left}")
        self.refresh_pair()

    def action_undo(self) -> None:
        if not self.steps:
            self.say("nothing to undo")
            return
        undone = self.steps.pop()
        self.write(list(self.steps))
        self.say(f"undone: {undone.answer} of {undone.pair.passage_id} on {undone.pair.test_point_id}")
        self.refresh_pair()

    def action_finish(self) -> None:
        self.exit(list(self.steps))
