"""EXAM-Qrels labels, qrels files and trec_eval measures, checked by hand and against pytrec_eval."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import pytrec_eval

from exam_harness.core.errors import ConfigError, InputError
from exam_harness.io.qrels import read_qrels, write_qrels
from exam_harness.measures import ScoringContext, ScoringInput, TrecMeasure
from exam_harness.measures.qrels import Qrels, QrelsCut, qrels_file_name, relevance_level
from exam_harness.measures.trec import TrecName, parse_trec_name
from exam_harness.measures.trec import trec_eval as evaluate

TEST_POINTS = {"q1": ["t1", "t2", "t3"], "q2": ["u1"], "q3": []}
GRADES = {
    ("a", "t1"): 5, ("a", "t2"): 3, ("a", "t3"): 0,
    ("b", "t1"): 3, ("b", "t2"): 3, ("b", "t3"): 3,
    ("c", "t1"): 1, ("c", "t2"): 0, ("c", "t3"): 2,
    ("x", "u1"): 4,
}
JUDGED = {"q1": ["a", "b", "c", "a"], "q2": ["x"], "q3": ["y"], "q9": ["z"]}


def qrels_labels(variant: str, min_grade: int, m: int = 2, judged: dict[str, list[str]] = JUDGED) -> Qrels:
    """The labels of the judged passages (no run: the pool is the judged passages)."""
    queries = [q for q, tps in TEST_POINTS.items() if tps]
    ctx = ScoringContext(ScoringInput(queries=queries, test_points=TEST_POINTS, rankings={}, grades=GRADES,
                                      judged=judged))
    return ctx.qrels(QrelsCut(variant, min_grade, m, "judged", 20))


def test_label_variants() -> None:
    assert qrels_labels("max-grade", 3) == {
        "q1": {"a": 5, "b": 3, "c": 2}, "q2": {"x": 4},
    }
    assert qrels_labels("count", 3) == {
        "q1": {"a": 2, "b": 3, "c": 0}, "q2": {"x": 1},
    }
    assert qrels_labels("at-least-m", 3, m=3) == {
        "q1": {"a": 0, "b": 1, "c": 0}, "q2": {"x": 0},
    }
    assert qrels_labels("at-least-m", 3)["q1"] == {"a": 1, "b": 1, "c": 0}


def test_label_errors() -> None:
    with pytest.raises(InputError, match="Did you mean 'max-grade'"):
        qrels_labels("max_grade", 3)
    with pytest.raises(InputError, match="field 'm'"):
        qrels_labels("at-least-m", 3, m=0)
    # a passage without grades is labelled as if every grade were 0
    assert qrels_labels("count", 3, judged={"q2": ["z2"]}) == {"q1": {}, "q2": {"z2": 0}}


def test_qrels_cut_names_one_qrels() -> None:
    # m shapes only at-least-m labels, and max-grade labels are the same at every tau: such cuts share qrels
    assert QrelsCut("count", 3, 2, "judged", 20) == QrelsCut("count", 3, 5, "judged", 20)
    assert QrelsCut("at-least-m", 3, 2, "judged", 20) != QrelsCut("at-least-m", 3, 5, "judged", 20)
    assert QrelsCut("max-grade", 3, 2, "judged", 20).labels == QrelsCut("max-grade", 4, 0, "judged", 20).labels
    assert QrelsCut("count", 3, 2, "judged", 20).labels != QrelsCut("count", 4, 2, "judged", 20).labels
    assert QrelsCut("max-grade", 4, 2, "top-k", 20).relevance_level == 4
    assert QrelsCut("count", 4, 2, "top-k", 20).relevance_level == 1


def test_relevance_level() -> None:
    assert relevance_level("max-grade", 4) == 4
    assert relevance_level("count", 4) == 1
    assert relevance_level("at-least-m", 5) == 1


def test_write_read_round_trip(tmp_path: Path) -> None:
    qrels = {"q2": {"x": 4}, "q10": {"b": 0, "a": 12}, "q1": {"c": 2, "a": 5}}
    path = write_qrels(tmp_path / "out" / "exam.qrels", qrels)
    text = path.read_text()
    assert text == "q1 0 a 5\nq1 0 c 2\nq10 0 a 12\nq10 0 b 0\nq2 0 x 4\n"
    assert [p.name for p in path.parent.iterdir()] == ["exam.qrels"]  # no temp file left behind
    with path.open() as f:
        assert pytrec_eval.parse_qrel(f) == qrels
    assert read_qrels(path) == qrels


def test_write_rejects_unwritable_ids(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="passage_id"):
        write_qrels(tmp_path / "q.qrels", {"q1": {"a b": 1}})
    with pytest.raises(InputError, match="label"):
        write_qrels(tmp_path / "q.qrels", {"q1": {"a": 1.5}})  # type: ignore[dict-item]
    assert not (tmp_path / "q.qrels").exists()


def test_read_qrels_errors_name_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.qrels"
    path.write_text("q1 0 a 1\n\nq1 0 b\n")
    with pytest.raises(InputError, match=r"bad.qrels:3: expected 4 fields"):
        read_qrels(path)
    path.write_text("q1 0 a one\n")
    with pytest.raises(InputError, match=r":1: relevance label is not an integer"):
        read_qrels(path)
    path.write_text("q1 0 a 1\nq1 0 a 2\n")
    with pytest.raises(InputError, match=r":2: passage judged twice"):
        read_qrels(path)


@pytest.mark.parametrize(
    ("text", "name", "trec"),
    [
        ("P@20", "P@20", "P_20"), ("p@5", "P@5", "P_5"), ("P_20", "P@20", "P_20"), ("map", "map", "map"),
        ("MAP", "map", "map"), ("map@100", "map@100", "map_cut_100"), ("nDCG@10", "ndcg@10", "ndcg_cut_10"),
        ("ndcg_cut_20", "ndcg@20", "ndcg_cut_20"), ("ndcg", "ndcg", "ndcg"), ("rprec", "rprec", "Rprec"),
        ("R-prec", "rprec", "Rprec"), ("mrr", "mrr", "recip_rank"), ("recip_rank", "mrr", "recip_rank"),
        ("recall@100", "recall@100", "recall_100"), ("bpref", "bpref", "bpref"),
    ],
)
def test_parse_measure(text: str, name: str, trec: str) -> None:
    measure = parse_trec_name(text)
    assert measure == TrecName(name, trec)
    assert parse_trec_name(str(measure)) == measure


@pytest.mark.parametrize(
    ("text", "hint"),
    [("ndgc@10", "Did you mean 'ndcg@10'?"), ("mrr@10", "Did you mean 'mrr'?"), ("P@0", "positive cut-off"),
     ("banana", "Available: P@k")],
)
def test_parse_measure_errors(text: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=r"unknown measure|cut-off") as info:
        parse_trec_name(text)
    assert hint in str(info.value)


QRELS = {"q1": {"a": 2, "b": 1, "c": 0, "d": 1}}
ALL = ["P@20", "map", "ndcg@10", "ndcg@20", "rprec", "mrr"]


def test_trec_eval_breaks_score_ties_by_docid_descending() -> None:
    """Why evaluate() turns ranks into strictly decreasing scores."""
    raw = pytrec_eval.RelevanceEvaluator(QRELS, {"recip_rank"}).evaluate({"q1": {"a": 1.0, "b": 1.0, "c": 1.0}})
    assert raw["q1"]["recip_rank"] == 0.5  # read as c, b, a
    ours = evaluate(QRELS, {"run": {"q1": ["a", "b", "c"]}}, ["mrr"])
    assert ours["run"]["q1"]["mrr"] == 1.0  # our order a, b, c is kept


def test_evaluate_hand_values() -> None:
    rankings = {"run": {"q1": ["c", "b", "a"]}}
    got = evaluate(QRELS, rankings, ALL, relevance_level=1)["run"]["q1"]
    # relevant at level 1: a, b, d (R = 3); ranked c(0) b(1) a(2)
    assert got["mrr"] == pytest.approx(1 / 2)
    assert got["P@20"] == pytest.approx(2 / 20)
    assert got["map"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert got["rprec"] == pytest.approx(2 / 3)
    dcg = 0 + 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert got["ndcg@10"] == pytest.approx(dcg / idcg)  # graded gains
    assert got["ndcg@20"] == pytest.approx(dcg / idcg)
    strict = evaluate(QRELS, rankings, ALL, relevance_level=2)["run"]["q1"]
    assert strict["mrr"] == pytest.approx(1 / 3)  # only a is relevant at level 2
    assert strict["rprec"] == 0.0
    assert strict["ndcg@10"] == pytest.approx(dcg / idcg)  # relevance level does not touch nDCG gains


def test_evaluate_rejects_duplicate_passages_and_bad_measures() -> None:
    with pytest.raises(InputError, match="ranked twice"):
        evaluate(QRELS, {"run": {"q1": ["a", "b", "a"]}}, ALL)
    with pytest.raises(ConfigError, match="Did you mean 'ndcg@10'"):
        evaluate(QRELS, {"run": {"q1": ["a"]}}, ["ndgc@10"])


def test_missing_queries_count_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    per_query = evaluate(qrels, {"run": {"q1": ["a"], "q7": ["z"]}}, ["P@1", "mrr"])["run"]
    assert set(per_query) == {"q1"}  # trec_eval reports queries in both qrels and run only
    # the measure object scores every query of the exam, a query trec_eval does not report as 0
    grades = {("a", "t"): 4, ("b", "u"): 4}
    ctx = ScoringContext(ScoringInput(queries=["q1", "q2"], test_points={"q1": ["t"], "q2": ["u"]},
                                      rankings={"run": {"q1": ["a"], "q7": ["z"]}}, grades=grades))
    mrr = TrecMeasure(name="mrr", label="max-grade", min_grade=4, pool="top-k", k=20).compute(ctx)
    assert mrr == {"run": {"q1": 1.0, "q2": 0.0}}


def test_qrels_file_names() -> None:
    assert qrels_file_name("max-grade", 4, 2) == "exam-max-grade.qrels"
    assert qrels_file_name("count", 3, 2) == "exam-count-min3.qrels"
    assert qrels_file_name("at-least-m", 4, 3) == "exam-at-least-3-min4.qrels"


def _random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, list[str]]]]:
    rnd = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, dict[str, list[str]]] = {"r1": {}, "r2": {}}
    for q in range(6):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(30)]
        qrels[qid] = {d: rnd.choice([0, 0, 0, 1, 2, 3, 4, 5]) for d in rnd.sample(docs, 20)}
        for run in rankings:
            if run == "r2" and q == 5:
                continue  # r2 does not answer q5
            rankings[run][qid] = rnd.sample(docs, rnd.randint(5, 25))
    return qrels, rankings


@pytest.mark.parametrize("level", [1, 3])
def test_evaluate_matches_pytrec_eval_on_files(tmp_path: Path, level: int) -> None:
    qrels, rankings = _random_case(seed=level)
    qrels_path = write_qrels(tmp_path / "exam.qrels", qrels)
    measures = ["P@20", "map", "ndcg@10", "ndcg@20", "rprec", "mrr", "P@5", "recall@10"]
    ours = evaluate(read_qrels(qrels_path), rankings, measures, relevance_level=level)
    trec_names = {parse_trec_name(m).trec_name: parse_trec_name(m).name for m in measures}
    with qrels_path.open() as f:
        file_qrels = pytrec_eval.parse_qrel(f)
    for run, ranking in rankings.items():
        run_path = tmp_path / f"{run}.run"
        # a run file as systems write it: rank and a descending score with no ties
        run_path.write_text(
            "".join(
                f"{qid} Q0 {pid} {i + 1} {100.0 - i:.3f} {run}\n"
                for qid, pids in ranking.items()
                for i, pid in enumerate(pids)
            )
        )
        with run_path.open() as f:
            file_run = pytrec_eval.parse_run(f)
        theirs = pytrec_eval.RelevanceEvaluator(file_qrels, set(trec_names), relevance_level=level).evaluate(file_run)
        assert set(ours[run]) == set(theirs)
        for qid, values in theirs.items():
            for trec, value in values.items():
                assert ours[run][qid][trec_names[trec]] == pytest.approx(value), (run, qid, trec)


def test_a_trec_measure_gives_a_run_of_generated_answers_no_value() -> None:
    """Issue 27: the pipeline leaves a generated run out of a measure that declares scores_generated False
    (every trec_eval measure over EXAM-Qrels); EXAM-Cover still scores it, and the ranked run keeps both."""
    from exam_harness.measures import pipeline
    from exam_harness.measures.base import Bindings
    from exam_harness.measures.exam import ExamCover

    exam = ScoringInput(queries=["q1"], test_points={"q1": ["t"]},
                        rankings={"ranked": {"q1": ["p1", "p2"]}, "answers": {"q1": ["g1"]}},
                        grades={("p1", "t"): 5, ("g1", "t"): 5}, generated={"answers"})
    bindings = Bindings(k=20, min_grade=4, pool="top-k", qrels_m=1, label="max-grade", beta=3.0,
                        redundancy_alpha=0.5, empty="skip")
    trec, cover = TrecMeasure(name="P@20").bind(bindings), ExamCover().bind(bindings)
    result = pipeline.score(exam, [trec, cover])
    assert result[trec].means == {"ranked": pytest.approx(1 / 20)}  # p1 relevant among the 20 P@20 counts
    assert set(result[trec].per_query) == {"ranked"}
    assert set(result[cover].scores) == {"ranked", "answers"} and result[cover].means["answers"] == 1.0
    assert not TrecMeasure.scores_generated and ExamCover.scores_generated


def _mixed_exam(generated: bool, failed: frozenset[tuple[str, str]] = frozenset()) -> ScoringInput:
    """Ranked runs alone, or beside a run of generated answers whose segment (graded relevant, and named by
    the recorded grades, so in the judged pool too) no ranked run retrieves."""
    rankings: dict[str, dict[str, list[str]]] = {"r1": {"q1": ["c", "a", "b"], "q2": ["x"]},
                                                 "r2": {"q1": ["b", "c"], "q2": []}}
    grades = dict(GRADES)
    judged = {q: list(p) for q, p in JUDGED.items()}
    if generated:
        rankings["answers"] = {"q1": ["gen-s1", "a"], "q2": ["gen-s2"]}  # "a" is also a ranked run's passage
        grades.update({("gen-s1", "t1"): 5, ("gen-s1", "t2"): 5, ("gen-s1", "t3"): 4, ("gen-s2", "u1"): 5})
        judged["q1"].append("gen-s1")
        judged["q2"].append("gen-s2")
    queries = [q for q, tps in TEST_POINTS.items() if tps]
    return ScoringInput(queries=queries, test_points=TEST_POINTS, rankings=rankings, grades=grades, judged=judged,
                        generated={"answers"} if generated else frozenset(), failed=failed)


@pytest.mark.parametrize("pool", ["judged", "top-k"])
@pytest.mark.parametrize("variant", ["max-grade", "count", "at-least-m"])
def test_a_generated_run_leaves_the_ranked_runs_trec_measures_as_they_were(variant: str, pool: str) -> None:
    """Issue 27: a generated answer's segment is no passage of the collection; in the EXAM-Qrels it would be a
    relevant passage no ranking can retrieve and lower every ranked run's MAP, R-prec and nDCG."""
    from exam_harness.measures import pipeline

    m = 2 if variant == "at-least-m" else None
    measures = [TrecMeasure(name=name, label=variant, min_grade=3, m=m, pool=pool, k=20)
                for name in ("P@2", "map", "rprec", "ndcg@10", "ndcg")]
    alone, mixed = pipeline.score(_mixed_exam(False), measures), pipeline.score(_mixed_exam(True), measures)
    for measure in measures:
        assert set(mixed[measure].per_query) == {"r1", "r2"}
        assert mixed[measure].per_query == alone[measure].per_query, measure
        assert mixed[measure].means == alone[measure].means, measure
    assert alone[measures[1]].means["r1"] > 0  # the runs retrieve relevant passages: the comparison says something


def test_exam_qrels_hold_no_generated_segment() -> None:
    """The qrels the trec measures read and the ``*.qrels`` files hold (report.build.exam_qrels reads the same
    method) label the collection's passages; the answers' segments are asked for apart (the AutoJudge judge)."""
    ctx = ScoringContext(_mixed_exam(True))
    cut = QrelsCut("max-grade", 3, 0, "judged", 20)
    assert ctx.generated_segments("q1") == {"gen-s1"} and ctx.generated_segments("q2") == {"gen-s2"}
    assert ctx.qrels(cut) == {"q1": {"a": 5, "b": 3, "c": 2}, "q2": {"x": 4}}
    assert ctx.qrels(cut) == ScoringContext(_mixed_exam(False)).qrels(cut)
    assert ctx.qrels(cut, generated=True) == {"q1": {"gen-s1": 5}, "q2": {"gen-s2": 5}}


def test_a_failed_generated_segment_leaves_the_ranked_runs_trec_values_complete() -> None:
    """A failed pair marks incomplete the values that rest on it: not a trec measure's (its qrels hold no
    generated segment), still the generated run's EXAM-Cover."""
    from exam_harness.measures import pipeline
    from exam_harness.measures.exam import ExamCover

    trec = TrecMeasure(name="map", label="max-grade", min_grade=3, pool="judged", k=20)
    cover = ExamCover(k=20, min_grade=3)
    failed = _mixed_exam(True, failed=frozenset({("gen-s1", "t3")}))
    result = pipeline.score(failed, [trec, cover])
    assert result[trec].incomplete == {}
    assert result[cover].incomplete == {"answers": ("q1",)}
    assert result[trec].per_query == pipeline.score(_mixed_exam(False), [trec])[trec].per_query
