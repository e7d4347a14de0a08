"""Issue 39, findings 6 and 14: ``exam-harness verdict`` never passes what no session writes. A gate that
checks nothing (a document with no run, a threshold naming a run it lacks, an allowed drop against a kept
report holding none of its runs, a baseline alone) is a failed check; a document listing a run twice, or
counting more fallback grades than a run holds, is not a document (exit 4, naming the field); and
``--compare`` naming what is not a kept report (a FIFO, a history folder that is a file, a path that is no
report) is a usage error, never a warning with the ``--compare-fail`` gate left unchecked."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main

pytest_plugins = ["pytester"]


@pytest.fixture
def report(project: pytest.Pytester) -> Path:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    return project.path / "reports" / "exam-report.json"


def _edited(path: Path, target: Path, edit: Any) -> Path:
    document = json.loads(path.read_text())
    edit(document)
    target.write_text(json.dumps(document))
    return target


def _verdict(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verdict", *args])
    said = capsys.readouterr()
    return code, said.out + said.err


def _no_runs(doc: dict[str, Any]) -> None:
    doc["systems"], doc["per_query"], doc["outcomes"] = [], [], []


def test_a_threshold_over_a_document_with_no_run_fails(report: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    empty = _edited(report, tmp_path / "empty.json", _no_runs)
    code, said = _verdict(capsys, str(empty), "--fail-under=0.7")
    assert code == 1, said
    assert "FAIL the threshold exam-cover:0.7 checks nothing: it applies to no run of the document" in said
    assert "verdict: failed (1 check, 1 failed)" in said


def test_a_threshold_naming_a_run_the_document_lacks_fails(report: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, said = _verdict(capsys, str(report), "--fail-under=0.1", "--fail-under=gone=0.5")
    assert code == 1, said
    assert "FAIL the threshold gone=exam-cover:0.5 checks nothing: the document holds no run 'gone'" in said


def test_a_run_listed_twice_is_not_a_document(report: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def twice(doc: dict[str, Any]) -> None:
        weak = next(s for s in doc["systems"] if s["run"] == "weak")
        better = json.loads(json.dumps(weak))
        for score in better["scores"].values():
            score["mean"] = 0.95
        doc["systems"].append(better)

    code, said = _verdict(capsys, str(_edited(report, tmp_path / "twice.json", twice)), "--fail-under=0.7")
    assert code == 4, said
    assert "run 'weak' is listed twice" in said and "systems" in said


def test_a_per_query_row_listed_twice_is_not_a_document(report: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    def twice(doc: dict[str, Any]) -> None:
        doc["per_query"].append(doc["per_query"][0])

    code, said = _verdict(capsys, str(_edited(report, tmp_path / "twice.json", twice)))
    assert code == 4 and "is listed twice" in said, said


def test_more_fallback_grades_than_grades_is_not_a_document(report: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    def inflated(doc: dict[str, Any]) -> None:
        doc["systems"][0]["fallbacks"] = 10**9

    code, said = _verdict(capsys, str(_edited(report, tmp_path / "fallbacks.json", inflated)))
    assert code == 4, said
    assert "counts 1000000000 grades read by a fallback rule, more than the" in said


def test_compare_fail_against_a_kept_report_with_no_run_in_common_fails(report: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    def renamed(doc: dict[str, Any]) -> None:
        for row in (*doc["systems"], *doc["per_query"], *doc["outcomes"]):
            row["run"] = "old-" + row["run"]

    kept = _edited(report, tmp_path / "kept.json", renamed)
    code, said = _verdict(capsys, str(report), f"--compare={kept}", "--compare-fail=exam-cover:0.1")
    assert code == 1, said
    assert ("FAIL the allowed drop exam-cover:0.1 checks nothing: the reference kept.json holds none of the "
            "document's runs") in said


def test_a_baseline_with_no_other_run_fails(report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def alone(doc: dict[str, Any]) -> None:
        doc["systems"] = [s for s in doc["systems"] if s["run"] == "good"]
        doc["per_query"] = [r for r in doc["per_query"] if r["run"] == "good"]
        doc["outcomes"] = [o for o in doc["outcomes"] if o["run"] == "good"]

    code, said = _verdict(capsys, str(_edited(report, tmp_path / "alone.json", alone)), "--baseline=good")
    assert code == 1, said
    assert "FAIL the baseline 'good' checks nothing" in said


# --- what --compare names (finding 14) ----------------------------------------------------------------


def test_a_kept_report_that_is_a_fifo_is_a_usage_error(report: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = report.parent.parent / ".exam-history"  # the default --history-dir, beside the project's reports
    history.mkdir()
    os.mkfifo(history / "0001_main.json")
    code, said = _verdict(capsys, str(report), "--compare=main", "--compare-fail=exam-cover:0.1")
    assert code == 4, said
    assert "0001_main.json is not a regular file" in said


def test_a_history_folder_that_is_a_file_is_a_usage_error(report: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "history").write_text("not a folder")
    code, said = _verdict(capsys, str(report), f"--history-dir={tmp_path / 'history'}", "--compare=latest",
                          "--compare-fail=exam-cover:0.1")
    assert code == 4, said
    assert "is not a folder" in said


@pytest.mark.parametrize("ref", ["../../etc/passwd", "/etc/passwd", "no-such-dir/kept.json"])
def test_compare_naming_a_path_that_is_no_kept_report_is_a_usage_error(
        report: Path, capsys: pytest.CaptureFixture[str], ref: str) -> None:
    code, said = _verdict(capsys, str(report), f"--compare={ref}", "--compare-fail=exam-cover:0.1")
    assert code == 4, said
    assert "not compared" not in said
