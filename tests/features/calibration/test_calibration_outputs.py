"""The calibration section the way a user sees it (issue 35, items 2 and 3): a pytest session given
``--exam-team-labels`` and ``exam-harness evaluate --team-labels`` show every judge's figures and each score
beside its corrected one, in the terminal, the JSON report, markdown and HTML; a bad label file stops the
session before a pair is graded."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main

pytest_plugins = ["pytester"]

EXAM_HARNESS = str(Path(sys.executable).parent / "exam-harness")
RUNS = ["runs/collection.tsv", "runs/good.run", "runs/weak.run"]


@pytest.fixture
def labelled(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The marker project with every test point labelled as answered by no passage (the team disagrees with
    every pass of the judge), through exam-harness label."""
    monkeypatch.chdir(project.path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n" * 40))
    assert main(["label", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker", "--cache", ".cache/grades.sqlite",
                 "--no-progress", "--unit", "test-point", "--size", "10"]) == 0
    (project.path / "graded.log").unlink()
    return project


def _calibration(document: dict[str, Any]) -> dict[str, Any]:
    content: dict[str, Any] = document["sections"]["calibration"]
    return content


def test_a_pytest_session_shows_the_calibration_in_every_output(labelled: pytest.Pytester) -> None:
    # once mode: the marker project's live system is called, whatever CI's default of replay says
    result = labelled.runpytest("banks", "-p", "no:cacheprovider", "--exam-system-mode=once",
                                "--exam-team-labels=labels.jsonl",
                                "--exam-markdown=summary.md", "--exam-html=html")
    printed = result.stdout.str()
    assert "Judges against the team's labels labels.jsonl" in printed and "test-points/seed=0/" in printed
    assert "Corrected scores at grade ≥ 4" in printed
    content = _calibration(json.loads((labelled.path / "reports" / "exam-report.json").read_text()))
    assert content["design"]["unit"] == "test-point" and content["design"]["labelled"] == 4
    (judge,) = content["judges"]
    assert judge["judge"] == "marker" and judge["first"] and judge["figures"]["precision"]["value"] == 0.0
    cover = next(c for c in content["corrected"] if c["key"].startswith("exam-cover"))
    # every test point is labelled, none answered: the corrected score is the labels' own, 0, with no spread
    assert cover["runs"]["good"]["raw"] == pytest.approx(1.0)
    assert cover["runs"]["good"] == {"raw": pytest.approx(1.0), "corrected": 0.0, "low": 0.0, "high": 0.0}
    markdown = (labelled.path / "summary.md").read_text()
    assert "### Calibration against the team's labels" in markdown
    assert "| good | EXAM-Cover@20 (τ=4) | 1.000 | 0.000 | [0.000, 0.000] |" in markdown
    page = (labelled.path / "html" / "index.html").read_text()
    assert 'id="calibration"' in page and "Corrected scores at grade" in page


@pytest.mark.slow
def test_evaluate_shows_the_calibration_in_its_outputs(labelled: pytest.Pytester) -> None:
    result = labelled.run(EXAM_HARNESS, "evaluate", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker",
                          "--cache", ".cache/grades.sqlite", "--no-progress", "--report-dir", "none",
                          "--team-labels", "labels.jsonl", "--json", "evaluation.json", "--markdown", "summary.md",
                          "--html", "html")
    assert result.ret == 0, result.stderr.str()
    printed = result.stdout.str()
    assert "Judges against the team's labels labels.jsonl" in printed and "Corrected scores at grade ≥ 4" in printed
    content = _calibration(json.loads((labelled.path / "evaluation.json").read_text()))
    cover = next(c for c in content["corrected"] if c["key"].startswith("exam-cover"))
    assert cover["runs"]["weak"]["corrected"] == 0.0 and cover["runs"]["weak"]["raw"] > 0
    assert "Corrected scores at grade ≥ 4" in (labelled.path / "summary.md").read_text()
    assert "Corrected scores at grade ≥ 4" in (labelled.path / "html" / "index.html").read_text()
    assert not (labelled.path / "graded.log").exists()  # every grade from the cache


def test_a_bad_label_file_stops_the_session_before_a_pair_is_graded(project: pytest.Pytester) -> None:
    (project.path / "labels.jsonl").write_text('{"test_point_id": "q1/a", "passage_id": "p1", "label": "yes"}\n')
    result = project.runpytest("banks", "-p", "no:cacheprovider", "--exam-team-labels=labels.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "labels.jsonl:1: field 'label' is not a bool" in result.stderr.str()
    assert not (project.path / "graded.log").exists()


def test_analyze_agreement_adds_the_weighted_calibration_to_its_outputs(
        labelled: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "agreement", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker", "--cache",
                 ".cache/grades.sqlite", "--no-progress", "--team-labels", "labels.jsonl", "--json", "a.json"]) == 0
    printed = capsys.readouterr().out
    assert "marker against labels.jsonl (11 labelled pairs graded, grade >= 4)" in printed  # the old line stays
    assert "Judges against the team's labels labels.jsonl" in printed
    doc = json.loads((labelled.path / "a.json").read_text())
    assert doc["pairs"] == 11 and doc["grader"] == "marker"  # the old keys stay
    assert doc["calibration"]["design"]["unit"] == "test-point"
    assert doc["calibration"]["judges"][0]["figures"]["precision"]["value"] == 0.0
    assert "Corrected scores at grade ≥ 4" in printed  # the section as every output shows it
