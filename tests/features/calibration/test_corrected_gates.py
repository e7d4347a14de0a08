"""A gate on a corrected score (issue 35, item 3): ``--exam-fail-under exam-cover.corrected:X`` and
``exam-cover.corrected-low:X`` are parsed, checked on the calibration section, decided alike by the session
and ``exam-harness verdict`` on its report, and fail saying why where the report has no corrected score."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.config.gates import parse_threshold
from tests.helpers import COLLECTION

pytest_plugins = ["pytester"]

EXAM_HARNESS = str(Path(sys.executable).parent / "exam-harness")
RUNS = ["runs/collection.tsv", "runs/good.run", "runs/weak.run"]


def test_the_corrected_gates_are_gate_figures_of_the_threshold_syntax() -> None:
    from exam_harness.features.calibration.figures import FIGURES

    gate = parse_threshold("good=exam-cover.corrected-low:0.6")
    assert (gate.run, gate.measure, gate.value) == ("good", "exam-cover.corrected-low", 0.6)
    assert {f.name for f in FIGURES} == {f"{family}.corrected{low}" for family in ("exam-cover", "n-exam-cover",
                                                                                   "nugget-f") for low in ("", "-low")}
    with pytest.raises(ValueError, match="another measure"):
        parse_threshold("exam-cover.corrected:0.5@2of3")


TEXTS = dict(line.split("\t") for line in COLLECTION.splitlines()[1:])


@pytest.fixture
def labelled(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The marker project, every test point labelled through exam-harness label by a team that agrees with the
    judge (a passage answers the test point whose marker it holds) except on q1/b, which it finds answered by
    no passage."""
    from exam_harness.analysis import labels as labels_module
    from exam_harness.analysis.labels import Label

    def team(pairs: Sequence[tuple[str, str]], query_of: Mapping[str, str], *_: Any) -> list[Label]:
        return [Label(query_of[tp], tp, pid, tp != "q1/b" and f"[{tp.split('/')[1]}]" in TEXTS[pid])
                for pid, tp in pairs]

    monkeypatch.chdir(project.path)
    monkeypatch.setattr(labels_module, "label_loop", team)
    assert main(["label", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker", "--cache", ".cache/grades.sqlite",
                 "--no-progress", "--unit", "test-point", "--size", "10"]) == 0
    return project


def _gates(report: Path) -> dict[str, dict[str, object]]:
    checks = json.loads(report.read_text())["verdict"]["gates"]
    return {f"{c['run']} {c['measure']}": c for c in checks if c["gate"] == "exam-fail-under"}


def test_a_corrected_gate_decides_alike_in_the_session_and_in_verdict(labelled: pytest.Pytester) -> None:
    result = labelled.runpytest("banks", "-p", "no:cacheprovider", "--exam-team-labels=labels.jsonl",
                                "--exam-fail-under=good=exam-cover.corrected:0.9",
                                "--exam-fail-under=good=exam-cover:0.9",
                                "--exam-fail-under=weak=exam-cover.corrected-low:0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = labelled.path / "reports" / "exam-report.json"
    gates = _gates(report)
    # the judge gives good 1.0; the labels, every test point labelled, take q1/b away: 2 of 3 in q1, 1 in q2
    assert gates["good exam-cover"]["passed"] and gates["good exam-cover"]["value"] == pytest.approx(1.0)
    corrected = gates["good exam-cover.corrected"]
    assert not corrected["passed"] and corrected["value"] == pytest.approx((2 / 3 + 1) / 2)
    assert "EXAM-Cover corrected by the team's labels of 0.9 not reached" in str(corrected["message"])
    assert gates["weak exam-cover.corrected-low"]["passed"]
    verdict = labelled.run(EXAM_HARNESS, "verdict", str(report), "--fail-under", "good=exam-cover.corrected:0.9",
                           "--fail-under", "good=exam-cover:0.9", "--fail-under",
                           "weak=exam-cover.corrected-low:0.1")
    assert verdict.ret == 1
    assert "corrected by the team's labels" in verdict.stdout.str()


def test_a_corrected_gate_without_team_labels_fails_saying_why(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "-p", "no:cacheprovider", "--exam-fail-under=exam-cover.corrected-low:0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gate = _gates(project.path / "reports" / "exam-report.json")["good exam-cover.corrected-low"]
    assert not gate["passed"] and "the document's 'calibration' section holds none" in str(gate["message"])
