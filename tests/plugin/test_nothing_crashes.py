"""Items of issue 21 that used to crash or mislead: Ctrl-C while the terminal summary prints, a saved
report with NaN shown by ``exam-harness leaderboard`` with exit 0, a grade cache whose schema value was
edited called another program's database, and a full disk reported as SQLITE_IOERR_SHMSIZE."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import namedtuple
from pathlib import Path

import pytest

import tests.paths as tests_paths
from exam_harness.cli import main
from exam_harness.core.errors import ConfigError
from exam_harness.grading import cache as cache_module
from exam_harness.grading.cache import GradeCache

pytest_plugins = ["pytester"]

GOLDEN = tests_paths.GOLDEN / "exam-report.json"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.25, "0.5"], ids=["nan", "inf", "negative", "string"])
def test_leaderboard_refuses_a_report_with_a_bad_score(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object) -> None:
    raw = json.loads(GOLDEN.read_text())
    raw.update(tool_version="0", created="2026-01-01T00:00:00Z")
    raw["systems"][1]["n_exam_cover"] = value
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(raw))
    assert main(["leaderboard", str(path)]) == 4
    captured = capsys.readouterr()
    assert "systems.1.n_exam_cover" in captured.err and "nan" not in captured.out.lower()


@pytest.mark.parametrize("schema", ["banana", "", "2.0", "-1"])
def test_a_grade_cache_with_an_edited_schema_value_is_not_called_foreign(tmp_path: Path, schema: str) -> None:
    path = tmp_path / "grades.sqlite"
    made = GradeCache(path)
    made.put_rows([])  # a cache file is made with the first store
    made.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value=? WHERE key='schema'", (schema,))
    before = path.read_bytes()
    with pytest.raises(ConfigError) as caught:
        GradeCache(path)
    message = str(caught.value)
    assert "has the tables of a grade cache but the schema value" in message and repr(schema) in message
    assert "another program" not in message and f"{path}.damaged" in message
    assert path.read_bytes() == before


def test_an_io_error_on_a_full_disk_is_said_to_be_a_full_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _folder: usage(10, 10, 4096))
    cause = cache_module._sqlite_cause(error, tmp_path)
    assert cause.startswith("the disk is full (0.0 MiB free; ") and "SQLITE_IOERR_SHMSIZE" in cause
    monkeypatch.setattr(shutil, "disk_usage", lambda _folder: usage(10, 10, 10 << 30))
    assert cache_module._sqlite_cause(error, tmp_path) == "sqlite: disk I/O error, SQLITE_IOERR_SHMSIZE"


def test_a_write_failing_on_a_full_disk_advises_freeing_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    grade_cache = GradeCache(tmp_path / "grades.sqlite", notify=said.append)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _folder: usage(10, 10, 0))
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_WRITE"
    grade_cache._write_failed(error)
    text = grade_cache.write_error or ""
    assert said == [text] and "the disk is full" in text and "free disk space" in text
    grade_cache.close()


INTERRUPTING_CONFTEST = '''
import exam_harness.report.terminal as terminal

def pytest_configure(config):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    config._saved_render = terminal.render_summary
    terminal.render_summary = interrupted

def pytest_unconfigure(config):
    terminal.render_summary = config._saved_render
'''


def test_ctrl_c_while_the_summary_prints_ends_as_an_interrupted_session(project: pytest.Pytester) -> None:
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text() + INTERRUPTING_CONFTEST)
    result = project.runpytest_subprocess("banks")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*! KeyboardInterrupt !*", "interrupted while printing the summary; the reports are "
                                 "whole: reports/*exam-report.json*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert {s["run"] for s in report["systems"]} == {"good", "weak"}
