"""trec_eval measures order a run the way trec_eval does (score descending, ties by docno descending,
the rank column ignored) unless ``--tie-order rank``; EXAM-Cover keeps reading the rank column."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytrec_eval

from exam_harness.core.models import ExamData, Passage, Query, QueryBank, RankedPassage, Run, TestPoint
from exam_harness.exam.inputs import view_from_banks
from exam_harness.measures.context import ScoringContext
from exam_harness.measures.qrels import QrelsCut
from tests.helpers import report_values

pytest_plugins = ["pytester"]

# Three passages tied at score 1.0 with ranks 1, 2, 3; only p1 answers the test point.
TIED = Run(name="tied", rankings={"q": [RankedPassage(passage_id=p, rank=r, score=1.0)
                                        for r, p in ((1, "p1"), (2, "p2"), (3, "p3"))]
                                  + [RankedPassage(passage_id="p0", rank=4, score=0.5)]})
BANK = QueryBank(query=Query(id="q", text="q"), test_points=(
    TestPoint(id="q/t", query_id="q", kind="question", text="t"),))
GRADES = {("p1", "q/t"): 5, ("p2", "q/t"): 0, ("p3", "q/t"): 0, ("p0", "q/t"): 0}


def test_trec_order_is_score_then_docno_descending() -> None:
    assert TIED.trec_order("q") == ["p3", "p2", "p1", "p0"]
    assert TIED.top_k("q", 4) == ["p1", "p2", "p3", "p0"]


def test_a_run_without_distinct_scores_keeps_its_rank_column() -> None:
    unscored = Run(name="gen", rankings={"q": [RankedPassage(passage_id=p, rank=r) for r, p in ((1, "b"), (2, "a"))]})
    assert unscored.trec_order("q") == ["b", "a"]


@pytest.mark.parametrize("tie_order", ["score", "rank"])
def test_measures_equal_trec_eval_on_the_raw_run(tie_order: str) -> None:
    """MRR and nDCG@10 over the EXAM-Qrels equal what trec_eval computes from the run file's own scores
    (score order), or what it computes when the rank column is made the order (rank order)."""
    data = ExamData(runs={"tied": TIED}, passages={p: Passage(id=p, text=p) for p in ("p0", "p1", "p2", "p3")})
    view = view_from_banks(data, [BANK])
    ctx = ScoringContext(view.scoring_input(GRADES, tie_order=tie_order))
    ours = ctx.trec(QrelsCut("max-grade", 4, 2, "judged", 20), "mrr")["tied"]["q"]
    qrels = ctx.qrels(QrelsCut("max-grade", 4, 2, "judged", 20))
    if tie_order == "score":
        run = {"q": {r.passage_id: r.score for r in TIED.rankings["q"]}}  # what a run file says
    else:
        run = {"q": {p: float(10 - i) for i, p in enumerate(TIED.top_k("q", 4))}}
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in qrels.items()}, {"recip_rank", "ndcg_cut"},
                                               relevance_level=4)
    theirs = evaluator.evaluate(run)["q"]
    assert ours["mrr"] == pytest.approx(theirs["recip_rank"], abs=1e-12)
    ndcg = ctx.trec(QrelsCut("max-grade", 4, 2, "judged", 20), "ndcg@10")["tied"]["q"]["ndcg@10"]
    assert ndcg == pytest.approx(theirs["ndcg_cut_10"], abs=1e-12)
    assert ours["mrr"] == pytest.approx(1 / 3 if tie_order == "score" else 1.0)


def test_exam_cover_reads_the_rank_column_either_way() -> None:
    data = ExamData(runs={"tied": TIED}, passages={p: Passage(id=p, text=p) for p in ("p0", "p1", "p2", "p3")})
    view = view_from_banks(data, [BANK])
    for tie_order in ("score", "rank"):
        ctx = ScoringContext(view.scoring_input(GRADES, tie_order=tie_order))
        assert ctx.covered("tied", "q", 1, 4) == {"q/t"}  # p1 is rank 1


def test_the_option_reaches_the_pytest_report(project: pytest.Pytester) -> None:
    """good.run ties p1 and p2 at one score: trec_eval puts p2 (the larger id) first. Under the count
    label p1 covers 2 test points and p2 1, so nDCG@2 is 1 in rank order and below 1 in score order."""
    import json

    (project.path / "runs" / "good.run").write_text("q1 Q0 p1 1 2.0 good\nq1 Q0 p2 2 2.0 good\nq2 Q0 p4 1 1.0 good\n")

    def ndcg(*args: str) -> float:
        project.runpytest("banks", "--exam-measures=ndcg@2", "--exam-labels=count", *args)
        report = json.loads((project.path / "reports" / "exam-report.json").read_text())
        value = report_values(report, "ndcg(label=count)@2")[("good", "q1")]
        assert value is not None
        return value

    assert ndcg("--exam-tie-order=rank") == pytest.approx(1.0)
    assert ndcg() == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


@pytest.mark.realdata
def test_dl19_measures_equal_trec_eval_on_the_runs_own_scores(shared_data: Path) -> None:
    """On DL19 nine runs have tied scores; under the default tie order every run's MRR and nDCG@10 over
    the EXAM-Qrels equal pytrec_eval's on the run's own scores (as trec_eval would read the run file)."""
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.extensions import cli_registries
    from exam_harness.grading.passes import replay

    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    data = inputs.load_runs([shared_data / "dl19" / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"])
    view, outcome, _ = replay(data)
    ctx = ScoringContext(view.scoring_input(outcome.grades, tie_order="score"))
    qrels = ctx.qrels(QrelsCut("max-grade", 4, 2, "judged", 20))
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in qrels.items()}, {"recip_rank", "ndcg_cut"},
                                               relevance_level=4)
    tied = [name for name, run in data.runs.items()
            if any(len({r.score for r in ranked}) < len(ranked) for ranked in run.rankings.values())]
    assert len(tied) >= 3
    for name in tied:
        ours = ctx.trec(QrelsCut("max-grade", 4, 2, "judged", 20), "mrr")[name]
        ndcg = ctx.trec(QrelsCut("max-grade", 4, 2, "judged", 20), "ndcg@10")[name]
        run = {q: {r.passage_id: r.score for r in ranked} for q, ranked in data.runs[name].rankings.items()}
        theirs = evaluator.evaluate(run)
        for q, values in theirs.items():
            assert ours[q]["mrr"] == pytest.approx(values["recip_rank"], abs=1e-12), (name, q)
            assert ndcg[q]["ndcg@10"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12), (name, q)
