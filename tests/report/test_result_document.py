"""One result model under both front ends (issue 17): the pytest report and ``exam-harness evaluate --json``
are two envelopes around the same core, validated by the one JSON schema ``exam-harness schema`` prints
(results/document.py; pydantic validates, the jsonschema package is not a dependency)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from exam_harness.cli import main
from exam_harness.results.document import json_schema, validate_document
from exam_harness.results.evaluation import EvaluationReport
from exam_harness.results.schema import SCHEMA_VERSION, ExamReport
from tests.paths import GOLDEN

pytest_plugins = ["pytester"]


@pytest.fixture
def both(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project's pytest report and ``evaluate --json --per-query`` over the same runs, bank and grader."""
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    monkeypatch.chdir(project.path)  # the CLI loads ./conftest.py (the marker grader), as pytest does
    out = project.path / "evaluation.json"
    code = main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "marker", "--cache", ".cache/grades.sqlite", "--per-query", "--bootstrap", "0",
                 "--no-progress", "--json", str(out)])
    assert code == 0
    return report, json.loads(out.read_text())


def test_both_documents_validate_against_the_one_schema(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    report, evaluation = both
    assert report["kind"] == "exam-report" and evaluation["kind"] == "evaluation"
    assert report["schema_version"] == evaluation["schema_version"] == SCHEMA_VERSION
    assert isinstance(validate_document(report), ExamReport)
    assert isinstance(validate_document(evaluation), EvaluationReport)
    # the schema judges: a document of one kind in the other's envelope, or a field it lacks, is refused
    with pytest.raises(ValidationError):
        validate_document({**evaluation, "kind": "exam-report"})
    with pytest.raises(ValidationError):
        validate_document({**report, "leaderboards": evaluation["leaderboards"]})
    with pytest.raises(ValidationError):
        validate_document({key: value for key, value in evaluation.items() if key != "measures"})


def test_a_measure_has_the_same_values_in_both(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    report, evaluation = both
    ours = {m["name"]: m for m in report["measures"]}
    theirs = {m["name"]: m for m in evaluation["measures"]}
    shared = [name for name in ours if name in theirs]
    families = {name.split("(")[0] for name in shared}
    assert {"exam-cover", "n-exam-cover", "P", "ndcg"} <= families, shared
    for name in shared:
        assert ours[name] == theirs[name]  # name, title, label, tau and k
    runs = {s["run"]: s for s in report["systems"]}
    assert set(runs) == {s["run"] for s in evaluation["systems"]} == {"good", "weak"}
    for system in evaluation["systems"]:
        kept = runs[system["run"]]
        assert system["queries"] == kept["queries"] and system["generated"] == kept["generated"]
        assert system["incomplete_queries"] == kept["incomplete_queries"]
        for name in shared:
            assert system["scores"][name] == kept["scores"][name]  # mean and standard error, exactly
    rows = {(r["run"], r["query_id"]): r for r in report["per_query"]}
    assert len(evaluation["per_query"]) == len(rows) == 4
    for row in evaluation["per_query"]:
        kept = rows[row["run"], row["query_id"]]
        assert (row["covered"], row["test_points"], row["incomplete"]) == (kept["covered"], kept["test_points"],
                                                                         kept["incomplete"])
        assert {n: v for n, v in row["scores"].items() if n in ours} == {n: v for n, v in kept["scores"].items()
                                                                         if n in theirs}
    # the evaluation's leaderboards are keyed by the same names
    assert [s["measure"] for s in evaluation["leaderboards"]] == [m["name"] for m in evaluation["measures"]]


def test_the_schema_command_prints_the_one_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(json_schema()))
    assert printed["discriminator"]["propertyName"] == "kind"
    assert set(printed["discriminator"]["mapping"]) == {"exam-report", "evaluation"}
    assert SCHEMA_VERSION in printed["title"]
    # the core is one definition both envelopes refer to
    for envelope in ("ExamReport", "EvaluationReport"):
        properties = printed["$defs"][envelope]["properties"]
        assert properties["measures"]["items"] == {"$ref": "#/$defs/MeasureInfo"}
        assert properties["systems"]["items"] == {"$ref": "#/$defs/SystemScore"}
        assert properties["per_query"]["items"] == {"$ref": "#/$defs/QueryScore"}


def test_evaluate_titles_a_plugin_measure_as_the_registry_does(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import CONFTEST
    from tests.measures.support import HITS, HITS_PLUGIN

    project.makeconftest(CONFTEST + HITS_PLUGIN)
    monkeypatch.chdir(project.path)
    out = project.path / "evaluation.json"
    code = main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "marker", "--k", "2", "--measures", "exam-cover", "hits", "--bootstrap", "0",
                 "--no-progress", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if "EXAM-Cover@2" in line)
    assert "Hits@2" in header and "hits@2" not in header  # the measure's title, not its short name
    document = json.loads(out.read_text())
    (hits,) = [m for m in document["measures"] if m["name"].startswith("hits")]
    assert hits["title"] == "Hits@2" and hits["min_grade"] == 4 and hits["k"] == 2
    assert {s["run"]: s["scores"][hits["name"]]["mean"] for s in document["systems"]} == pytest.approx(HITS)


def test_evaluate_names_the_queries_n_exam_leaves_out(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # weak ranks nothing that covers q2's test point; with weak alone no passage of the pool covers q2
    monkeypatch.chdir(project.path)
    out = project.path / "evaluation.json"
    code = main(["evaluate", "runs/collection.tsv", "runs/weak.run", "--bank", "banks/exam.yaml", "--grader",
                 "marker", "--bootstrap", "0", "--no-progress", "--json", str(out)])
    assert code == 0
    assert "n-EXAM@20 at grade ≥ 4 scores 1 of 2 queries; left out (1): q2" in capsys.readouterr().out
    document = json.loads(out.read_text())
    n_exam = next(s for s in document["leaderboards"] if s["measure"].startswith("n-exam-cover"))
    cover = next(s for s in document["leaderboards"] if s["measure"].startswith("exam-cover"))
    assert (n_exam["dropped"], n_exam["queries"]) == (["q2"], 1)
    assert (cover["dropped"], cover["queries"]) == ([], 2)


def test_a_kept_report_of_schema_3_1_reads_as_3_2(tmp_path: Path) -> None:
    from exam_harness.results.read import read_report

    pinned = json.loads((GOLDEN / "exam-report.json").read_text())
    kept = {key: value for key, value in pinned.items() if key not in ("kind", "sections")}
    kept["measures"] = [{k: v for k, v in m.items() if k not in ("min_grade", "k")} for m in pinned["measures"]]
    kept.update(schema_version="3.1", tool_version="0.1.0", created="2026-11-23T00:00:00+00:00")
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(kept))
    report = read_report(path)
    assert report.kind == "exam-report" and report.schema_version == "3.1"  # the version it was written as
    assert [m.model_dump() for m in report.measures] == pinned["measures"]  # tau and k read from each name
    assert {m.min_grade for m in report.measures} == {4} and {m.k for m in report.measures} == {20}


COST = {"session": {"prompt_tokens": 10, "completion_tokens": 2, "calls": 1, "cost": None},
        "cached": {"prompt_tokens": 0, "completion_tokens": 0, "calls": None, "cost": None},
        "runs": [{"run": "good", "prompt_tokens": 10, "completion_tokens": 2, "cost": None}],
        "price_prompt": None, "price_completion": None, "max_cost": None, "stopped": None}


RAG = {"run_id": "good", "qid": "q1", "query": "first query", "answer_text": "an answer", "response_length": 2,
       "nuggets": [{"text": "nugget n", "importance": "vital", "assignment": "support", "grade": 5}]}


def _figures(tau: int) -> dict[str, Any]:
    """A 3.x judge_variance object (one tau)."""
    return {"repeats": 2, "reducer": "mean", "measure": f"exam-cover(tau={tau})@20", "min_grade": tau, "k": 20,
            "runs": [{"run": "good", "score": 0.5, "sample_scores": [0.5, 1.0], "judge_variance": 0.125,
                      "query_variance": 0.25, "judge_share": 1 / 3, "cases": 2, "flaky": 1,
                      "cover_at_least": [1.0, 0.5]}],
            "cases": [{"run": "good", "query_id": "q1", "test_point_id": "q1/a", "best_grades": [5, 0],
                       "answered_in": 1, "flaky": True}]}


@pytest.mark.parametrize("version", ["3.2", "3.3", "3.4", "3.5"])
def test_a_kept_3x_report_reads_as_4_0_its_optional_fields_as_sections(tmp_path: Path, version: str) -> None:
    """Schema 4.0 moved the fixed optional fields into ``sections``: a kept 3.x report's ``cost`` and
    ``judge_variance`` read as its cost and judge-variance sections (typed), and one without them has none."""
    from exam_harness.features.cost.section import CostSummary
    from exam_harness.features.judge_variance.section import JudgeVariances
    from exam_harness.results.read import read_report

    pinned = json.loads((GOLDEN / "exam-report.json").read_text())
    kept = {key: value for key, value in pinned.items() if key != "sections"}
    kept.update(schema_version=version, tool_version="0.1.0", created="2026-11-23T00:00:00+00:00", cost=COST,
                judge_variance=_figures(4), decided_by={"answer-key": 8, "embedding": 202}, trec_rag=[RAG])
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(kept))
    report = read_report(path)
    assert report.schema_version == version and SCHEMA_VERSION == "4.2"
    cost, judge = report.sections["cost"], report.sections["judge-variance"]
    assert isinstance(cost, CostSummary) and cost.model_dump(mode="json") == COST
    assert isinstance(judge, JudgeVariances) and [jv.model_dump(mode="json") for jv in judge.per_tau] == [_figures(4)]
    assert report.model_dump(mode="json")["sections"] == {
        "decided-by": {"parts": {"answer-key": 8, "embedding": 202}}, "cost": COST,
        "judge-variance": {"per_tau": [_figures(4)]},
        "trec-rag": {"per_tau": [{"min_grade": report.settings.min_grade, "assignments": [RAG]}]}}

    path.write_text(json.dumps({**kept, "cost": None, "judge_variance": None, "decided_by": {}, "trec_rag": []}))
    assert read_report(path).sections == {}


def test_a_3_5_evaluation_document_migrates_its_grading_cost_and_judge_variance_per_tau() -> None:
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.migrate import migrate

    document = {"kind": "evaluation", "schema_version": "3.5", "grading": {"source": "grader", "cost": COST},
                "judge_variance": [_figures(3), _figures(4)]}
    migrated = migrate(document)
    assert "judge_variance" not in migrated and "cost" not in migrated["grading"]
    assert migrated["sections"] == {"cost": COST, "judge-variance": {"per_tau": [_figures(3), _figures(4)]}}
    assert "sections" in EvaluationReport.model_fields


def test_an_evaluation_document_is_not_read_as_a_kept_report(tmp_path: Path) -> None:
    from exam_harness.core.errors import InputError
    from exam_harness.results.read import read_report

    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps({"kind": "evaluation", "schema_version": SCHEMA_VERSION}))
    with pytest.raises(InputError, match=r"evaluate --json.*not an exam report") as caught:
        read_report(path)
    assert "kind" in str(caught.value)
