"""The real commands in a real terminal: ``exam-harness view`` and ``exam-harness label`` in tmux at 80×24, keys
sent with send-keys, the screen read with capture-pane (issue 40: tested in tmux, as over ssh).

tmux is a system package: without it these tests skip, but under ``CI=true`` they fail (.ci/run installs it).
Each test starts its own tmux server on its own socket and kills only that server.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.features.view.example import Example
from tests.features.view.support import LINE_KEY, tmux_binary
from tests.features.view.viewing import flat

WAIT = 120.0  # seconds a screen may take to show what is awaited (the label command loads its inputs first)


def exam_harness() -> str:
    script = Path(sys.executable).parent / "exam-harness"
    assert script.exists(), f"the exam-harness command is not installed beside {sys.executable}"
    return str(script)


class Terminal:
    """One tmux session at 80×24 running one command in ``cwd``."""

    def __init__(self, socket: Path, command: str, cwd: Path) -> None:
        self.tmux = [tmux_binary(), "-S", str(socket)]
        # the command's exit status stays on the screen after it ends
        shell = f"{command}; echo EXIT=$?; sleep 600"
        self.run("new-session", "-d", "-s", "exam", "-x", "80", "-y", "24", "-c", str(cwd), shell)

    def run(self, *args: str) -> str:
        done = subprocess.run([*self.tmux, *args], capture_output=True, text=True, timeout=30, check=True)
        return done.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.run("send-keys", "-t", "exam", key)

    @property
    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "exam")

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            shown = self.screen
            if text in flat(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=30, check=False)


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_view_in_tmux_why_weak_ranker_missed_and_what_flipped(example: Example, terminals: list[Terminal],
                                                             tmp_path: Path) -> None:
    """Done when (issue 40), in a terminal: the missed point's best passage, grade and reason; the flips."""
    import json

    from tests.features.view.support import MISSED_POINT, outcome_of

    report = json.loads(example.report.read_text())
    missed = outcome_of(report, "weak-ranker", MISSED_POINT)
    command = f"{shlex.quote(exam_harness())} view reports/exam-report.json"
    terminal = Terminal(tmp_path / "tmux.sock", command, example.root)
    terminals.append(terminal)
    board = terminal.wait_for("verdict: PASSED")
    rows = [line.split()[0] for line in board.splitlines() if line.strip().startswith(
        ("strong-ranker", "weak-ranker", "rag-generator"))]
    terminal.keys(*["Down"] * rows.index("weak-ranker"), "Enter")
    queries = terminal.wait_for("run weak-ranker · its queries")
    listed = [line.split()[0] for line in queries.splitlines()[2:] if line.split()[:1] and
              line.split()[0] in ("tides", "vaccines", "sky", "photosynthesis")]
    terminal.keys(*["Down"] * listed.index("tides"), "Enter")
    points = terminal.wait_for("query tides · test points")
    ids = [line.split()[2] for line in points.splitlines() if "tides/" in line and line.split()[0] in
           ("missed", "answered", "required-missed")]
    terminal.keys(*["Down"] * ids.index(MISSED_POINT), "Enter")
    why = flat(terminal.wait_for("decided by embedding"))  # the pairs are in: the best one is highlighted
    assert f"best passage: {missed['best_passage']}, grade {missed['best_grade']}" in why
    assert flat(missed["reason"])[:60] in why
    terminal.keys("f")
    flips = terminal.wait_for("flipped test points against 0001_before.json")
    assert flips.count("answered → missed") == len(report["sections"]["flips"]["flips"])
    assert "before: answered" in flips and "now: missed" in flips
    terminal.keys("q")
    terminal.wait_for("EXIT=0")


def test_label_in_tmux_writes_the_line_prompt_s_file(example: Example, terminals: list[Terminal],
                                                    tmp_path: Path) -> None:
    """Done when (issue 40): 40 pairs labelled on the screen of the real command write the file the line prompt
    writes for the same answers, the sample's strata and inclusion probabilities too (an unsure answer, m, leaves
    the pair unlabelled, as a skip); blind by default."""
    from exam_harness.analysis.label_file import read_label_file, samples_of

    keys = [("y", "n", "m", "s", "y", "n")[i % 6] for i in range(40)]
    keys[8:8] = ["u", "y"]  # an undo, and the pair answered again
    command = [exam_harness(), "label", "runs", "--bank", "banks/example.yaml", "--size", "40"]
    line = subprocess.run([*command, "--out", str(tmp_path / "line.jsonl")], cwd=example.root, text=True,
                          input="".join(LINE_KEY[k] + "\n" for k in keys), capture_output=True, timeout=600)
    assert line.returncode == 0, line.stderr
    assert "[40/40]" in line.stdout  # a sample of 40 pairs

    shell = " ".join(shlex.quote(part) for part in [*command, "--out", str(tmp_path / "screen.jsonl")])
    terminal = Terminal(tmp_path / "tmux.sock", shell, example.root)
    terminals.append(terminal)
    first = terminal.wait_for("pair 1 of 40")
    assert "blind (the judge's grade is hidden)" in flat(first) and "grade" not in flat(first).replace(
        "the judge's grade is hidden", "")
    for i, key in enumerate(keys):
        terminal.keys(key)
        if i % 10 == 9:  # keep pace with the screen
            at = answered(keys[: i + 1])
            terminal.wait_for(f"pair {len(at) + 1} of 40" if len(at) < 40 else "all 40 pairs done")
    terminal.wait_for("all 40 pairs done")
    terminal.keys("q")
    terminal.wait_for("EXIT=0")
    assert (tmp_path / "screen.jsonl").read_bytes() == (tmp_path / "line.jsonl").read_bytes()
    labels = read_label_file(tmp_path / "screen.jsonl")
    assert len(labels) == sum(k in ("y", "n") for k in answered(keys))
    (sample,) = samples_of(labels).values()
    assert sample.labelled == len(labels) and all(label.inclusion is not None for label in labels)


def answered(keys: list[str]) -> list[str]:
    """The answers standing after ``keys`` (an undo takes the last one back)."""
    steps: list[str] = []
    for key in keys:
        if key == "u":
            steps.pop()
        else:
            steps.append(key)
    return steps
