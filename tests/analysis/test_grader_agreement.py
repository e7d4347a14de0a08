"""Agreement between two graders or two runs of one grader (issue 20, item 3): ``exam-harness analyze agreement
--grades A --grades B`` over two Workbench files (per pair) or two reports (per case): the confusion table,
Cohen's kappa on grades and verdicts, and per label its one-vs-rest table."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import tests.helpers as helpers
from exam_harness.cli import main
from exam_harness.features.agreement.graders import grader_agreement
from tests.paths import GOLDEN


def _kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa written out from its definition (independent of the harness's table code)."""
    n = len(a)
    labels = set(a) | set(b)
    observed = sum(x == y for x, y in zip(a, b)) / n
    expected = sum(a.count(label) * b.count(label) for label in labels) / (n * n)
    return (observed - expected) / (1 - expected)


def test_kappa_and_per_label_tables_on_known_grades() -> None:
    a = {"u1": 5, "u2": 5, "u3": 0, "u4": 3, "u5": 0, "u6": 4}
    b = {"u1": 5, "u2": 4, "u3": 0, "u4": 3, "u5": 5, "u7": 1}
    result = grader_agreement(a, b, name_a="A", name_b="B", unit="pair", min_grade=4)
    common = ["u1", "u2", "u3", "u4", "u5"]
    assert (result.common, result.only_a, result.only_b) == (5, 1, 1)
    assert result.kappa == pytest.approx(_kappa([a[u] for u in common], [b[u] for u in common]))
    assert result.observed == pytest.approx(3 / 5)
    assert result.confusion[5] == {0: 0, 3: 0, 4: 1, 5: 1} and result.confusion[0][5] == 1
    # verdicts at tau 4: A passes u1, u2; B passes u1, u2, u5
    assert result.verdicts == {1: {1: 2, 0: 0}, 0: {1: 1, 0: 2}}
    assert result.verdict_kappa == pytest.approx(_kappa([1, 1, 0, 0, 0], [1, 1, 0, 0, 1]))
    five = next(la for la in result.per_label if la.label == 5)
    assert (five.both, five.only_a, five.only_b, five.neither) == (1, 1, 1, 2)


def _workbench(folder: Path, changes: dict[tuple[str, str, str], int], monkeypatch: pytest.MonkeyPatch) -> Path:
    grades = copy.deepcopy(helpers.GRADES)
    for (q, p, t), g in changes.items():
        grades[q][p][t] = g
    monkeypatch.setattr(helpers, "GRADES", grades)
    path, _ = helpers.write_exam(folder)
    return path


def test_two_workbench_files_agree_per_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    first = _workbench(tmp_path / "a", {}, monkeypatch)
    second = _workbench(tmp_path / "b", {("q1", "p3", "a"): 5, ("q2", "p7", "b"): 0}, monkeypatch)
    out = tmp_path / "agreement.json"
    assert main(["analyze", "agreement", "--grades", str(first), "--grades", str(second), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    pairs = [(q, p, t) for q, by in helpers.GRADES.items() for p, ratings in by.items() for t in ratings]
    base = {(q, p, t): copy.deepcopy(g) for q, by in helpers.GRADES.items() for p, r in by.items() for t, g in r.items()}
    # helpers.GRADES is the second file's now; the first file's differ in the two changed pairs
    a = [3 if k == ("q1", "p3", "a") else 5 if k == ("q2", "p7", "b") else base[k] for k in pairs]
    b = [base[k] for k in pairs]
    assert result["unit"] == "pair" and result["common"] == len(pairs) == 20
    assert result["kappa"] == pytest.approx(_kappa(a, b))
    assert result["confusion"]["3"]["5"] == 1 and result["confusion"]["5"]["0"] == 1
    assert result["min_grade"] == 4
    shown = " ".join(capsys.readouterr().out.split())  # the table titles wrap to the console's width
    assert "Grades of A × grades of B (20 (passage, test point) pairs both graded" in shown
    assert "Per label, one against the rest" in shown


def test_grades_need_two_files_of_one_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    first = _workbench(tmp_path / "a", {}, monkeypatch)
    assert main(["analyze", "agreement", "--grades", str(first)]) != 0
    assert "--grades compares two files; 1 given" in capsys.readouterr().err
    report = tmp_path / "exam-report.json"
    golden = json.loads((GOLDEN / "exam-report.json").read_text())
    report.write_text(json.dumps({**golden, "tool_version": "0.1.0", "created": "2026-11-25T00:00:00+00:00"}))
    assert main(["analyze", "agreement", "--grades", str(first), "--grades", str(report)]) != 0
    assert "holds pair grades and" in capsys.readouterr().err
