"""The labelling screen as a labeller drives it (Pilot, keys only): blind by default, every answer written at
once, undo, resume; and the file it writes is the line prompt's for the same answers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from exam_harness.analysis.label_screens import LabelPair, LabelStep, labels_of
from exam_harness.analysis.labels import Label, label_loop, read_labels, write_labels
from exam_harness.features.view.labelling import LabelApp
from tests.features.view.example import screen_text
from tests.features.view.viewing import flat

# the screen's keys and, for each, the line prompt's answer to the same pair: an unsure answer (m) leaves the pair
# unlabelled in today's label file, as a skip (s) does
LINE_KEY = {"y": "y", "n": "n", "m": "s", "s": "s", "u": "u", "backspace": "u"}


def pairs(n: int) -> list[LabelPair]:
    return [LabelPair(f"q{i % 4}", f"q{i % 4}/point-{i}", f"What does point {i} ask? [{i}]", f"p{i}",
                      f"Passage {i} says something about point {i}.", grade=i % 6, reason=f"support 0.{i:02d}")
            for i in range(n)]


def file_writer(path: Path, kept: Sequence[Label]) -> tuple[list[list[LabelStep]], object]:
    """A writer of the label file as exam-harness label writes it, and the steps each call was given."""
    calls: list[list[LabelStep]] = []

    def write(steps: Sequence[LabelStep]) -> None:
        calls.append(list(steps))
        write_labels(path, [*kept, *labels_of(steps)])  # as cli/label.py hands the screen its writer

    return calls, write


def label_on_screen(shown: Sequence[LabelPair], keys: Sequence[str], write: object, *, blind: bool = True,
                    earlier: int = 0) -> tuple[list[LabelStep], list[str]]:
    """The steps the app returned and the screen after each key."""
    app = LabelApp(shown, write, blind=blind, earlier=earlier)  # type: ignore[arg-type]
    screens: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screens.append(screen_text(app))
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
                screens.append(screen_text(app))

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


def test_forty_pairs_labelled_on_the_screen_write_the_line_prompt_s_file(tmp_path: Path) -> None:
    """Done when (issue 40): the same answers through the screen and through the line prompt, the same file."""
    shown = pairs(40)
    kept = [Label("q9", "q9/earlier", "p-earlier", True)]
    keys = keys_for(40)
    calls, write = file_writer(tmp_path / "screen.jsonl", kept)
    steps, _ = label_on_screen(shown, keys, write, earlier=1)
    assert len(steps) == 40

    line_keys = iter([LINE_KEY.get(k, k) + "\n" for k in keys])
    query_of = {p.test_point_id: p.query_id for p in shown}
    labels = label_loop([(p.passage_id, p.test_point_id) for p in shown], query_of, lambda pair, i, n: None,
                        lambda: next(line_keys, None), lambda text: None)
    write_labels(tmp_path / "line.jsonl", [*kept, *labels])

    assert (tmp_path / "screen.jsonl").read_bytes() == (tmp_path / "line.jsonl").read_bytes()
    labelled = read_labels(tmp_path / "screen.jsonl")
    assert len(labelled) == 1 + sum(s.answer in ("answers", "does-not-answer") for s in steps)
    assert len(calls) == len(keys) - 1  # written after every answer and every undo (not on quit)


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
    steps, screens = label_on_screen(shown, ["y", "m", "u", "u", "u", "n", "s", "y", "y"], calls.append,
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


def test_a_session_ended_midway_resumes_where_it_stopped(tmp_path: Path) -> None:
    """Quit (or a kill: each answer is in the file already) after 5 pairs; the next session is given the pairs
    not yet labelled and the file ends as one session's would."""
    shown = pairs(12)
    keys = ["y", "n", "y", "y", "n", "n", "y", "n", "y", "y", "n", "y"]
    _, one_go = file_writer(tmp_path / "one.jsonl", [])
    label_on_screen(shown, [*keys, "q"], one_go)

    _, first = file_writer(tmp_path / "resumed.jsonl", [])
    label_on_screen(shown, [*keys[:5], "q"], first)
    earlier = read_labels(tmp_path / "resumed.jsonl")
    assert len(earlier) == 5
    kept = [Label(p.query_id, p.test_point_id, p.passage_id, earlier[(p.passage_id, p.test_point_id)])
            for p in shown if (p.passage_id, p.test_point_id) in earlier]
    left = [p for p in shown if (p.passage_id, p.test_point_id) not in earlier]
    _, second = file_writer(tmp_path / "resumed.jsonl", kept)
    label_on_screen(left, [*keys[5:], "q"], second, earlier=len(kept))
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
