"""Issue 39, finding 8: a FIFO (or any file that is not a regular one) given as an input is refused by the
one opening every input goes through (io/textio.py ``open_binary``), never waited on: ``exam-harness
verdict``, ``evaluate --assignments``, ``analyze agreement --team-labels`` and a vllm batch job's output.

Each call runs in a thread with a deadline (tests/io/support.py ``finished``): before the fix it blocked in ``open()`` until something wrote
to the FIFO, so the test opens the FIFO's write end to let it go and fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.io.textio import iter_lines, read_bytes
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, write_bank, write_exam
from tests.io.support import finished


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_the_one_opening_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "bank.json")
    with pytest.raises(InputError, match="is not a regular file"):
        finished(lambda: read_bytes(fifo), fifo)
    gz = _fifo(tmp_path / "run.gz")
    with pytest.raises(InputError, match="is not a regular file"):
        finished(lambda: list(iter_lines(gz)), gz)
    with pytest.raises(InputError, match="is a folder"):
        read_bytes(tmp_path)


def test_verdict_on_a_fifo_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = _fifo(tmp_path / "exam-report.json")
    assert finished(lambda: main(["verdict", str(fifo), "--fail-under=0.5"]), fifo) == 4
    assert "is not a regular file" in capsys.readouterr().err


def test_evaluate_assignments_from_a_fifo_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = _fifo(tmp_path / "run.assignments.jsonl")
    assert finished(lambda: main(["evaluate", "--assignments", str(fifo)]), fifo) == 4
    assert "is not a regular file" in capsys.readouterr().err


def test_team_labels_from_a_fifo_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)
    monkeypatch.chdir(tmp_path)
    fifo = _fifo(tmp_path / "labels.jsonl")
    args = ["analyze", "agreement", str(exam), "--bank", str(bank), "--grader", "keyword", "--cache",
            str(tmp_path / "c.sqlite"), "--no-progress", "--team-labels", str(fifo)]
    assert finished(lambda: main(args), fifo) == 4
    assert "is not a regular file" in capsys.readouterr().err


def test_a_vllm_batch_output_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from exam_harness.llm.batch import BatchJob, BatchState, outputs

    state = BatchState(tmp_path / "grades.sqlite")
    state.folder.mkdir()
    job = BatchJob("20250101T000000-0001.requests.jsonl", "vllm", "/v1/chat/completions", ["0" * 64])
    fifo = _fifo(state.output_path(job))
    with pytest.raises(InputError, match="is not a regular file"):
        finished(lambda: outputs(None, state, job), fifo)
