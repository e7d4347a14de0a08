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
