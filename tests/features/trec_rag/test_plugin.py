"""The TREC RAG track end to end: a 2024 and a 2025 answer file with a nuggetizer nugget file, graded by the
``openai`` grader's nugget-assignment prompt against the local fake server (scale 0..2), under pytest and
``exam-harness evaluate``; the track's scores against a hand computation, in every report and in a gate."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.results.read import read_report
from tests.fake_openai_server import FakeOpenAIServer
from tests.helpers import evaluation_boards
from tests.trec_rag_data import LABELS, AssignmentResponder, hand_scores, write_exam

pytest_plugins = ["pytester"]
pytest.importorskip("openai")

SCORES = ("A", "A_strict", "V", "V_strict", "W", "W_strict")
METRIC_NAMES = {"A": "all_score", "A_strict": "strict_all_score", "V": "vital_score",
                "V_strict": "strict_vital_score", "W": "weighted_score", "W_strict": "strict_weighted_score"}


def expected() -> dict[tuple[str, str], dict[str, float]]:
    per_query = {key: hand_scores(labels) for key, labels in LABELS.items()}
    for run in ("rag24", "rag25"):
        rows = [v for (r, _q), v in per_query.items() if r == run]
        per_query[(run, "all")] = {m: sum(row[m] for row in rows) / len(rows) for m in SCORES}
    return per_query


def test_hand_computation_is_what_the_issue_states() -> None:
    # one value written out, so that the helper itself is checked: rag24 on t1 has vital 1 + 0.5, okay 0
    assert hand_scores(LABELS[("rag24", "t1")]) == pytest.approx(
        {"A": 1.5 / 3, "A_strict": 1 / 3, "V": 0.75, "V_strict": 0.5, "W": 1.5 / 2.5, "W_strict": 1 / 2.5})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(AssignmentResponder()) as srv:
        yield srv


def grader_options(server: FakeOpenAIServer, *extra: str) -> list[str]:
    return [f"base_url={server.base_url}", "model=fake-model", "api_key=test", "backoff_base=0.001",
            "backoff_max=0.002", "prompt=nugget-assignment", *extra]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(textwrap.dedent("""
        [pytest]
        exam_banks = banks
        exam_runs = runs
        exam_cache = .cache/grades.sqlite
        exam_report_dir = reports
        """))
    write_exam(pytester.path)
    return pytester


def pytest_args(server: FakeOpenAIServer, *extra: str) -> list[str]:
    args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai"]
    for option in grader_options(server):
        args += ["--exam-grader-option", option]
    return [*args, *extra]


def test_pytest_session_writes_the_track_scores(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = project.runpytest(*pytest_args(server))
    assert result.ret in (0, 1), result.stdout.str()  # missed nuggets are failed cases, not errors
    assert server.count() == 4  # one call per answer: its three nuggets together
    want = expected()
    reports = project.path / "reports"

    rows = [json.loads(line) for line in (reports / "trec-rag-metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 6  # two topics and an "all" row per run
    for row in rows:
        values = want[(row["run_id"], row["qid"])]
        for key, name in METRIC_NAMES.items():
            assert abs(row[name] - values[key]) <= 1e-12, (row, key)

    # the track's scores are measures of the report like every other, read by name
    report = read_report(reports / "exam-report.json")
    for key in SCORES:
        assert report.measure(key).name == f"{key}(k=20,tau=2,partial=1)"
        means = report.means(key)
        assert set(means) == {"rag24", "rag25"}
        for run, mean in means.items():
            assert abs(mean - want[(run, "all")][key]) <= 1e-12
        for (run, query), value in report.values(key).items():
            assert value is not None and abs(value - want[(run, query)][key]) <= 1e-12
    assert report.means("response-words") == pytest.approx({"rag24": (9 + 9) / 2, "rag25": (9 + 5) / 2})

    assigned = [json.loads(line) for line in (reports / "trec-rag-assignments.jsonl").read_text().splitlines()]
    got = {(a["run_id"], a["qid"]): [(n["importance"], n["assignment"]) for n in a["nuggets"]] for a in assigned}
    assert got == LABELS
    first = next(a for a in assigned if (a["run_id"], a["qid"]) == ("rag24", "t1"))
    assert first["answer_text"] == "Tides come from moon gravity. The sun matters too."
    assert first["response_length"] == 9 and first["query"] == "what causes tides"

    # per run, nuggetizer's own metrics file (a row per topic, then "all"; its four scores) and assignments
    for run in ("rag24", "rag25"):
        metrics = [json.loads(x) for x in (reports / f"trec-rag-{run}.metrics.jsonl").read_text().splitlines()]
        assert sorted(m["qid"] for m in metrics) == ["2", "all", "t1"] and metrics[-1]["qid"] == "all"
        for m in metrics:
            assert abs(m["strict_vital_score"] - want[(run, m["qid"])]["V_strict"]) <= 1e-12
        per_run = (reports / f"trec-rag-{run}.assignments.jsonl").read_text().splitlines()
        assert {json.loads(x)["run_id"] for x in per_run} == {run} and len(per_run) == 2
    table = (reports / "trec-rag-per-topic.txt").read_text().splitlines()
    assert f"rag25 W_strict 2 {want[('rag25', '2')]['W_strict']:.4f}" in table and len(table) == 2 * 6 * 2
    assert (reports / "trec-rag-per-topic.csv").read_text().startswith("run,topic,A,A_strict,V,V_strict,W,W_strict\n")

    # the terminal leaderboard shows the same means
    out = result.stdout.str()
    assert "V_strict" in out and "W_strict" in out
    assert f"{want[('rag24', 'all')]['W']:.3f}" in out


def test_gate_on_v_strict(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    # rag24's V_strict is (0.5 + 1) / 2 = 0.75, rag25's (0.5 + 0) / 2 = 0.25
    passed = project.runpytest(*pytest_args(server, "--exam-fail-under", "rag24=V_strict:0.7",
                                            "--exam-fail-under", "rag25=v_strict:0.25"))
    failed = project.runpytest(*pytest_args(server, "--exam-fail-under", "V_strict:0.5"))
    assert "FAIL" not in passed.stdout.str()
    assert failed.ret != 0
    failed.stdout.fnmatch_lines(["*FAIL Required V_strict of 0.5 not reached by run 'rag25': 0.2500*"])
    assert "run 'rag24'" not in "\n".join(line for line in failed.outlines if "FAIL Required" in line)


def test_evaluate_scores_the_track_like_every_measure(tmp_path: Path, server: FakeOpenAIServer,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # every leaderboard column on one line
    banks, runs = write_exam(tmp_path)
    args = ["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "openai", "--cache", str(tmp_path / "c.sqlite"),
            "--json", str(tmp_path / "out.json"), "--bootstrap", "0", "--report-dir", str(tmp_path / "set"),
            "--per-query"]  # the metrics file's rows per query come from the per-query scores
    for option in grader_options(server):
        args += ["--grader-option", option]
    assert main(args) == 0, capsys.readouterr()
    doc = json.loads((tmp_path / "out.json").read_text())
    boards = {board["measure"]: board for board in evaluation_boards(doc)}
    want = expected()
    for key in SCORES:
        for run in ("rag24", "rag25"):
            assert abs(boards[key]["systems"][run] - want[(run, "all")][key]) <= 1e-12
    # the report set has the track's files, as a pytest session's (report/writers.py)
    rows = [json.loads(line) for line in (tmp_path / "set" / "trec-rag-metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    for row in rows:
        for key, name in METRIC_NAMES.items():
            assert abs(row[name] - want[(row["run_id"], row["qid"])][key]) <= 1e-12, (row, key)
    assigned = [json.loads(line) for line in (tmp_path / "set" / "trec-rag-assignments.jsonl").read_text().splitlines()]
    assert sorted((a["run_id"], a["qid"]) for a in assigned) == sorted((r["run_id"], r["qid"]) for r in rows
                                                                       if r["qid"] != "all")
    assert all(len(a["nuggets"]) == 3 for a in assigned)
    out = capsys.readouterr().out
    assert "V_strict" in out and f"{want[('rag24', 'all')]['W']:.3f}" in out
    # the trec-rag section is computed by evaluate too, as the pytest session computes it (issue 26)
    (at_tau,) = doc["sections"]["trec-rag"]["per_tau"]
    got = {(a["run_id"], a["qid"]): [(n["importance"], n["assignment"]) for n in a["nuggets"]]
           for a in at_tau["assignments"]}
    assert at_tau["min_grade"] == 2 and got == LABELS
    assert "TREC RAG nugget assignments: 4 answers" in out


def test_markdown_and_html_show_the_track_scores(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    from exam_harness.report.html import render_html
    from exam_harness.report.markdown import render_markdown
    from exam_harness.results.schema import ExamReport

    project.runpytest(*pytest_args(server))
    report = ExamReport.model_validate_json((project.path / "reports" / "exam-report.json").read_text())
    want = expected()
    markdown, html = render_markdown(report), render_html(report)
    for key in SCORES:
        assert key.replace("_", "\\_") in markdown or key in markdown
        assert f">{key}<" in html
    rag24 = next(line for line in markdown.splitlines() if "rag24" in line and "|" in line)
    assert f"{want[('rag24', 'all')]['V_strict']:.4f}" in rag24 and f"{want[('rag24', 'all')]['W']:.4f}" in rag24


def test_gates_read_the_track_scores_by_name() -> None:
    from exam_harness.config.gates import check_measures, parse_allowance, parse_threshold
    from exam_harness.core.errors import ConfigError

    assert parse_threshold("my-rag=v_strict:0.4").measure == "V_strict"
    assert parse_threshold("W:0.5").measure == "W"
    assert parse_allowance("A_STRICT:5%").measure == "A_strict"
    check_measures(["V_strict", "w_strict", "response-words"], None, "--exam-fail-under")
    with pytest.raises(ConfigError, match=r"--exam-fail-under: unknown measure 'v_strictt'\. Did you mean 'v_strict'"):
        check_measures([parse_threshold("V_strictt:0.4").measure], None, "--exam-fail-under")


def test_umbrela_grades_become_qrels_that_trec_eval_scores(pytester: pytest.Pytester) -> None:
    """The R task: UMBRELA's 0..3 grades of each (query, passage) are the max-grade EXAM-Qrels."""
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\nexam_report_dir = reports\n"
                     "exam_cache = .cache/grades.sqlite\n")
    (pytester.path / "banks").mkdir()
    (pytester.path / "banks" / "q.yaml").write_text(
        "queries:\n  - id: t1\n    text: what causes tides\n    nuggets: [moon gravity]\n")
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "collection.tsv").write_text(
        "id\ttext\np3\tthe moon pulls tides\np1\trelated words\np0\tcooking pasta\n")
    (pytester.path / "runs" / "a.run").write_text("t1 Q0 p3 1 3.0 a\nt1 Q0 p1 2 2.0 a\nt1 Q0 p0 3 1.0 a\n")
    (pytester.path / "runs" / "b.run").write_text("t1 Q0 p0 1 3.0 b\nt1 Q0 p1 2 2.0 b\nt1 Q0 p3 3 1.0 b\n")

    def responder(prompt: str) -> str:
        return "##final score: 3" if "moon pulls" in prompt else "##final score: 1" if "related words" in prompt \
            else "##final score: 0"

    with FakeOpenAIServer(responder) as server:
        args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai", "--exam-min-grade", "1"]
        for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=k", "prompt=umbrela"):
            args += ["--exam-grader-option", option]
        result = pytester.runpytest(*args)
    assert result.ret == 0, result.stdout.str()
    qrels = (pytester.path / "reports" / "exam-max-grade.qrels").read_text().split("\n")
    assert sorted(line for line in qrels if line) == ["t1 0 p0 0", "t1 0 p1 1", "t1 0 p3 3"]
    ndcg = read_report(pytester.path / "reports" / "exam-report.json").means("ndcg(label=max-grade)@10")
    # graded gains 3, 1, 0 (trec_eval's nDCG: gain = label, discount log2(rank + 1))
    ideal = 3 + 1 / math.log2(3)
    assert ndcg["a"] == pytest.approx(1.0)
    assert ndcg["b"] == pytest.approx((1 / math.log2(3) + 3 / math.log2(4)) / ideal)


HUMAN: list[dict[str, Any]] = [  # the assessors' labels; against LABELS they differ twice (rag24 t1 nugget 2, rag24 2 nugget 3)
    {"run_id": "rag24", "qid": "t1", "nuggets": [{"text": "moon gravity", "assignment": "support"},
                                                 {"text": "sun gravity", "assignment": "support"},
                                                 {"text": "two tides a day", "assignment": "not_support"}]},
    {"run_id": "rag24", "qid": 2, "nuggets": [{"text": "gustave eiffel", "assignment": "support"},
                                              {"text": "built 1889", "assignment": "partial_support"},
                                              {"text": "wrought iron", "assignment": "partial_support"}]},
    {"run_id": "rag25", "qid": "t1", "nuggets": [{"text": "moon gravity", "assignment": "not_support"},
                                                 {"text": "sun gravity", "assignment": "support"},
                                                 {"text": "two tides a day", "assignment": "support"}]},
    {"run_id": "rag25", "qid": "2", "nuggets": [{"text": "gustave eiffel", "assignment": "not_support"},
                                                {"text": "built 1889", "assignment": "not_support"},
                                                {"text": "wrought iron", "assignment": "support"}]},
    {"run_id": "rag99", "qid": "t1", "nuggets": [{"text": "moon gravity", "assignment": "support"}]},
]


def test_agreement_with_human_assignments(tmp_path: Path, server: FakeOpenAIServer,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from tests.trec_rag_data import write_lines

    banks, runs = write_exam(tmp_path)
    human = write_lines(tmp_path / "human.jsonl", HUMAN)
    args = ["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "openai", "--bootstrap", "0",
            "--cache", str(tmp_path / "c.sqlite"), "--json", str(tmp_path / "out.json"), "--human-assignments", str(human)]
    for option in grader_options(server):
        args += ["--grader-option", option]
    assert main(args) == 0, capsys.readouterr()
    got = json.loads((tmp_path / "out.json").read_text())["sections"]["trec-rag-agreement"]
    # harness label (rows) x human label (columns), counted by hand from LABELS and HUMAN
    confusion = {"support": {"support": 5, "partial_support": 0, "not_support": 0},
                 "partial_support": {"support": 1, "partial_support": 1, "not_support": 0},
                 "not_support": {"support": 0, "partial_support": 1, "not_support": 4}}
    assert got["confusion"] == confusion
    assert (got["pairs"], got["unmatched"]) == (12, 1)
    assert got["agreement"] == pytest.approx(10 / 12)
    expected_chance = (5 * 6 + 2 * 2 + 5 * 4) / 12**2  # row totals 5, 2, 5; column totals 6, 2, 4
    assert got["kappa"] == pytest.approx((10 / 12 - expected_chance) / (1 - expected_chance))
    # support against the rest: a 2x2 of [[5, 0], [1, 6]]
    p_o, p_e = 11 / 12, (5 * 6 + 7 * 6) / 144
    assert got["label_kappa"]["support"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert "against human labels" in capsys.readouterr().out


def test_a_bad_human_assignment_file_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.trec_rag_data import write_lines

    banks, runs = write_exam(tmp_path)
    rows = [HUMAN[0], {**HUMAN[1], "nuggets": [{"text": "built 1889", "assignment": "partial"}]}]
    human = write_lines(tmp_path / "human.jsonl", rows)
    code = main(["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "keyword",
                 "--human-assignments", str(human)])
    assert code != 0
    err = capsys.readouterr().err
    assert "human.jsonl:2" in err and "unknown assignment label" in err
