"""``exam-harness evaluate --qrels``: the runs scored over given qrels files, leaderboards correlated
with the official one, and per-query correlations against the official qrels (issue 11, item 2).

The hand-made exam (tests/helpers.py) ranks, top 2: A: q1 [p1 p2], q2 [p5 p7]; B: q1 [p3 p4],
q2 [p7 p6]; C: q1 [p4 p2], q2 [p6 p8]; official leaderboard A 1, B 2, C 3; its judgments (the
official qrels here): q1 p1 2, p2 1, p3 0, p4 0; q2 p5 3, p6 0, p7 2, p8 0. The qrels file of these
tests, QRELS: q1 p1 2, p2 1; q2 p5 2, p6 1.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.features.external_qrels.compute import per_query_correlation, qrels_leaderboards
from tests.helpers import write_exam

QRELS = "q1 0 p1 2\nq1 0 p2 1\nq2 0 p5 2\nq2 0 p6 1\n"
RANKINGS = {"A": {"q1": ["p1", "p2"], "q2": ["p5", "p7"]}, "B": {"q1": ["p3", "p4"], "q2": ["p7", "p6"]},
            "C": {"q1": ["p4", "p2"], "q2": ["p6", "p8"]}, "D": {"q1": ["p1"]}}
QRELS_MAP = {"q1": {"p1": 2, "p2": 1}, "q2": {"p5": 2, "p6": 1}}


@pytest.fixture
def exam(tmp_path: Path) -> tuple[Path, Path, Path]:
    path, official = write_exam(tmp_path / "data")
    qrels = tmp_path / "data" / "file.qrels"
    qrels.write_text(QRELS)
    return path, official, qrels


def test_qrels_leaderboards_by_hand() -> None:
    level1, = qrels_leaderboards("f", QRELS_MAP, RANKINGS, ["P@2"], 1)
    # P@2 at level 1: A q1 2/2, q2 1/2; B 0, 1/2; C 1/2, 1/2; D ranks only q1 (p1: 1/2) and scores 0 on q2
    assert level1.queries == 2 and level1.measure == "P@2"
    assert level1.systems == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.5, "D": 0.25})
    assert level1.per_query is not None and level1.per_query["D"] == {"q1": 0.5, "q2": 0.0}
    # stderr over 2 queries: |a - b| / 2
    assert level1.stderr["A"] == pytest.approx(0.25) and level1.stderr["C"] == pytest.approx(0.0)
    level2, = qrels_leaderboards("f", QRELS_MAP, RANKINGS, ["P@2"], 2)
    assert level2.systems == pytest.approx({"A": 0.5, "B": 0.0, "C": 0.0, "D": 0.25})


def test_qrels_of_other_queries_are_an_error_naming_the_file() -> None:
    with pytest.raises(InputError, match=r"other\.qrels: no query of the qrels is ranked by any run.*'Q1' ~ 'q1'"):
        qrels_leaderboards("other.qrels", {"Q1": {"p1": 1}}, RANKINGS, ["P@2"], 1)


def test_per_query_correlation_by_hand() -> None:
    ours = {"A": {"q1": 1.0, "q2": 0.5}, "B": {"q1": 0.0, "q2": 0.5}, "C": {"q1": 0.5, "q2": 0.5}}
    theirs = {"A": {"q1": 0.5, "q2": 1.0}, "B": {"q1": 0.0, "q2": 0.5}, "C": {"q1": 0.0, "q2": 0.0}}
    per_query, pooled, points = per_query_correlation(ours, theirs)
    # q1: our ranks A 1, C 2, B 3; theirs A 1, B and C 2.5. Spearman = Pearson of the ranks:
    # dx = (-1, 1, 0), dy = (-1, .5, .5) for A, B, C: 1.5 / sqrt(2 * 1.5) = sqrt(3)/2.
    # Kendall tau-b: AB, AC concordant, BC tied on their side: 2 / sqrt(3 * 2)
    assert per_query["q1"].spearman == pytest.approx(math.sqrt(3) / 2)
    assert per_query["q1"].kendall == pytest.approx(2 / math.sqrt(6)) and per_query["q1"].n == 3
    assert per_query["q2"].spearman is None and per_query["q2"].kendall is None  # every run scores 0.5
    assert sorted(points) == sorted((r, q, theirs[r][q], ours[r][q]) for r in ours for q in ("q1", "q2"))
    from scipy.stats import kendalltau

    xs, ys = [p[2] for p in points], [p[3] for p in points]
    assert pooled.kendall == pytest.approx(kendalltau(xs, ys).statistic) and pooled.n == 6


def test_evaluate_qrels_leaderboards_and_per_query(
    exam: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ev.json"
    code = main(["evaluate", str(exam[0]), "--official", str(exam[1]), "--k", "2", "--bootstrap", "0",
                 "--measures", "P@2", "--min-grade", "4", "--qrels", str(exam[2]), "--qrels-level", "1", "2",
                 "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "Qrels file.qrels (level 1)" in printed
    assert "Leaderboards over qrels files: correlation with the official leaderboard" in printed
    assert "Per-query correlation with the judgments of the run files" in printed
    ext: dict[str, Any] = json.loads(out.read_text())["sections"]["external-qrels"]
    assert ext["official_qrels"] == "judgments of the run files" and ext["official_relevance_level"] == 2
    boards = {(b["qrels"], b["relevance_level"]): b for b in ext["leaderboards"]}
    assert list(boards) == [("official qrels", 2), (str(exam[2]), 1), (str(exam[2]), 2)]
    # official qrels at level 2, P@2: A q1 [p1 2, p2 1] 1/2, q2 [p5 3, p7 2] 1 -> 0.75; B 0, 1/2; C 0, 0
    assert boards[("official qrels", 2)]["systems"] == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.0})
    level1 = boards[(str(exam[2]), 1)]
    assert level1["systems"] == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.5})
    # ranks A 1, C 2, B 3 vs official A 1, B 2, C 3: rho = 1 - 6 * 2 / (3 * 8) = 0.5; tau = (2 - 1) / 3
    assert level1["correlation"]["spearman"] == pytest.approx(0.5)
    assert level1["correlation"]["kendall"] == pytest.approx(1 / 3)
    assert boards[(str(exam[2]), 2)]["systems"] == pytest.approx({"A": 0.5, "B": 0.0, "C": 0.0})
    assert "per_query" not in level1  # only with --per-query
    per_query = {(c["source"], c.get("relevance_level"), c.get("min_grade")): c for c in ext["per_query"]}
    # level 1 vs the official qrels, P@2: q1 ours A 1, B 0, C 1/2; theirs A 1/2, B 0, C 0 (as in the
    # unit test above: rho sqrt(3)/2, tau 2/sqrt(6)); q2: every run 1/2 on our side, undefined
    c = per_query[(str(exam[2]), 1, None)]
    assert c["official_measure"] == "P@2" and c["undefined"] == 1
    assert c["mean_spearman"] == pytest.approx(math.sqrt(3) / 2)
    assert c["mean_kendall"] == pytest.approx(2 / math.sqrt(6))
    assert "points" not in c  # drawn, not written
    exam_cover = per_query[("exam-cover@2", None, 4)]
    assert exam_cover["measure"] == "exam-cover@2" and set(exam_cover["queries"]) == {"q1", "q2"}


def test_evaluate_official_qrels_file_and_per_query_plot(
    exam: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "ev.json"
    code = main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--measures", "P@2", "--min-grade", "4",
                 "--official-qrels", str(exam[2]), "--relevance-level", "1", "--per-query", "--plot",
                 str(tmp_path / "plots"), "--json", str(out)])
    capsys.readouterr()
    assert code == 0
    ext = json.loads(out.read_text())["sections"]["external-qrels"]
    assert ext["official_qrels"] == str(exam[2]) and ext["official_relevance_level"] == 1
    (board,) = ext["leaderboards"]  # the official qrels' only; no official leaderboard, no correlation
    assert board["systems"] == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.5}) and "correlation" not in board
    assert board["per_query"]["A"] == pytest.approx({"q1": 1.0, "q2": 0.5})
    assert [c["source"] for c in ext["per_query"]] == ["exam-cover@2"]
    png = (tmp_path / "plots" / "per-query-P2.png").read_bytes()
    assert png.startswith(b"\x89PNG") and (tmp_path / "plots" / "per-query-P2.svg").read_text().lstrip().startswith(
        "<?xml")


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("q1 0 p1 1\nq1 0 p2\n", [], "bad.qrels:2: expected 4 fields, found 3"),
        ("q1 0 p1 1\nq1 0 p2 high\n", [], "bad.qrels:2: relevance label is not an integer"),
        ("", [], "bad.qrels:1: the qrels file holds no judgments"),
        ("Q7 0 p1 1\n", [], "no query of the qrels is ranked by any run"),
        ("q1 0 p1 1\n", ["--qrels-level", "0"], "--qrels-level takes levels >= 1"),
    ],
)
def test_bad_qrels_stop_before_anything_is_scored(
    exam: tuple[Path, Path, Path], tmp_path: Path, content: str, extra: list[str], message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "bad.qrels"
    bad.write_text(content)
    assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--qrels", str(bad), *extra]) == 4
    assert message in capsys.readouterr().err


def test_qrels_level_needs_qrels(exam: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--official-qrels", str(exam[2]),
                 "--qrels-level", "2"]) == 4
    assert "--qrels-level needs --qrels" in capsys.readouterr().err


# --- published data -----------------------------------------------------------------------------


def _workbench(path: Path, runs: dict[str, dict[str, list[str]]]) -> Path:
    """A Workbench paragraph file of these runs' passages, each with one recorded grade (0) on one test
    point of its query, so that ``evaluate`` can replay grades; scores fall with the rank."""
    lines = []
    for qid in sorted({q for ranking in runs.values() for q in ranking}):
        pids = list(dict.fromkeys(p for ranking in runs.values() for p in ranking.get(qid, [])))
        paras = []
        for pid in pids:
            rankings = [{"method": run, "paragraphId": pid, "queryId": qid, "rank": r[qid].index(pid) + 1,
                         "score": 100.0 - r[qid].index(pid)} for run, r in runs.items() if pid in r.get(qid, [])]
            paras.append({"paragraph_id": pid, "text": f"passage {pid}", "paragraph_data": {"rankings": rankings},
                          "exam_grades": [{"self_ratings": [{"question_id": f"{qid}/t", "self_rating": 0}],
                                           "llm": "m", "prompt_info": {"prompt_class": "p"}}]})
        lines.append([qid, paras])
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
    return path


@pytest.mark.realdata
def test_dl20_rubric_qrels_load_and_score(shared_data: Path, tmp_path: Path) -> None:
    from exam_harness.io.qrels import read_qrels

    folder = shared_data / "dl20" / "rubric-qrels"
    files = sorted(folder.glob("*.qrel"))
    assert len(files) == 8
    question = read_qrels(folder / "QuestionSelfRatedUnanswerablePromptWithChoices.qrel")
    queries = sorted(question)[:3]
    by_label = {q: sorted(question[q], key=lambda p: (-question[q][p], p)) for q in queries}
    runs = {"best": {q: by_label[q][:30] for q in queries}, "worst": {q: by_label[q][::-1][:30] for q in queries}}
    path = _workbench(tmp_path / "dl20.jsonl.gz", runs)
    out = tmp_path / "ev.json"
    code = main(["evaluate", str(path), "--k", "20", "--bootstrap", "0", "--measures", "P@20", "ndcg@10",
                 "--qrels", *map(str, files), "--json", str(out), "--brief"])
    assert code == 0
    ext = json.loads(out.read_text())["sections"]["external-qrels"]
    assert ext["official_qrels"] is None and ext["per_query"] == []  # the file holds no judgments
    boards = {(Path(b["qrels"]).name, b["measure"]): b for b in ext["leaderboards"]}
    assert len(boards) == 16 and all(b["queries"] == 3 and b["relevance_level"] == 1 for b in boards.values())
    for qrels_file in files:
        qrels = read_qrels(qrels_file)
        # P@20 at level 1, counted here from the file: the share of each top 20 labelled >= 1
        expected = {run: sum(sum(qrels[q].get(p, 0) >= 1 for p in ranking[q][:20]) / 20 for q in queries) / 3
                    for run, ranking in runs.items()}
        assert boards[(qrels_file.name, "P@20")]["systems"] == pytest.approx(expected), qrels_file.name
    question_board = boards[("QuestionSelfRatedUnanswerablePromptWithChoices.qrel", "ndcg@10")]["systems"]
    assert question_board["best"] == pytest.approx(1.0) and question_board["worst"] < question_board["best"]


@pytest.mark.realdata
def test_dl19_judgments_as_a_qrels_file_equal_the_official_qrels(shared_data: Path, tmp_path: Path) -> None:
    from exam_harness.io import load_runs
    from exam_harness.io.qrels import write_qrels

    dl19 = shared_data / "dl19"
    paragraphs = dl19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
    qrels = write_qrels(tmp_path / "dl19.qrels", load_runs([paragraphs]).data.judgments)
    out = tmp_path / "ev.json"
    code = main(["evaluate", str(paragraphs), "--official", str(dl19 / "official-leaderboard.json"), "--min-grade",
                 "4", "--measures", "P@20", "ndcg@10", "--qrels", str(qrels), "--qrels-level", "2", "--bootstrap",
                 "0", "--brief", "--no-progress", "--json", str(out)])
    assert code == 0
    ext = json.loads(out.read_text())["sections"]["external-qrels"]
    official, ours = ext["leaderboards"][:2], ext["leaderboards"][2:]
    assert [b["qrels"] for b in official] == ["official qrels"] * 2 and [b["queries"] for b in ours] == [43, 43]
    for a, b in zip(official, ours):
        assert a["systems"] == pytest.approx(b["systems"], abs=1e-12)
        assert a["correlation"]["spearman"] > 0.9  # judged passages of the runs' top 20 rank the runs well
    same = [c for c in ext["per_query"] if c["source"] == str(qrels)]
    assert [c["mean_kendall"] for c in same] == pytest.approx([1.0, 1.0])
    exam_cover = [c for c in ext["per_query"] if c["source"] == "exam-cover@20"]
    assert len(exam_cover) == 2 and all(0.0 < c["mean_kendall"] < 1.0 for c in exam_cover)


# --- the TREC 2025 RAG track's relevance: nDCG@30 on NIST's topics, the judgment subtask's six columns ----


def test_the_2025_relevance_preset_scores_ndcg30_on_the_nist_judged_topics(
        exam: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """UMBRELA's qrels (here in the subtask's six columns) judge q1 and q2, NIST's only q1: every run's
    nDCG@30 over the UMBRELA qrels is taken on q1 alone, beside the official qrels' own."""
    umbrela = tmp_path / "umbrela.tsv"
    umbrela.write_text("q1 Q0 p1 3 1 umbrela\nq1 Q0 p2 2 0.8 umbrela\nq2 Q0 p5 3 1 umbrela\n")
    nist = tmp_path / "nist.qrels"
    nist.write_text("q1 0 p1 2\nq1 0 p3 1\n")
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--min-grade", "4", "--qrels", str(umbrela),
                 "--official-qrels", str(nist), "--trec-rag-2025-relevance", "--json", str(out)]) == 0
    capsys.readouterr()
    ext = json.loads(out.read_text())["sections"]["external-qrels"]
    boards = {b["qrels"]: b for b in ext["leaderboards"]}
    assert {b["measure"] for b in boards.values()} == {"ndcg@30"} and ext["measures"] == ["ndcg@30"]
    board = boards[str(umbrela)]
    assert board["queries"] == 1  # q2 is judged by UMBRELA only
    # trec_eval's nDCG (gain = label, discount log2(rank + 1)) on q1: ideal 3 + 2 / log2(3)
    ideal = 3 + 2 / math.log2(3)
    assert board["systems"] == pytest.approx({"A": 1.0, "B": 0.0, "C": (2 / math.log2(3)) / ideal})
    assert main(["evaluate", str(exam[0]), "--qrels", str(umbrela), "--trec-rag-2025-relevance"]) == 4  # usage
    assert "give both" in capsys.readouterr().err


def test_a_relevance_graders_qrels_are_written_in_the_judgment_subtasks_six_columns(
        exam: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``trec-rag-judgments.tsv`` (report set): ``topic_id Q0 segment_id judgment confidence run_id`` as the TREC
    2025 RAG guidelines' relevance-judgment subtask asks, judgments the max-grade EXAM-Qrels of UMBRELA's prompt,
    read back by the qrels reader as the same qrels."""
    pytest.importorskip("openai")
    from exam_harness.io.qrels import read_qrels
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.helpers import write_bank

    bank = write_bank(tmp_path / "bank.jsonl", {"q1": {"q1/a": "what is alpha"}, "q2": {"q2/a": "what is gamma"}})
    out = tmp_path / "out"
    with FakeOpenAIServer(lambda prompt: "##final score: 3" if "alpha" in prompt else "##final score: 1") as server:
        code = main(["evaluate", str(exam[0]), "--bank", str(bank), "--grader", "openai",
                     "--model", "fake-model", "--grader-option", "prompt=umbrela-zeroshot", "--grader-option",
                     f"base_url={server.base_url}", "--grader-option", "api_key=k", "--k", "2", "--bootstrap", "0",
                     "--cache", "none", "--report-dir", str(out)])
    assert code == 0, capsys.readouterr().err
    lines = (out / "trec-rag-judgments.tsv").read_text().splitlines()
    assert lines and all(len(line.split()) == 6 and line.split()[1] == "Q0" and line.split()[4] == "1"
                         and line.split()[5] == "exam-openai-fake-model" for line in lines)
    assert read_qrels(out / "trec-rag-judgments.tsv") == read_qrels(out / "exam-max-grade.qrels")
    assert {int(line.split()[3]) for line in lines} <= {0, 1, 2, 3}


def test_the_qrels_files_are_named_as_given(exam: tuple[Path, Path, Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative --qrels / --official-qrels path names its leaderboards as the user wrote it (as before the
    options were the feature's): the document does not change with the folder it was made in."""
    monkeypatch.chdir(exam[2].parent)
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--measures", "P@2", "--min-grade", "4",
                 "--qrels", exam[2].name, "--official-qrels", exam[2].name, "--json", str(out)]) == 0
    ext: dict[str, Any] = json.loads(out.read_text())["sections"]["external-qrels"]
    assert ext["official_qrels"] == "file.qrels"
    assert [b["qrels"] for b in ext["leaderboards"]] == ["official qrels", "file.qrels"]


def test_qrels_without_a_trec_measure_is_a_usage_error_before_grading(
        exam: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import exam_harness.cli.evaluate as evaluate_command

    def no_grading(*args: object, **kwargs: object) -> None:
        raise AssertionError("graded before refusing the options")

    monkeypatch.setattr(evaluate_command, "obtain_grades", no_grading)
    for measures in (["exam-cover"], ["exam-cover", "alpha-ndcg@5"]):
        assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--measures", *measures,
                     "--qrels", str(exam[2])]) == 4
        assert "--qrels scores the runs by trec_eval measures, and --measures names none" in capsys.readouterr().err
    # a trec measure among them: the command grades (here: reaches the grading step)
    with pytest.raises(AssertionError, match="graded before"):
        main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", "--measures", "exam-cover", "P@2",
              "--qrels", str(exam[2])])
