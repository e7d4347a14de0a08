"""Golden-file tests of the reports: the JSON report and qrels of a fixed exam must not drift.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/report/test_reports_golden.py``
and review the diff like code.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.paths import GOLDEN

pytest_plugins = ["pytester"]
VOLATILE = ("created", "tool_version")


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    for key in VOLATILE:
        report.pop(key)
    report["cache"]["grading_seconds"] = 0.0
    return report


def _check(name: str, text: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"missing golden file {golden}; run with UPDATE_GOLDEN=1 once"
    assert text == golden.read_text(), f"{name} differs from its golden file (UPDATE_GOLDEN=1 to accept)"


def test_json_report_matches_golden(project: pytest.Pytester) -> None:
    project.runpytest("banks", "--exam-cache", "none")
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    _check("exam-report.json", json.dumps(_stable(report), indent=2, sort_keys=True) + "\n")


@pytest.mark.parametrize("name", ["exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels"])
def test_qrels_match_golden(project: pytest.Pytester, name: str) -> None:
    project.runpytest("banks", "--exam-cache", "none")
    _check(name, (project.path / "reports" / name).read_text())


def test_reports_are_identical_cold_and_warm(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    cold = {p.name: p.read_text() for p in (project.path / "reports").iterdir() if not p.name.startswith(".")}
    project.runpytest("banks")
    warm = {p.name: p.read_text() for p in (project.path / "reports").iterdir() if not p.name.startswith(".")}
    for name in cold:
        if name.endswith(".json"):
            a, b = json.loads(cold[name]), json.loads(warm[name])
            for r in (a, b):
                _stable(r)
                r.pop("cache")
            assert a == b
        else:
            assert cold[name] == warm[name]


def test_metadata_changes_no_cache_key_score_or_report(project: pytest.Pytester) -> None:
    """Test points' and banks' free-form metadata is read by no grader, cache key or measure: after it is added to
    every test point and every bank, a warm run grades nothing (every pair a cache hit), and the report is the
    golden one."""
    from exam_harness.io.banks import load_bank
    from exam_harness.io.handbank import write_bank_yaml

    project.runpytest("banks")
    cold = json.loads((project.path / "reports" / "exam-report.json").read_text())
    asked = (project.path / "graded.log").read_text()
    bank = project.path / "banks" / "exam.yaml"
    write_bank_yaml(bank, [b.model_copy(update={"metadata": {"creator": "NIST", "full_query": {"title": b.key}},
                                                "test_points": tuple(tp.model_copy(update={"metadata": {
        "reasoning": f"why {tp.id}", "trace": [1, {"k": None}]}}) for tp in b.test_points)}) for b in load_bank(bank)])
    assert "reasoning: why q1/a" in bank.read_text() and "creator: NIST" in bank.read_text()
    project.runpytest("banks")
    warm = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert warm["cache"]["misses"] == 0 and warm["cache"]["hits"] == warm["cache"]["pairs"] > 0
    assert (project.path / "graded.log").read_text() == asked  # the grader was asked nothing again
    for report in (cold, warm):
        _stable(report).pop("cache")
    assert warm == cold
    project.runpytest("banks", "--exam-cache", "none")
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    _check("exam-report.json", json.dumps(_stable(report), indent=2, sort_keys=True) + "\n")
