"""Built once (issue 26, item 3): the pytest session and ``exam-harness evaluate`` score the exam with one
function (results/scoring.py) and build the document's measures, result core and sections with one builder
(report/core.py: build), so the same inputs give the same document from both front ends, the envelopes' own
fields aside (tests/realdata/test_built_once_dl19.py: the same on DL19's recorded grades)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from exam_harness.cli import main
from tests.features.live_systems.support import example as example  # the example project fixture
from tests.report.support import _core

pytest_plugins = ["pytester"]

def _evaluate(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *extra: str) -> dict[str, Any]:
    monkeypatch.chdir(project.path)  # the CLI loads ./conftest.py (the marker grader), as pytest does
    out = project.path / "evaluation.json"
    assert main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "marker", "--cache", ".cache/grades.sqlite", "--per-query", "--bootstrap", "0",
                 "--no-progress", "--json", str(out), *extra]) == 0
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def test_pytest_and_evaluate_give_the_same_results_and_sections(project: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Same bank, runs, grader, k and tau: the same measures (defaults included: alpha-nDCG in both), the
    same scores per run and per query, the same incomplete markers and the same sections, field by field."""
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    evaluation = _evaluate(project, monkeypatch)
    assert [m["name"] for m in report["measures"]] == [m["name"] for m in evaluation["measures"]]
    assert any(m["name"].startswith("alpha-ndcg") for m in report["measures"])  # the one default
    assert _core(report) == _core(evaluation)


def test_a_plugin_section_is_computed_the_same_way_by_both(project: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import CONFTEST
    from tests.report.support import PLUGIN

    project.makeconftest(CONFTEST + PLUGIN)
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    evaluation = _evaluate(project, monkeypatch)
    assert report["sections"] == evaluation["sections"] != {}
    assert _core(report) == _core(evaluation)


def test_a_live_systems_failed_query_and_costs_reach_evaluate_as_in_pytest(example: pytest.Pytester,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A declared system fails on one query; ``evaluate`` over the runs folder it recorded into reads the
    system's manifest beside its run: the query is incomplete for that run, and the system-costs section
    holds its latency, as in the pytest session's report. Both documents are equal field by field."""
    from tests.features.live_systems.support import conftest, exam

    example.makeconftest(conftest(body="""if query.id == 'sky':
        raise ConnectionError('index shard 3 is down')"""))
    session = exam(example)
    assert session.ret == pytest.ExitCode.TESTS_FAILED  # the failed query's cases err
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    monkeypatch.chdir(example.path)  # the CLI loads ./conftest.py (the lexical grader), as pytest does
    out = example.path / "evaluation.json"
    try:
        assert main(["evaluate", "runs", "--bank", "banks/example.yaml", "--grader", "lexical", "--cache", "none",
                     "--per-query", "--bootstrap", "0", "--no-progress", "--json", str(out)]) == 0
    finally:
        # evaluate imports ./conftest.py, declaring its system in this process: forget it, as a session's end
        # does (a later in-process session would call it)
        from exam_harness.features.live_systems import declare

        declare.clear()
    evaluation = json.loads(out.read_text())
    incomplete = {s["run"]: s["incomplete_queries"] for s in evaluation["systems"]}
    assert incomplete["dict-rag"] == ["sky"] and not any(q for run, q in incomplete.items() if run != "dict-rag")
    assert [r["run"] for r in evaluation["sections"]["system-costs"]["systems"]] == ["dict-rag"]
    assert evaluation["sections"]["system-costs"]["systems"][0]["errors"] == 1
    rows = {(r["run"], r["query_id"]): r["incomplete"] for r in evaluation["per_query"]}
    assert rows[("dict-rag", "sky")] and not rows[("dict-rag", "tides")]
    assert _core(report) == _core(evaluation)


def test_evaluate_names_a_system_that_failed_on_every_query(example: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A system that failed on every query recorded a manifest and no answer file: no run reads it, and
    evaluate says so rather than leaving it out of every table in silence."""
    from tests.features.live_systems.support import conftest, exam

    example.makeconftest(conftest(body="raise ConnectionError('index shard 3 is down')"))
    assert exam(example).ret == pytest.ExitCode.TESTS_FAILED
    assert not list((example.path / "runs").glob("dict-rag.*.jsonl"))
    monkeypatch.chdir(example.path)
    capsys.readouterr()
    try:
        assert main(["evaluate", "runs", "--bank", "banks/example.yaml", "--grader", "lexical", "--cache", "none",
                     "--bootstrap", "0", "--no-progress", "--report-dir", "none"]) == 0
    finally:
        from exam_harness.features.live_systems import declare

        declare.clear()
    error = capsys.readouterr().err
    assert "runs/dict-rag.system.json: system 'dict-rag' recorded no answer (it failed on " in error
    assert "it is in no leaderboard" in error


def test_a_manifest_names_the_queries_its_system_failed_on_without_an_answer() -> None:
    """An error with no answer is a failure; a query whose recorded answer was kept through a later
    failure (record mode keeps good data) is answered."""
    from exam_harness.features.live_systems.recording import failed_queries

    manifest = {"queries": {"tides": {}, "sky": {}}, "errors": {"sky": {"error": "down"}, "moon": {"error": "down"}}}
    assert failed_queries(manifest) == {"moon"}
    assert failed_queries({"queries": {}, "errors": None}) == set()
