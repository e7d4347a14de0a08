"""Crash safety, short version of benchmarks/kill_resume.py: SIGKILL the exam while it grades, check
the cache survived intact, resume, and compare the final reports with an uninterrupted run."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.paths import REPO

BENCHMARK = REPO / "benchmarks" / "kill_resume.py"
BATCH = 6


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kill_resume", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("kill_resume", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


kr = load_benchmark()
pytestmark = pytest.mark.slow  # a reference run and SIGKILLed trials of it, sharing one module fixture


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    # 4 queries x 5 test points x 6 passages = 120 pairs at 5 ms: grading spans ~0.6 s in 20 commits.
    project = kr.build_project(tmp_path_factory.mktemp("kill") / "project", kr.Shape(4, 5, 6), delay=0.005)
    return project, kr.run_reference(project, BATCH)


def test_reference_run_is_what_the_trials_are_compared_with(reference: tuple[Path, Any]) -> None:
    _project, ref = reference
    assert len(ref.rows) == 120
    report = json.loads((ref.reports / "exam-report.json").read_text())
    assert report["cache"]["graded"] == 120 and len(report["systems"]) == 3
    assert sorted(p.name for p in ref.reports.glob("*.qrels")) == [
        "exam-at-least-2-min4.qrels", "exam-count-min4.qrels", "exam-max-grade.qrels",
    ]


@pytest.mark.parametrize("after_batches", [2, 11])
def test_sigkill_while_grading_then_resume(reference: tuple[Path, Any], after_batches: int) -> None:
    project, ref = reference
    trial = kr.kill_trial(project, ref, after_batches, None, BATCH, kill_after_rows=after_batches * BATCH)
    assert trial.survived, trial.problems
    assert trial.phase == "grading", trial  # the kill landed between the first and the last commit
    assert trial.integrity == "ok" and trial.wrong_rows == 0 and not trial.partial_report
    # Whole batches only: each commit is one transaction.
    assert trial.rows_after_kill % BATCH == 0 and after_batches * BATCH <= trial.rows_after_kill < 120
    assert trial.resumed_hits == trial.rows_after_kill
    assert trial.resumed_graded == 120 - trial.rows_after_kill
    assert trial.reports_equal


def test_comparison_notices_a_different_report(reference: tuple[Path, Any], tmp_path: Path) -> None:
    """The equality check the trials rely on can fail: a changed grade changes the reports."""
    _project, ref = reference
    other = tmp_path / "other"
    other.mkdir()
    for path in ref.reports.iterdir():
        (other / path.name).write_bytes(path.read_bytes())
    assert kr.normalised_report(other) == kr.normalised_report(ref.reports)
    qrels = other / "exam-max-grade.qrels"
    first, *rest = qrels.read_text().splitlines()
    cols = first.split()
    cols[-1] = str((int(cols[-1]) + 1) % 6)
    qrels.write_text("\n".join([" ".join(cols), *rest]) + "\n")
    assert kr.qrels_files(other) != kr.qrels_files(ref.reports)
