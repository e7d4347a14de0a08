"""``exam-harness label`` on a screen a plugin registers (hook ``pytest_exam_register_label_screens``): the command
keeps the sampling and the file, the first screen that can run labels, and ``--screen on`` with none that can is
refused before any grading. The in-tree view feature's screen is tested in tests/features/view."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from exam_harness.analysis.label_file import read_label_file, samples_of
from exam_harness.analysis.label_screens import LabelPair, LabelScreen, LabelStep, StepWriter
from exam_harness.cli import main
from exam_harness.cli.label import _screen
from exam_harness.core.errors import ConfigError
from exam_harness.core.registry import Registry
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, write_bank, write_exam

# a screen that answers yes, no, unsure, skip in turn, reads the label file after each step and logs what the
# command handed it
SCRIPTED_SCREEN = KEYWORD_CONFTEST + '''
import json
from pathlib import Path

from exam_harness.api import LabelStep

ANSWERS = ("answers", "does-not-answer", "unsure", "skip")


class ScriptedScreen:
    def unavailable(self):
        return None

    def label(self, pairs, write, *, blind, earlier):
        steps, lines = [], []
        out = next(Path().glob("*.out"))
        for i, pair in enumerate(pairs):
            steps.append(LabelStep(pair, ANSWERS[i % 4]))
            write(list(steps))
            lines.append(len(out.read_text().splitlines()))
        Path("screen-log.json").write_text(json.dumps({
            "pairs": [[p.passage_id, p.test_point_id] for p in pairs], "blind": blind, "earlier": earlier,
            "grades": [p.grade for p in pairs], "of_unit": [p.of_unit for p in pairs], "lines": lines}))
        return steps


def pytest_exam_register_label_screens(registry):
    registry.register("scripted", ScriptedScreen(), "answers in turn")
'''
ANSWER_KEYS = "y\nn\ns\ns\n"  # the line prompt's answers for the screen's yes, no, unsure, skip


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A folder with the keyword grader's exam and the scripted screen in its conftest.py; the label arguments."""
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(SCRIPTED_SCREEN)
    monkeypatch.chdir(tmp_path)
    return [str(exam), "--bank", str(bank), "--grader", "keyword", "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress"]


def without_textual(monkeypatch: pytest.MonkeyPatch) -> None:
    """The view feature's screen unavailable, as where the [view] extra is not installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual" else real(name, *a))


def label_twice(project: list[str], monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[bytes, bytes]:
    """The label file of the line prompt (--screen off) and of the scripted screen, for the same answers, each
    session the first on its file."""
    for done in ("line.jsonl", "screen.out"):
        Path(done).unlink(missing_ok=True)
    without_textual(monkeypatch)  # so the plugin's screen, after the view feature's, is the first that can run
    monkeypatch.setattr(sys, "stdin", io.StringIO(ANSWER_KEYS * 8))
    assert main(["label", *project, *extra, "--screen", "off", "--out", "line.jsonl"]) == 0
    Path("screen.out").touch()
    assert main(["label", *project, *extra, "--screen", "on", "--out", "screen.out"]) == 0
    return Path("line.jsonl").read_bytes(), Path("screen.out").read_bytes()


def test_a_plugin_s_screen_labels_the_sample_into_the_line_prompt_s_file(
        project: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    line, screen = label_twice(project, monkeypatch, "--size", "8")
    assert screen == line
    printed = capsys.readouterr().out
    assert "wrote screen.out: 4 new labels, 4 pairs labelled in all" in printed
    labels = read_label_file(Path("screen.out"))
    (sample,) = samples_of(labels).values()  # the sample's weights, checked against its lines
    assert sample.id.startswith("pairs/seed=0/") and sample.labelled == 4
    assert all(label.inclusion == pytest.approx(label.stratum_labelled / label.stratum_size) for label in labels
               if label.stratum_labelled is not None and label.stratum_size)
    assert all(label.shown is False for label in labels)
    log = json.loads(Path("screen-log.json").read_text())
    assert len(log["pairs"]) == 8 and log["blind"] is True and log["earlier"] == 0
    assert all(isinstance(grade, int) for grade in log["grades"])  # handed over; a blind screen hides them
    assert log["of_unit"] == [None] * 8
    assert log["lines"] == [1, 2, 2, 2, 3, 4, 4, 4]  # the file rewritten at each step: yes and no add a line

    # a second session: the labelled pairs are not handed again, the sample goes on and --show-judge unblinds
    assert main(["label", *project, "--size", "12", "--screen", "on", "--show-judge", "--out", "screen.out"]) == 0
    second = json.loads(Path("screen-log.json").read_text())
    assert second["blind"] is False and second["earlier"] == 4
    assert not {label.pair for label in labels} & {tuple(pair) for pair in second["pairs"]}
    after = read_label_file(Path("screen.out"))
    assert [label.pair for label in after[:4]] == [label.pair for label in labels]
    assert [label.shown for label in after] == [False] * 4 + [True] * (len(after) - 4)
    assert samples_of(after)[sample.id].labelled == len(after)


def test_a_screen_labels_test_point_units_and_issue_30_s_order_as_the_line_prompt(
        project: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    line, screen = label_twice(project, monkeypatch, "--unit", "test-point", "--size", "2")
    assert screen == line
    log = json.loads(Path("screen-log.json").read_text())
    per_point: dict[str, int] = {}
    for _, tp in log["pairs"]:
        per_point[tp] = per_point.get(tp, 0) + 1
    seen: dict[str, int] = {}
    for (_, tp), place in zip(log["pairs"], log["of_unit"], strict=True):  # each pair's place in its test point
        seen[tp] = seen.get(tp, 0) + 1
        assert place == [seen[tp], per_point[tp]]
    line, screen = label_twice(project, monkeypatch, "--unsure", "6", "--confident", "2")
    assert screen == line and len(json.loads(Path("screen-log.json").read_text())["pairs"]) == 8
    assert all(label.sample is None for label in read_label_file(Path("screen.out")))  # no sample: weighs 1


def test_screen_on_with_none_that_can_run_is_refused_before_grading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)
    monkeypatch.chdir(tmp_path)
    without_textual(monkeypatch)
    assert main(["label", str(exam), "--bank", str(bank), "--grader", "keyword", "--cache", "c.sqlite",
                 "--screen", "on"]) == 4
    assert ("the labelling screen needs Textual: pip install 'exam-harness[view]' (or --screen off)"
            in capsys.readouterr().err)
    assert not (tmp_path / "c.sqlite").exists()  # nothing graded


class Refusing:
    def __init__(self, reason: str | None) -> None:
        self.reason = reason
        self.asked = 0

    def unavailable(self) -> str | None:
        self.asked += 1
        return self.reason

    def label(self, pairs: object, write: StepWriter, *, blind: bool, earlier: int) -> list[LabelStep]:
        raise AssertionError("not shown")


def screens(*entries: LabelScreen) -> Registry[LabelScreen]:
    registry: Registry[LabelScreen] = Registry("labelling screen")
    for i, entry in enumerate(entries):
        registry.register(f"s{i}", entry)
    return registry


def test_the_first_screen_that_can_run_is_chosen_and_every_reason_said(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    first, second, third = Refusing("no A here"), Refusing(None), Refusing(None)
    assert _screen("on", screens(first, second, third)) is second and third.asked == 0
    with pytest.raises(ConfigError, match=r"^no A here; no B here \(or --screen off\)$"):
        _screen("on", screens(Refusing("no A here"), Refusing("no B here")))
    with pytest.raises(ConfigError, match="no labelling screen is registered"):
        _screen("on", screens())
    # auto: in a pipe no screen is asked; on a terminal without one, the line prompt, saying why
    unasked = Refusing(None)
    assert _screen("auto", screens(unasked)) is None and unasked.asked == 0  # pytest's stdin is no terminal
    assert _screen("off", screens(unasked)) is None and unasked.asked == 0
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert _screen("auto", screens(Refusing("no A here"))) is None
    assert "exam-harness label: the line prompt (no A here)" in capsys.readouterr().err
    assert _screen("auto", screens(unasked)) is unasked


def test_a_pair_handed_to_a_screen_is_the_api_s() -> None:
    from exam_harness import api

    assert api.LabelPair is LabelPair and api.LabelStep is LabelStep and api.LabelScreen is LabelScreen
    assert isinstance(Refusing(None), LabelScreen)
