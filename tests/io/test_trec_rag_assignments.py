"""Assignment files as a grade source: nuggetizer's assign output (and assessors' files of its shape) scored
with no grader, as nuggetizer's metrics and the track's W score them, per run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.io.assignments import read_assignment_files
from tests.trec_rag_data import write_lines

pytest_plugins = ["pytester"]


def line(qid: str, nuggets: list[tuple[str, str, str]], run: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"query": f"query {qid}", "qid": qid, "answer_text": "an answer", "response_length": 2,
                           "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in nuggets]}
    if run is not None:
        row["run_id"] = run
    return row


# run "bm25-gpt" (its file's stem, no run_id in the lines), run "team-x" (run_id in each line)
RUN_A = [
    line("t1", [("n1", "vital", "support"), ("n2", "vital", "partial_support"), ("n3", "okay", "not_support"),
                ("n1", "vital", "support"), ("n4", "failed", "support")]),  # a repeated text and a stray importance
    line("t2", [("m1", "vital", "Support"), ("m2", "okay", "partial_support"), ("m3", "okay", "support")]),
    line("t3", [("k1", "okay", "partial_support")]),  # no vital nugget: V is 0
]
RUN_B = [
    line("t1", [("n1", "vital", "not_support"), ("n2", "vital", "support"), ("n3", "okay", "support"),
                ("n1", "vital", "partial support"), ("n4", "failed", "partial_support")], run="team-x"),
    line("t2", [("m1", "vital", "support"), ("m2", "okay", "support"), ("m3", "okay", "not_support")], run="team-x"),
]


def hand(nuggets: list[tuple[str, str, str]]) -> dict[str, float]:
    """Written out by hand from nuggetizer's calculate_nugget_scores (A, V) and the track papers' W."""
    full = {"support": 1.0, "partial_support": 0.5}
    strict = {"support": 1.0}
    out = {}
    for suffix, credit in (("", full), ("_strict", strict)):
        every = [credit.get(a, 0.0) for _t, _i, a in nuggets]
        vital = [credit.get(a, 0.0) for _t, i, a in nuggets if i == "vital"]
        okay = [credit.get(a, 0.0) for _t, i, a in nuggets if i == "okay"]
        out["A" + suffix] = sum(every) / len(every)
        out["V" + suffix] = sum(vital) / len(vital) if vital else 0.0
        out["W" + suffix] = (sum(vital) + 0.5 * sum(okay)) / (len(vital) + 0.5 * len(okay))
    return out


def nuggets_of(row: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(n["text"], n["importance"], n["assignment"]) for n in row["nuggets"]]


def test_hand_values_are_what_the_formulas_say() -> None:
    t1 = hand(nuggets_of(RUN_A[0]))  # credits 1, .5, 0, 1, 1 over 5; vital 1, .5, 1; okay 0
    assert t1["A"] == 3.5 / 5 and t1["V"] == 2.5 / 3 and t1["W"] == 2.5 / 3.5
    assert t1["A_strict"] == 3 / 5 and t1["V_strict"] == 2 / 3
    assert hand(nuggets_of(RUN_A[1]))["V"] == 0.0  # "Support" is no label nuggetizer knows: 0


def test_assignment_files_score_each_run_as_the_hand_computation(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a = write_lines(tmp_path / "bm25-gpt.jsonl", RUN_A)
    b = write_lines(tmp_path / "assessed" / "b.jsonl", RUN_B)
    out = tmp_path / "out.json"
    assert main(["evaluate", "--assignments", str(a), str(b), "--json", str(out),
                 "--trec-rag-dir", str(tmp_path / "track")]) == 0
    captured = capsys.readouterr()
    warnings = [w for w in captured.err.splitlines() if "warning:" in w]
    assert len(warnings) == 2  # one line per file with stray labels
    assert "1 nugget(s) with a label other than support/partial_support/not_support ('Support' x1" in warnings[0]
    assert "'partial support' x1" in warnings[1]
    doc = json.loads(out.read_text())
    assert sorted(doc["runs"]) == ["bm25-gpt", "team-x"]
    for run, rows in (("bm25-gpt", RUN_A), ("team-x", RUN_B)):
        want = {row["qid"]: hand(nuggets_of(row)) for row in rows}
        for qid, scores in want.items():
            for key, value in scores.items():
                assert abs(doc["per_topic"][run][qid][key] - value) <= 1e-12, (run, qid, key)
        for key in scores:
            mean = sum(s[key] for s in want.values()) / len(want)
            assert abs(doc["runs"][run][key] - mean) <= 1e-12
        assert doc["runs"][run]["topics"] == len(rows)
    # nuggetizer's metrics file, one per run: a row per topic then the "all" row, its four scores only
    metrics = [json.loads(x) for x in (tmp_path / "track" / "bm25-gpt.metrics.jsonl").read_text().splitlines()]
    assert [m["qid"] for m in metrics] == ["t1", "t2", "t3", "all"]
    assert set(metrics[0]) == {"qid", "strict_vital_score", "strict_all_score", "vital_score", "all_score"}
    assert abs(metrics[0]["vital_score"] - 2.5 / 3) <= 1e-12
    assert abs(metrics[3]["all_score"] - sum(hand(nuggets_of(r))["A"] for r in RUN_A) / 3) <= 1e-12
    assigned = [json.loads(x) for x in (tmp_path / "track" / "team-x.assignments.jsonl").read_text().splitlines()]
    assert [(r["run_id"], r["qid"]) for r in assigned] == [("team-x", "t1"), ("team-x", "t2")]
    table = (tmp_path / "track" / "trec-rag-per-topic.txt").read_text().splitlines()
    assert f"bm25-gpt W t1 {2.5 / 3.5:.4f}" in table and len(table) == 6 * 5
    csv = (tmp_path / "track" / "trec-rag-per-topic.csv").read_text().splitlines()
    assert csv[0] == "run,topic,A,A_strict,V,V_strict,W,W_strict" and len(csv) == 6


def test_two_assignment_sources_agree_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = write_lines(tmp_path / "team-x.jsonl", [line("t2", nuggets_of(RUN_B[1]))])
    human = write_lines(tmp_path / "human.jsonl", [
        {"run_id": "team-x", "qid": "t2", "nuggets": [{"text": "m1", "assignment": "support"},
                                                       {"text": "m2", "assignment": "not_support"},
                                                       {"text": "m3", "assignment": "not_support"}]}])
    out = tmp_path / "out.json"
    assert main(["evaluate", "--assignments", str(machine), "--human-assignments", str(human),
                 "--json", str(out)]) == 0
    agreement = json.loads(out.read_text())["agreement"]
    assert agreement["pairs"] == 3 and agreement["agreement"] == 2 / 3
    assert agreement["confusion"]["support"]["not_support"] == 1
    assert "agreement with" in capsys.readouterr().out


def test_a_second_line_for_one_run_and_topic_is_an_input_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [RUN_A[0], RUN_A[1], RUN_A[0]])
    with pytest.raises(InputError) as caught:
        read_assignment_files([path])
    assert (caught.value.line, caught.value.field) == (3, "qid") and "first at" in str(caught.value)


def test_evaluate_without_runs_or_assignments_says_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate"]) != 0
    assert "--assignments" in capsys.readouterr().err


# --- the track's scores only over assignment grades ---------------------------------------------


def test_only_assignment_prompts_give_assignment_grades() -> None:
    from exam_harness.core.models import GraderSpec
    from exam_harness.llm.modes import MODES
    from exam_harness.measures.trec_rag import grade_kind, scores_the_track

    kinds = {name: grade_kind(GraderSpec(name="openai", version="1", options={"prompt": name, "output": m.output}))
             for name, m in MODES.items()}
    assert {name for name, kind in kinds.items() if kind == "assignment"} == {
        "nugget-assignment", "nugget-assignment-2", "nuggetizer-assignment", "nuggetizer-assignment-2"}
    assert kinds["umbrela"] == kinds["umbrela-zeroshot"] == kinds["sun"] == "relevance"
    assert kinds["self-rating"] == kinds["nugget-rating"] == "self-rating"
    # recorded grades are known by their prompt class
    assert scores_the_track(GraderSpec(name="recorded", version="1", prompt_class="TrecRagNuggetAssignment"))
    assert not scores_the_track(GraderSpec(name="recorded", version="1", prompt_class="NuggetSelfRating"))
    assert not scores_the_track(GraderSpec(name="lexical", version="1"))


def test_no_track_score_over_grades_that_are_no_assignments(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import evaluation_boards
    from tests.trec_rag_data import write_exam

    banks, runs = write_exam(tmp_path)
    out = tmp_path / "out.json"
    assert main(["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "lexical",
                 "--cache", str(tmp_path / "c.sqlite"), "--json", str(out), "--bootstrap", "0"]) in (0, 1)
    measures = {board["measure"] for board in evaluation_boards(json.loads(out.read_text()))}
    assert "nugget-f" in measures and len(measures) > 3  # the exam's own measures are there
    assert not measures & {"A", "A_strict", "V", "V_strict", "W", "W_strict", "response-words"}
    assert "V_strict" not in capsys.readouterr().out


# --- assignment files among the runs: recorded grades through the whole exam ---------------------


def test_assignment_files_among_the_runs_give_the_track_scores_with_no_grader(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import evaluation_boards

    run_b = [line("t1", [("n1", "vital", "not_support"), ("n2", "vital", "support"), ("n3", "okay", "support"),
                         ("n1", "vital", "partial_support"), ("n4", "failed", "partial_support")]),
             line("t2", [("m1", "vital", "support"), ("m2", "okay", "banana"), ("m3", "okay", "not_support")]),
             line("t3", [("k1", "okay", "support")])]
    runs: dict[str, list[dict[str, Any]]] = {"bm25-gpt": copy_rows(RUN_A), "team-x": run_b}
    for name, rows in runs.items():
        for row in rows:
            row["answer_text"] = f"the answer to {row['qid']}"  # both runs wrote the same texts: labels stay apart
        write_lines(tmp_path / "runs" / f"{name}.jsonl", rows)
    bank = write_lines(tmp_path / "nuggets.jsonl", [
        {"qid": row["qid"], "query": row["query"],
         "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in row["nuggets"]]} for row in RUN_A])
    out = tmp_path / "out.json"
    assert main(["evaluate", str(tmp_path / "runs"), "--bank", str(bank), "--json", str(out),
                 "--bootstrap", "0"]) == 0, capsys.readouterr()
    boards = {b["measure"]: b for b in evaluation_boards(json.loads(out.read_text()))}
    for run, rows in runs.items():
        want = [hand(nuggets_of(row)) for row in rows]
        for key in ("A", "A_strict", "V", "V_strict", "W", "W_strict"):
            assert abs(boards[key]["systems"][run] - sum(w[key] for w in want) / len(want)) <= 1e-12, (run, key)
    err = capsys.readouterr().err
    assert "'banana' x1" in err  # the stray label: one warning line, counted 0


def copy_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return json.loads(json.dumps(rows))  # type: ignore[no-any-return]


def test_assignment_files_give_the_track_scores_in_a_pytest_session(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\nexam_grader = recorded\n")
    rows = copy_rows(RUN_A)
    for row in rows:
        row["answer_text"] = f"answer to {row['qid']}"
    write_lines(pytester.path / "runs" / "bm25-gpt.jsonl", rows)
    write_lines(pytester.path / "banks" / "nuggets.jsonl", [
        {"qid": row["qid"], "query": row["query"],
         "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in row["nuggets"]]} for row in RUN_A])
    result = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str()  # missed nuggets are failed cases
    metrics = [json.loads(x) for x in (pytester.path / "reports" / "trec-rag-bm25-gpt.metrics.jsonl").read_text()
               .splitlines()]
    by_topic = {m["qid"]: m for m in metrics}
    for row in RUN_A:
        want = hand(nuggets_of(row))
        assert abs(by_topic[row["qid"]]["vital_score"] - want["V"]) <= 1e-12
        assert abs(by_topic[row["qid"]]["strict_all_score"] - want["A_strict"]) <= 1e-12


def test_exam_assignments_give_the_evaluate_assignments_figures(pytester: pytest.Pytester) -> None:
    """--exam-assignments FILE ...: the files read as recorded grades, as if they were among the runs (here an
    empty runs folder): A ... W in the report are what evaluate --assignments gives for the same files."""
    a = write_lines(pytester.path / "given" / "bm25-gpt.jsonl", RUN_A)
    b = write_lines(pytester.path / "given" / "b.jsonl", RUN_B)
    rows = {row["qid"]: row for row in [*RUN_A, *RUN_B]}
    write_lines(pytester.path / "banks" / "nuggets.jsonl", [
        {"qid": qid, "query": row["query"],
         "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in row["nuggets"]]}
        for qid, row in rows.items()])
    # the nugget texts of RUN_B's topics are RUN_A's: one bank serves both files
    assert all(nuggets_of(x) and [n[0] for n in nuggets_of(x)] == [n[0] for n in nuggets_of(rows[x["qid"]])]
               for x in RUN_B)
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_grader = recorded\n")
    (pytester.path / "empty").mkdir()  # a runs folder with no run in it
    result = pytester.runpytest("banks", "-p", "no:cacheprovider", "--exam-runs", str(pytester.path / "empty"),
                                "--exam-assignments", str(a), "--exam-assignments", str(b))
    assert result.ret in (0, 1), result.stdout.str()
    out = pytester.path / "evaluated.json"
    assert main(["evaluate", "--assignments", str(a), str(b), "--json", str(out),
                 "--trec-rag-dir", str(pytester.path / "track")]) == 0
    want = json.loads(out.read_text())["per_topic"]
    for run in ("bm25-gpt", "team-x"):
        metrics = [json.loads(x) for x in (pytester.path / "reports" / f"trec-rag-{run}.metrics.jsonl").read_text()
                   .splitlines()]
        expected = [json.loads(x) for x in (pytester.path / "track" / f"{run}.metrics.jsonl").read_text()
                    .splitlines()]
        by_topic = {m["qid"]: m for m in metrics}
        assert [m for m in expected if m["qid"] != "all"] == [by_topic[m["qid"]] for m in expected if m["qid"] != "all"]
        for qid, scores in want[run].items():
            assert by_topic[qid]["vital_score"] == scores["V"] and by_topic[qid]["all_score"] == scores["A"]
    assert [json.loads(x) for x in (pytester.path / "reports" / "trec-rag-bm25-gpt.metrics.jsonl").read_text()
            .splitlines()][-1] == [json.loads(x) for x in (pytester.path / "track" / "bm25-gpt.metrics.jsonl")
                                   .read_text().splitlines()][-1]
    # team-x answers no t3, a topic the bank holds: the session scores it 0 there (evaluate has no bank: 2 topics)
    team = {m["qid"]: m for m in map(json.loads, (pytester.path / "reports" / "trec-rag-team-x.metrics.jsonl")
                                      .read_text().splitlines())}
    assert team["t3"]["all_score"] == 0.0
    assert abs(team["all"]["all_score"] - (want["team-x"]["t1"]["A"] + want["team-x"]["t2"]["A"]) / 3) <= 1e-12


def test_exam_assignments_refuses_a_file_of_another_kind(pytester: pytest.Pytester) -> None:
    write_lines(pytester.path / "banks" / "nuggets.jsonl", [
        {"qid": "t1", "query": "q", "nuggets": [{"text": "n1", "importance": "vital"}]}])
    write_lines(pytester.path / "answers.jsonl", [{"qid": "t1", "nuggets": [{"text": "n1"}]}])
    (pytester.path / "runs").mkdir()
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_grader = recorded\nexam_assignments = answers.jsonl\n")
    result = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert result.ret == 4
    assert "not a nugget assignment file" in result.stderr.str() + result.stdout.str()


def test_the_report_folder_may_not_hold_an_assignment_file(pytester: pytest.Pytester) -> None:
    """A file named with --exam-assignments is an input: a report folder holding it is refused before grading
    (its writer owns the folder)."""
    write_lines(pytester.path / "banks" / "nuggets.jsonl", [
        {"qid": "t1", "query": "q", "nuggets": [{"text": "n1", "importance": "vital"}]}])
    write_lines(pytester.path / "reports" / "bm25-gpt.jsonl", [line("t1", [("n1", "vital", "support")])])
    (pytester.path / "runs").mkdir()
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_grader = recorded\n"
                     "exam_assignments = reports/bm25-gpt.jsonl\n")
    result = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert result.ret == 4, result.stdout.str()
    assert "holds the input" in result.stderr.str() + result.stdout.str()
    assert (pytester.path / "reports" / "bm25-gpt.jsonl").exists()
