"""The significance feature (exam_harness/features/significance), the worked example of an in-tree feature: its
section and scoring input come through the hooks, registered by both front ends, and the documents are as
before (the section in its old place among the others)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import write_exam

pytest_plugins = ["pytester"]


def test_evaluate_s_document_holds_the_section_in_its_old_place(tmp_path: Path) -> None:
    path, official = write_exam(tmp_path / "data")
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(path), "--official", str(official), "--baseline", "A", "--min-answers", "1",
                 "--bootstrap", "0", "--no-progress", "--json", str(out)]) == 0
    sections = json.loads(out.read_text())["sections"]
    assert list(sections) == ["correlations", "significance", "agreement"]  # the registry order of before the move
    assert sections["significance"]["baseline"] == "A"
    assert {m["key"].split("@")[0] for m in sections["significance"]["measures"]} >= {"exam-cover", "n-exam-cover"}


def test_a_library_call_gets_the_in_tree_features_and_no_inputs_mean_no_section(tmp_path: Path) -> None:
    """``evaluate_exam`` called with no front end asks the in-tree features for their inputs (core/host.py);
    handed inputs without the feature's, the document has no significance section."""
    from exam_harness.config.options import ExamOptions
    from exam_harness.exam.plan import make_plan
    from exam_harness.grading.passes import replay
    from exam_harness.io import load_runs
    from exam_harness.report.evaluation import evaluate_exam, score_evaluation
    from exam_harness.results.scored import ScoringInputs

    path, _ = write_exam(tmp_path / "data")
    view, outcome, spec = replay(load_runs([path]).data)
    options = ExamOptions(baseline="A", bootstrap=0, k=2, min_grade=(3,))
    plan = make_plan(options, spec, several=True)
    scored = score_evaluation(view, outcome, plan, spec)
    assert "significance" in evaluate_exam(scored, spec, options).sections
    assert "significance" not in evaluate_exam(scored, spec, options, inputs=ScoringInputs()).sections


def test_both_front_ends_register_the_feature_before_other_plugins(project: pytest.Pytester) -> None:
    from exam_harness.extensions import cli_plugin_manager
    from exam_harness.features import FEATURES, PLUGIN_NAME

    names = [PLUGIN_NAME.format(name) for name in FEATURES]
    manager = cli_plugin_manager(project.path)
    assert all(manager.has_plugin(name) for name in names)
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + (
        "\n\ndef pytest_configure(config):\n"
        "    print('registered:', config.pluginmanager.has_plugin('exam-feature-significance'))\n"))
    project.runpytest("banks", "-s").stdout.fnmatch_lines(["registered: True"])
    project.runpytest("banks", "-s", "-p", "no:exam-feature-significance").stdout.fnmatch_lines(
        ["registered: False"])
