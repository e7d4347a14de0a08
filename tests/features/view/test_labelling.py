"""The labelling screen as a labeller drives it (Pilot, keys only): blind by default, every answer written at
once, undo, resume; and, through the real ``exam-harness label`` on the example exam, the file it writes is the
line prompt's for the same answers: the same stratified sample, strata and inclusion probabilities."""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from exam_harness.analysis.label_file import read_label_file, samples_of
from exam_harness.analysis.label_screens import LabelPair, LabelStep, StepWriter
from exam_harness.cli import main
from exam_harness.features.view import label_screen
from exam_harness.features.view.label_screen import TextualLabelScreen
from exam_harness.features.view.labelling import LabelApp
from tests.features.view.example import Example, screen_text
from tests.features.view.support import LINE_KEY
from tests.features.view.viewing import flat


def pairs(n: int) -> list[LabelPair]:
    return [LabelPair(f"q{i % 4}", f"q{i % 4}/point-{i}", f"What does point {i} ask? [{i}]", f"p{i}",
                      f"Passage {i} says something about point {i}.", grade=i % 6, reason=f"support 0.{i:02d}")
            for i in range(n)]


def label_on_screen(shown: Sequence[LabelPair], keys: Sequence[str], write: StepWriter, *, blind: bool = True,
                    earlier: int = 0, after_key: Callable[[], None] = lambda: None
                    ) -> tuple[list[LabelStep], list[str]]:
    """The steps the app returned and the screen before the first key and after each."""
    app = LabelApp(shown, write, blind=blind, earlier=earlier)
    screens: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screens.append(screen_text(app))
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
                screens.append(screen_text(app))
                after_key()

    asyncio.run(run())
    return list(app.return_value or app.steps), screens


def keys_for(n: int) -> list[str]:
    """Answers of every kind for n pairs, with undos (one after a skip) and a second answer after each."""
    keys: list[str] = []
    for i in range(n):
        keys.append("ymns"[i % 4] if i % 7 else "n")
        if i in (5, 12, 30):
            keys += ["u", "y"]
        if i == 20:
            keys += ["backspace", "backspace", "n", "y"]
    return [*keys, "q"]


@dataclass
class PilotScreen:
    """The view feature's screen as ``exam-harness label`` runs it, its keys pressed through Pilot; it records what
    it was handed, the screen after each key and the label file's lines after each key."""

    keys: Sequence[str]
    out: Path
    handed: list[LabelPair] = field(default_factory=list)
    blind: bool | None = None
    screens: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def label(self, shown: Sequence[LabelPair], write: StepWriter, *, blind: bool, earlier: int) -> list[LabelStep]:
        self.handed, self.blind = list(shown), blind

        def count() -> None:
            self.lines.append(len(self.out.read_text().splitlines()) if self.out.exists() else 0)

        steps, self.screens = label_on_screen(shown, self.keys, write, blind=blind, earlier=earlier, after_key=count)
        return steps


@pytest.fixture
def exam(example: Example, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``exam-harness label``'s arguments on the example exam (its grades in the cache the sessions filled)."""
    monkeypatch.chdir(example.root)
    return ["label", "runs", "--bank", "banks/example.yaml", "--no-progress", "--size", "40"]


def on_screen(exam: list[str], keys: Sequence[str], out: Path, monkeypatch: pytest.MonkeyPatch,
              *extra: str) -> PilotScreen:
    """``exam-harness label --screen on`` with ``keys`` pressed on the view feature's screen."""
    screen = PilotScreen(keys, out)
    monkeypatch.setattr(TextualLabelScreen, "label", lambda _self, *a, **k: screen.label(*a, **k))
    monkeypatch.setattr(label_screen, "on_a_terminal", lambda: True)  # the pilot stands in for the terminal
    assert main([*exam, *extra, "--screen", "on", "--out", str(out)]) == 0
    return screen


def on_line_prompt(exam: list[str], keys: Sequence[str], out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(LINE_KEY[k] + "\n" for k in keys)))
    assert main([*exam, "--screen", "off", "--out", str(out)]) == 0


@pytest.mark.slow
def test_forty_pairs_labelled_on_the_screen_write_the_line_prompt_s_file(
        exam: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Done when (issue 40): the same answers through the screen and the line prompt of ``exam-harness label``,
    the same file, with the sample's weights; written after every key."""
    keys = keys_for(40)
    screen = on_screen(exam, keys, tmp_path / "screen.jsonl", monkeypatch)
    on_line_prompt(exam, keys, tmp_path / "line.jsonl", monkeypatch)
    assert len(screen.handed) == 40 and screen.blind is True
    assert (tmp_path / "screen.jsonl").read_bytes() == (tmp_path / "line.jsonl").read_bytes()

    labels = read_label_file(tmp_path / "screen.jsonl")
    answered = [k for k in answers_standing(keys) if k in ("y", "n")]
    assert len(labels) == len(answered) and [label.label for label in labels] == [k == "y" for k in answered]
    (sample,) = samples_of(labels).values()  # the strata's counts and inclusions checked against the lines
    assert sample.id.startswith("pairs/seed=0/") and sample.labelled == len(labels)
    assert all(label.stratum is not None and label.inclusion is not None and label.shown is False
               for label in labels)
    assert {label.source for label in labels} == {"passage", "answer"}  # the generated answers, as answers
    # the file after each key: a yes or no adds its line, an undo of one takes it back, unsure and skip add none
    standing: list[str] = []
    for key, held in zip(keys[:-1], screen.lines, strict=False):
        if key in ("u", "backspace"):
            standing.pop()
        else:
            standing.append(key)
        assert held == sum(k in ("y", "n") for k in standing), (key, standing)


def answers_standing(keys: Sequence[str]) -> list[str]:
    """The answers standing after ``keys`` (an undo takes the last one back; q ends)."""
    steps: list[str] = []
    for key in keys:
        if key == "q":
            break
        if key in ("u", "backspace"):
            steps.pop()
        else:
            steps.append(key)
    return steps


def test_the_command_s_screen_is_blind_and_shows_a_run_s_answer_as_one(
        exam: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = on_screen(exam, ["q"], tmp_path / "blind.jsonl", monkeypatch)
    first = flat(screen.screens[0])
    assert "blind (the judge's grade is hidden)" in first and "grade:" not in first
    assert screen.handed[0].test_point in first
    answers = [i for i, pair in enumerate(screen.handed) if pair.origin is not None]
    assert answers and all(screen.handed[i].origin == "answer of run rag-generator" for i in answers)
    # the first generated answer, reached by skipping to it, is headed as the run's answer
    skipped = on_screen(exam, ["s"] * answers[0] + ["q"], tmp_path / "skipped.jsonl", monkeypatch)
    at = flat(skipped.screens[answers[0]])
    assert "answer of run rag-generator" in at and f"passage {skipped.handed[answers[0]].passage_id}" not in at
    assert not (tmp_path / "skipped.jsonl").read_text()  # skips label nothing
    shown = on_screen(exam, ["y", "q"], tmp_path / "shown.jsonl", monkeypatch, "--show-judge")
    assert shown.blind is False and "the judge's grade: " in flat(shown.screens[0])
    assert [label.shown for label in read_label_file(tmp_path / "shown.jsonl")] == [True]


@pytest.mark.slow
def test_a_session_quit_midway_resumes_where_it_stopped(
        exam: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Quit after 15 pairs (a kill keeps as much: each answer is in the file at once); the next session is handed
    the sample's pairs not yet labelled, and the file ends as one session's would, weights and all."""
    keys = [("y", "n", "n")[i % 3] for i in range(40)]
    on_screen(exam, [*keys, "q"], tmp_path / "one.jsonl", monkeypatch)
    first = on_screen(exam, [*keys[:15], "q"], tmp_path / "resumed.jsonl", monkeypatch)
    assert len(read_label_file(tmp_path / "resumed.jsonl")) == 15
    second = on_screen(exam, [*keys[15:], "q"], tmp_path / "resumed.jsonl", monkeypatch)
    assert [p.key for p in second.handed] == [p.key for p in first.handed[15:]]
    assert "15 before" in flat(second.screens[0])
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_the_screen_is_blind_by_default(tmp_path: Path) -> None:
    shown = pairs(3)
    _, screens = label_on_screen(shown, [], lambda steps: None)
    first = flat(screens[0])
    assert "What does point 0 ask? [0]" in first and "Passage 0 says something about point 0." in first
    assert "blind (the judge's grade is hidden)" in first
    assert "grade: " not in first and "support 0.00" not in first
    _, screens = label_on_screen(shown, [], lambda steps: None, blind=False)
    assert "the judge's grade: 0; its reason: support 0.00" in flat(screens[0])


def test_progress_undo_and_the_last_pair(tmp_path: Path) -> None:
    shown = pairs(3)
    calls: list[list[LabelStep]] = []
    steps, screens = label_on_screen(shown, ["y", "m", "u", "u", "u", "n", "s", "y", "y"],
                                     lambda steps: calls.append(list(steps)),
                                     earlier=4)
    assert flat(screens[0]).startswith("pair 1 of 3 · 0 labelled (0 yes, 0 no), 0 unsure, 0 skipped · 4 before")
    assert "pair 3 of 3 · 1 labelled (1 yes, 0 no), 1 unsure" in flat(screens[2])
    assert "undone: unsure of p1 on q1/point-1" in flat(screens[3])
    assert "nothing to undo" in flat(screens[5])
    assert "Passage 0 says" in flat(screens[5])  # back at the first pair
    assert "all 3 pairs done · 2 labelled (1 yes, 1 no), 0 unsure, 1 skipped" in flat(screens[8])
    assert "every pair is done: u to undo the last answer, q to finish" in flat(screens[9])
    assert [s.answer for s in steps] == ["does-not-answer", "skip", "answers"]
    assert [len(c) for c in calls] == [1, 2, 1, 0, 1, 2, 3]  # each answer and undo hands over every step so far


def test_a_pair_of_a_test_point_unit_says_its_place_and_a_run_s_answer_its_run(tmp_path: Path) -> None:
    point = [LabelPair("q1", "q1/a", "What is a?", f"p{i}", f"text {i}", origin="answer of run gen" if i else None,
                       of_unit=(i + 1, 2)) for i in range(2)]
    _, screens = label_on_screen(point, ["y"], lambda steps: None)
    assert "pair 1 of 2 of this test point (it joins the sample once all 2 are labelled)" in flat(screens[0])
    assert "passage p0" in flat(screens[0])
    assert "pair 2 of 2 of this test point" in flat(screens[1]) and "answer of run gen text 1" in flat(screens[1])
    assert "passage p1" not in flat(screens[1])
