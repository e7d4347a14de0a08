"""Issue 31, finding 14: a regression gate on a measure the kept report (or this one) lacks is a failed
check naming what both reports hold, never a gate silently dropped (``--exam-compare-fail`` in pytest,
``compare --fail`` on the command line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main

pytest_plugins = ["pytester"]

@pytest.fixture
def report(project: pytest.Pytester) -> Path:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    return project.path / "reports" / "exam-report.json"


def test_compare_fail_on_a_measure_neither_report_holds_fails(report: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["compare", str(report), str(report), "--fail", "P_5:0.1"]) == 1
    err = capsys.readouterr().err
    for run in ("good", "weak"):
        assert f"FAIL run {run!r}: the allowed drop P@5:0.1 cannot be checked: 'P@5' is not in the reference" in err
    assert "measures both reports hold: " in err and "EXAM-Cover@20" in err


def test_compare_fail_on_a_held_measure_still_passes(report: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["compare", str(report), str(report), "--fail", "exam-cover:0.1"]) == 0
    assert "FAIL" not in capsys.readouterr().err


def test_pytest_gate_on_a_measure_the_kept_report_lacks_fails(project: pytest.Pytester) -> None:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    result = project.runpytest("banks", "--exam-compare", "--exam-compare-fail=P_5:0.05")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL run 'good': the allowed drop P@5:0.05 cannot be checked: 'P@5' is not in "
                                 "the reference 0001_main.json*"])
