"""Assignment files as a grade source: nuggetizer's assign output (and assessors' files of its shape) scored
with no grader, as nuggetizer's metrics and the track's W score them, per run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.features.trec_rag.assignments import read_assignment_files
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


def document_scores(doc: dict[str, Any]) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """run -> topic -> the six scores, and run -> their means, of an evaluation document (names by family)."""
    keys = ("A", "A_strict", "V", "V_strict", "W", "W_strict")
    per_topic: dict[str, dict[str, dict[str, float]]] = {}
    for row in doc["per_query"]:
        values = {name.split("(")[0]: value for name, value in row["scores"].items()}
        per_topic.setdefault(row["run"], {})[row["query_id"]] = {k: values[k] for k in keys}
    means = {s["run"]: {k: v["mean"] for name, v in s["scores"].items() if (k := name.split("(")[0]) in keys}
             for s in doc["systems"]}
    return per_topic, means


def test_assignment_files_score_each_run_as_the_hand_computation(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The evaluation document (the one evaluate writes for any exam) holds the six scores per run and topic
    as the hand computation gives them; a topic another file holds that a run's file lacks scores 0 there (as
    nuggetizer's assign step gives it an empty answer), so the run means are over every topic of the files."""
    a = write_lines(tmp_path / "bm25-gpt.jsonl", RUN_A)
    b = write_lines(tmp_path / "assessed" / "b.jsonl", RUN_B)
    out = tmp_path / "out.json"
    assert main(["evaluate", "--assignments", str(a), str(b), "--json", str(out), "--per-query",
                 "--trec-rag-dir", str(tmp_path / "track")]) == 0
    captured = capsys.readouterr()
    warnings = [w for w in captured.err.splitlines() if "warning:" in w]
    assert len(warnings) == 2  # one line per file with stray labels
    assert "1 nugget(s) with a label other than support/partial_support/not_support ('Support' x1" in warnings[0]
    assert "'partial support' x1" in warnings[1]
    doc = json.loads(out.read_text())
    assert doc["kind"] == "evaluation"
    per_topic, means = document_scores(doc)
    assert sorted(per_topic) == sorted(means) == ["bm25-gpt", "team-x"]
    zero = dict.fromkeys(("A", "A_strict", "V", "V_strict", "W", "W_strict"), 0.0)
    for run, rows in (("bm25-gpt", RUN_A), ("team-x", RUN_B)):
        want = dict.fromkeys(("t1", "t2", "t3"), zero) | {row["qid"]: hand(nuggets_of(row)) for row in rows}
        assert sorted(per_topic[run]) == sorted(want)
        for qid, scores in want.items():
            for key, value in scores.items():
                assert abs(per_topic[run][qid][key] - value) <= 1e-12, (run, qid, key)
        for key in zero:
            assert abs(means[run][key] - sum(s[key] for s in want.values()) / len(want)) <= 1e-12
    # nuggetizer's metrics file, one per run: a row per topic then the "all" row, its four scores only
    metrics = [json.loads(x) for x in (tmp_path / "track" / "bm25-gpt.metrics.jsonl").read_text().splitlines()]
    assert [m["qid"] for m in metrics] == ["t1", "t2", "t3", "all"]
    assert set(metrics[0]) == {"qid", "strict_vital_score", "strict_all_score", "vital_score", "all_score"}
    assert abs(metrics[0]["vital_score"] - 2.5 / 3) <= 1e-12
    assert abs(metrics[3]["all_score"] - sum(hand(nuggets_of(r))["A"] for r in RUN_A) / 3) <= 1e-12
    assigned = [json.loads(x) for x in (tmp_path / "track" / "team-x.assignments.jsonl").read_text().splitlines()]
    assert [(r["run_id"], r["qid"]) for r in assigned] == [("team-x", "t1"), ("team-x", "t2"), ("team-x", "t3")]
    assert assigned[2]["answer_text"] == "" and {n["assignment"] for n in assigned[2]["nuggets"]} == {"not_support"}
    table = (tmp_path / "track" / "trec-rag-per-topic.txt").read_text().splitlines()
    assert f"bm25-gpt W t1 {2.5 / 3.5:.4f}" in table and len(table) == 6 * 6
    csv = (tmp_path / "track" / "trec-rag-per-topic.csv").read_text().splitlines()
    assert csv[0] == "run,topic,A,A_strict,V,V_strict,W,W_strict" and len(csv) == 7


def test_evaluate_assignments_writes_the_one_document_and_verdict_gates_on_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``evaluate --assignments ... --report-dir out`` writes the report set every exam writes, its
    evaluation.json the one result document, and ``exam-harness verdict`` gates on it (issue 37, finding 11:
    it wrote a document of its own and --report-dir wrote nothing)."""
    a = write_lines(tmp_path / "bm25-gpt.jsonl", RUN_A)
    out = tmp_path / "out"
    assert main(["evaluate", "--assignments", str(a), "--report-dir", str(out)]) == 0
    capsys.readouterr()
    document = out / "evaluation.json"
    assert document.is_file() and json.loads(document.read_text())["kind"] == "evaluation"
    assert (out / "trec-rag-bm25-gpt.metrics.jsonl").is_file()
    mean_a = sum(hand(nuggets_of(row))["A"] for row in RUN_A) / len(RUN_A)
    assert mean_a > 0.4
    assert main(["verdict", str(document), "--fail-under", "A:0.4"]) == 0
    assert main(["verdict", str(document), "--fail-under", f"A:{mean_a + 0.01:.4f}"]) == 1
    assert "bm25-gpt" in capsys.readouterr().out


def test_two_assignment_sources_agree_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = write_lines(tmp_path / "team-x.jsonl", [line("t2", nuggets_of(RUN_B[1]))])
    human = write_lines(tmp_path / "human.jsonl", [
        {"run_id": "team-x", "qid": "t2", "nuggets": [{"text": "m1", "assignment": "support"},
                                                       {"text": "m2", "assignment": "not_support"},
                                                       {"text": "m3", "assignment": "not_support"}]}])
    out = tmp_path / "out.json"
    assert main(["evaluate", "--assignments", str(machine), "--human-assignments", str(human),
                 "--json", str(out)]) == 0
    agreement = json.loads(out.read_text())["sections"]["trec-rag-agreement"]
    assert agreement["pairs"] == 3 and agreement["agreement"] == 2 / 3
    assert agreement["confusion"]["support"]["not_support"] == 1
    assert "against human labels" in capsys.readouterr().out


def test_the_lines_of_one_topic_must_list_the_same_nuggets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The files' nuggets are the bank, one list per topic: a line that lists others is an input error
    naming both lines and the first nugget that differs."""
    a = write_lines(tmp_path / "a.jsonl", [line("t2", nuggets_of(RUN_A[1]))])
    other = [("m1", "vital", "support"), ("m2", "vital", "support"), ("m3", "okay", "support")]  # m2's importance
    b = write_lines(tmp_path / "b.jsonl", [line("t1", nuggets_of(RUN_A[0]), run="b"), line("t2", other, run="b")])
    assert main(["evaluate", "--assignments", str(a), str(b)]) == 4
    err = capsys.readouterr().err
    assert f"{b}:2" in err and "nuggets[1]" in err and f"{a}:1" in err


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
    from exam_harness.core.grade_kinds import grade_kind
    from exam_harness.core.models import GraderSpec
    from exam_harness.features.trec_rag.measures import scores_the_track
    from exam_harness.llm.modes import MODES

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
    """--exam-assignments FILE ...: the files' labels are recorded grades of the nuggets the files assigned,
    which the session scores (not the bank's: here the nugget file has a nugget no line assigned and lacks the
    repeated one), so every (run, topic) and every run mean equals what evaluate --assignments gives for the
    same files (issue 37, finding 7: it scored the bank's nuggets, failed on those without a grade and differed
    on their topics)."""
    a = write_lines(pytester.path / "given" / "bm25-gpt.jsonl", RUN_A)
    b = write_lines(pytester.path / "given" / "b.jsonl", RUN_B)
    bank_rows = [{"qid": row["qid"], "query": row["query"],
                  "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in row["nuggets"]]}
                 for row in RUN_A]
    bank_rows[0]["nuggets"] = [{"text": "n1", "importance": "vital"}, {"text": "n2", "importance": "vital"},
                               {"text": "n3", "importance": "okay"}, {"text": "n9", "importance": "vital"}]
    write_lines(pytester.path / "banks" / "nuggets.jsonl", bank_rows)
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_grader = recorded\n")
    (pytester.path / "empty").mkdir()  # a runs folder with no run in it
    result = pytester.runpytest("banks", "-p", "no:cacheprovider", "--exam-runs", str(pytester.path / "empty"),
                                "--exam-assignments", str(a), "--exam-assignments", str(b))
    assert result.ret in (0, 1), result.stdout.str()
    assert "error" not in result.stdout.str().lower().split("short test summary")[-1]  # no nugget without a grade
    result.stdout.fnmatch_lines(["*banks/nuggets.jsonl: 3 topic(s) (t1, t2, t3) are scored on the nuggets the "
                                 "--exam-assignments files assigned*"])
    out = pytester.path / "evaluated.json"
    assert main(["evaluate", "--assignments", str(a), str(b), "--json", str(out), "--per-query"]) == 0
    want_topics, want_means = document_scores(json.loads(out.read_text()))
    session = json.loads((pytester.path / "reports" / "exam-report.json").read_text())
    got_topics, got_means = document_scores(session)
    assert got_topics == want_topics and len(got_topics["team-x"]) == 3
    assert got_means.keys() == want_means.keys()
    for run, means in want_means.items():
        assert got_means[run] == pytest.approx(means, abs=1e-12)
    for run in ("bm25-gpt", "team-x"):  # nuggetizer's per-run files agree as well
        rows = (pytester.path / "reports" / f"trec-rag-{run}.metrics.jsonl").read_text().splitlines()
        assert [json.loads(x)["qid"] for x in rows] == ["t1", "t2", "t3", "all"]


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
