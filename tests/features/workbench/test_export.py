"""``evaluate --export-workbench FILE`` through the Workbench feature: the file name checked before anything is
read, the file written among evaluate's other outputs in the order it always was (after the plots, before the
markdown summary), never into the report set."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.io import load_runs
from tests.helpers import write_exam


def test_the_export_is_written_in_its_place_and_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    out = tmp_path / "out"
    code = main(["evaluate", str(exam), "--k", "2", "--bootstrap", "0", "--json", str(out / "doc.json"),
                 "--export-workbench", str(out / "wb.jsonl.gz"), "--markdown", str(out / "summary.md"),
                 "--report-dir", str(out / "set")])
    assert code == 0
    wrote = [line.removeprefix("wrote ") for line in capsys.readouterr().out.splitlines() if line.startswith("wrote ")]
    assert wrote[:3] == [str(out / "doc.json"), str(out / "wb.jsonl.gz"), str(out / "summary.md")]
    assert not any("workbench" in name for name in wrote[3:])  # the report set holds no Workbench file
    assert not list((out / "set").glob("workbench*"))
    assert load_runs([out / "wb.jsonl.gz"]).data.recorded == load_runs([exam]).data.recorded


def test_a_file_name_of_another_kind_is_refused_before_grading(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    code = main(["evaluate", str(exam), "--k", "2", "--export-workbench", str(tmp_path / "wb.json")])
    assert code == 4
    err = capsys.readouterr().err
    assert "a Workbench paragraph file must be written to .jsonl or .jsonl.gz" in err and "wb.json" in err
    assert not (tmp_path / "wb.json").exists()
