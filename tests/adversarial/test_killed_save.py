"""Issue 31, finding 21: ``--exam-save`` killed while it writes leaves its temp file in ``.exam-history``
(and ``git add`` would commit it); the next save removes it, and kept reports never include it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from exam_harness.results.history import entries

pytest_plugins = ["pytester"]

# Writes the start of a kept report through the writer --exam-save uses, then hangs until killed.
KILLED_WRITER = """
import sys, time
from pathlib import Path
from exam_harness.io.textio import create_exclusive

def pieces():
    yield b'{"systems": ['
    print("writing", flush=True)
    time.sleep(60)
    yield b']}'

create_exclusive(Path(sys.argv[1]), pieces())
"""


def test_a_killed_save_leaves_no_temp_file_behind(project: pytest.Pytester) -> None:
    history = project.path / ".exam-history"
    history.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(history / "0001_main.json")],
                          stdout=subprocess.PIPE, text=True, env=env) as writer:  # closes its pipe on the way out
        try:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=10)
    left = [p.name for p in history.iterdir()]
    assert len(left) == 1 and left[0].startswith(".0001_main.json.") and left[0].endswith(".tmp")
    assert entries(history) == []  # never read as a kept report

    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    assert sorted(p.name for p in history.iterdir()) == ["0001_main.json"]


def test_a_users_own_hidden_file_is_left_alone(project: pytest.Pytester) -> None:
    history = project.path / ".exam-history"
    history.mkdir()
    (history / ".notes.tmp").write_text("mine")
    (history / ".gitkeep").write_text("")
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    assert sorted(p.name for p in history.iterdir()) == [".gitkeep", ".notes.tmp", "0001_main.json"]
    assert Path(history / ".notes.tmp").read_text() == "mine"
