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

from exam_harness.analysis.label_screens import LabelPair, LabelScreen, LabelStep, StepWriter
from exam_harness.cli import main
from exam_harness.cli.label import _screen
from exam_harness.core.errors import ConfigError
from exam_harness.core.registry import Registry
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, write_bank, write_exam

# a screen that answers yes, no, unsure, skip in turn and logs what the command handed it
SCRIPTED_SCREEN = KEYWORD_CONFTEST + '''
import json
from pathlib import Path

from exam_harness.api import LabelStep

ANSWERS = ("answers", "does-not-answer", "unsure", "skip")


class ScriptedScreen:
    def unavailable(self):
        return None

    def label(self, pairs, write, *, blind, earlier):
        steps = []
        for i, pair in enumerate(pairs):
            steps.append(LabelStep(pair, ANSWERS[i % 4]))
            write(list(steps))
        Path("screen-log.json").write_text(json.dumps({
            "pairs": [[p.passage_id, p.test_point_id] for p in pairs], "blind": blind, "earlier": earlier,
            "grades": [p.grade for p in pairs]}))
        return steps


def pytest_exam_register_label_screens(registry):
    registry.register("scripted", ScriptedScreen(), "answers in turn")
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A folder with the keyword grader's exam and the scripted screen in its conftest.py; the label arguments."""
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(SCRIPTED_SCREEN)
    monkeypatch.chdir(tmp_path)
    return [str(exam), "--bank", str(bank), "--grader", "keyword", "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress", "--unsure", "6", "--confident", "2"]


def without_textual(monkeypatch: pytest.MonkeyPatch) -> None:
    """The view feature's screen unavailable, as where the [view] extra is not installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual" else real(name, *a))


def test_a_plugin_s_screen_labels_the_line_prompt_s_pairs_into_the_same_file(
        project: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    without_textual(monkeypatch)  # so the plugin's screen, after the view feature's, is the first that can run
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nn\ns\ns\n" * 2))  # the screen's answers in turn
    assert main(["label", *project, "--screen", "off", "--out", "line.jsonl"]) == 0
    assert main(["label", *project, "--screen", "on", "--out", "screen.jsonl"]) == 0
    assert "wrote screen.jsonl: 4 new labels, 4 in all" in capsys.readouterr().out
    assert Path("screen.jsonl").read_bytes() == Path("line.jsonl").read_bytes()
    log = json.loads(Path("screen-log.json").read_text())
    assert len(log["pairs"]) == 8 and log["blind"] is True and log["earlier"] == 0
    assert all(isinstance(grade, int) for grade in log["grades"])  # handed over; a blind screen hides them

    # a second session: the labelled pairs are not shown again, the file keeps them and --show-grade unblinds
    assert main(["label", *project, "--screen", "on", "--show-grade", "--out", "screen.jsonl"]) == 0
    second = json.loads(Path("screen-log.json").read_text())
    assert second["blind"] is False and second["earlier"] == 4
    labelled = {(row["passage_id"], row["test_point_id"]) for row in map(json.loads, Path("line.jsonl").read_text().splitlines())}
    assert not labelled & {tuple(pair) for pair in second["pairs"]}


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
