"""``exam-harness evaluate`` fires the event hooks a pytest session fires (issue 36): ``pytest_exam_grading_finished``
after grading and ``pytest_exam_report`` with its document once its files are written, and asks the plugins'
scoring inputs before any grading (a bad one stops it there)."""

from __future__ import annotations

import json

import pytest

from exam_harness.cli import main

pytest_plugins = ["pytester"]

EVENTS = '''

import json
from pathlib import Path

EVENTS = Path(__file__).parent / "events.jsonl"

def _log(**event):
    with EVENTS.open("a") as log:
        log.write(json.dumps(event) + "\\n")

def pytest_exam_grading_finished(plan, outcome):
    _log(hook="grading_finished", k=plan.k, graded=outcome.graded, written=Path("ev.json").exists())

def pytest_exam_report(report, plan):
    _log(hook="report", kind=report.kind, runs=sorted(s.run for s in report.systems), written=Path("ev.json").exists())

def pytest_exam_scoring_inputs(options, front, inputs):
    _log(hook="scoring_inputs", front=front, graded=Path("graded.log").exists())
'''

EVALUATE = ["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
            "--grader", "marker", "--cache", ".cache/grades.sqlite", "--bootstrap", "0", "--no-progress", "--k", "3"]


def events(project: pytest.Pytester) -> list[dict[str, object]]:
    return [json.loads(line) for line in (project.path / "events.jsonl").read_text().splitlines()]


def test_evaluate_fires_the_event_hooks_in_order(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makeconftest((project.path / "conftest.py").read_text() + EVENTS)
    monkeypatch.chdir(project.path)
    assert main([*EVALUATE, "--json", "ev.json"]) == 0
    graded = json.loads((project.path / "ev.json").read_text())["grading"]["graded"]
    assert graded > 0
    assert events(project) == [
        {"hook": "scoring_inputs", "front": "evaluate", "graded": False},  # before any pair is graded
        {"hook": "grading_finished", "k": 3, "graded": graded, "written": False},
        {"hook": "report", "kind": "evaluation", "runs": ["good", "weak"], "written": True},
    ]


def test_a_pytest_session_fires_the_same_hooks(project: pytest.Pytester) -> None:
    conftest = (project.path / "conftest.py").read_text()
    project.makeconftest(conftest + EVENTS.replace('"ev.json"', '"reports/exam-report.json"'))
    assert project.runpytest("banks", "--exam-k=3").ret == pytest.ExitCode.OK
    assert [e["hook"] for e in events(project)] == ["scoring_inputs", "grading_finished", "report"]
    assert events(project)[0] == {"hook": "scoring_inputs", "front": "pytest", "graded": False}
    assert events(project)[2]["kind"] == "exam-report" and events(project)[2]["written"] is True


BAD_INPUT = '''

from exam_harness.api import ConfigError

def pytest_exam_scoring_inputs(options, front, inputs):
    raise ConfigError("the sample input is bad")
'''


def test_a_bad_scoring_input_stops_either_front_end_before_grading(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project.makeconftest((project.path / "conftest.py").read_text() + BAD_INPUT)
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the sample input is bad*"])
    monkeypatch.chdir(project.path)
    assert main(EVALUATE) == 4
    assert "exam-harness evaluate: error: the sample input is bad" in capsys.readouterr().err
    assert not (project.path / "graded.log").exists()
