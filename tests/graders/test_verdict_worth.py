"""What the offline grader's per-point verdicts are worth, stated beside its results (issue 30)."""

from __future__ import annotations

import json

import pytest

from exam_harness.core.models import GraderSpec
from exam_harness.graders.verdict_worth import SHIPPED_WORTH, required_warning, worth_line, worth_of
from tests.helpers import BANK

pytest_plugins = ["pytester"]

EMBEDDING = GraderSpec(name="embedding", version="5", options={"support_model": "abc"})


def test_the_shipped_model_states_its_measured_precision_and_recall() -> None:
    assert worth_of(EMBEDDING, "abc") is SHIPPED_WORTH
    line = worth_line(EMBEDDING, 4, SHIPPED_WORTH)
    assert line is not None and "precision 0.58, recall 0.60" in line and "sourdough_bank.json" in line


def test_a_refit_model_says_its_verdicts_are_not_measured() -> None:
    assert worth_of(EMBEDDING, "another") is None
    line = worth_line(EMBEDDING, 4, None)
    assert line is not None and "no measured precision or recall" in line


def test_required_points_judged_by_the_embedding_grader_alone_get_a_warning_naming_the_cascade() -> None:
    warning = required_warning(EMBEDDING, ["q1/a", "q2/b"], SHIPPED_WORTH)
    assert warning is not None and warning.startswith("WARNING: 2 required test points (q1/a, q2/b)")
    assert "--exam-grader cascade" in warning
    assert required_warning(EMBEDDING, [], SHIPPED_WORTH) is None
    assert required_warning(GraderSpec(name="openai", version="1"), ["q1/a"], SHIPPED_WORTH) is None
    assert worth_line(GraderSpec(name="openai", version="1"), 4, None) is None


def test_an_embedding_graded_session_states_the_worth_and_warns_for_required_points(
        project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    result = project.runpytest("banks", "--exam-grader", "embedding", "--exam-markdown", "summary.md")
    out = result.stdout.str()
    assert "note: the embedding grader's verdict on one test point is weak: precision 0.58, recall 0.60" in out
    result.stdout.fnmatch_lines(["WARNING: 1 required test points (q2/c) are judged only by the embedding grader*"
                                 "--exam-grader cascade*"])
    # a section of the result document (judge-notes), so the JSON and the markdown state it too
    notes = json.loads((project.path / "reports" / "exam-report.json").read_text())["sections"]["judge-notes"]
    assert notes["verdict_worth"][0].startswith("note: the embedding grader's verdict on one test point is weak")
    assert notes["verdict_worth"][1].startswith("WARNING: 1 required test points (q2/c)")
    markdown = (project.path / "summary.md").read_text()
    assert "precision 0.58, recall 0.60" in markdown and "1 required test points (q2/c)" in markdown


def test_another_graders_session_states_no_such_note(project: pytest.Pytester) -> None:
    out = project.runpytest("banks").stdout.str()
    assert "embedding grader" not in out and "cascade" not in out
    assert "judge-notes" not in json.loads((project.path / "reports" / "exam-report.json").read_text())["sections"]


def test_evaluate_states_the_worth_in_its_output_and_json(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The judge-notes section is computed by ``evaluate`` too: its output and its JSON state the worth and the
    warning for required points (evaluate has no per-run requirement: a required point is required)."""
    from exam_harness.cli import main

    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    monkeypatch.chdir(project.path)
    out = project.path / "evaluation.json"
    capsys.readouterr()
    assert main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "embedding", "--cache", "none", "--bootstrap", "0", "--no-progress",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the embedding grader's verdict on one test point is weak" in printed
    notes = json.loads(out.read_text())["sections"]["judge-notes"]
    assert notes["verdict_worth"][0].startswith("note: the embedding grader's verdict on one test point is weak")
    assert notes["verdict_worth"][-1].startswith("WARNING: 1 required test points (q2/c)")
