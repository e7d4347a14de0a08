"""The evaluation pipeline on the published TREC DL 2019 data (skipped without ../shared/data)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from exam_harness.analysis.analyses import missing_in_bank, spurious_test_points
from exam_harness.config.options import ExamOptions
from exam_harness.core.models import ExamData
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import make_plan
from exam_harness.features.agreement.section import Agreement
from exam_harness.features.workbench.grades import export_workbench
from exam_harness.grading.passes import GradingOutcome, replay
from exam_harness.io import load_bank, load_leaderboard, load_runs
from exam_harness.report.evaluation import evaluate_exam, score_evaluation
from exam_harness.results.evaluation import EvaluationReport, correlation_of

pytestmark = pytest.mark.realdata

GRADED = "dl19/dl19-graded-flan-t5-large-selfrating.jsonl.gz"


@pytest.fixture(scope="module")
def dl19(shared_data: Path) -> tuple[ExamData, ExamView, GradingOutcome, dict[str, float]]:
    data = load_runs([shared_data / GRADED]).data
    view, outcome, _ = replay(data)
    return data, view, outcome, load_leaderboard(shared_data / "dl19" / "official-leaderboard.json")


@pytest.fixture(scope="module")
def result(dl19: tuple[ExamData, ExamView, GradingOutcome, dict[str, float]]) -> EvaluationReport:
    _, view, outcome, official = dl19
    spec = replay(view.data)[2]
    options = ExamOptions(min_grade=(3, 4, 5), bootstrap=200)
    plan = make_plan(options, spec, several=True)
    return evaluate_exam(score_evaluation(view, outcome, plan, spec), spec, options, official=official)


def test_dl19_exam_has_the_published_size(dl19: tuple[ExamData, ExamView, GradingOutcome, dict[str, float]]) -> None:
    data, view, table, official = dl19
    assert len(view.queries) == 43
    assert sum(len(view.pooled[q]) for q in view.queries) == 9260
    assert len(data.runs) == 37 and len(official) == 36
    assert sum(len(view.test_points[q]) for q in view.queries) == 430
    assert len(table.grades) == 92600 and not table.failures


def test_dl19_every_leaderboard_and_the_agreement_tables(result: EvaluationReport) -> None:
    per_tau = {tau: [b for b in result.boards() if b.min_grade == tau] for tau in (3, 4, 5)}
    assert all(len(boards) == 2 + 3 * 6 + 1 for boards in per_tau.values())  # cover, n-exam, 3 labels x 6, alpha-nDCG
    for board in result.boards():
        assert len(board.systems) == 37 and all(math.isfinite(v) for v in board.systems.values())
        correlation = correlation_of(result.sections, board.name)
        assert correlation is not None and correlation.n == 36
        assert correlation.extra == ["UNH_exDL_bm25"]
        assert all(low <= board.systems[r] + 1e-12 and board.systems[r] <= high + 1e-12 for r, (low, high) in board.ci.items())
    # regression guards on the published grades (see the closing note of issue 4)
    cover3 = correlation_of(result.sections, result.find("exam-cover@20", 3).name)
    assert cover3 is not None and cover3.spearman == pytest.approx(0.719, abs=1e-3)
    ndcg = correlation_of(result.sections, result.find("ndcg@10", 4, "max-grade").name)
    assert ndcg is not None and ndcg.spearman == pytest.approx(0.956, abs=1e-3)
    section = result.sections["agreement"]
    assert isinstance(section, Agreement)
    agreement = section.tables
    assert agreement.passages == 9260
    strict = next(b for b in agreement.binarised if b.name == "strict")
    assert strict.counts == {1: {1: 1892, 0: 2633}, 0: {1: 609, 0: 4126}} and strict.kappa == pytest.approx(0.2924, abs=1e-4)


def test_dl19_replay_with_the_bank_and_analyses(
    shared_data: Path, dl19: tuple[ExamData, ExamView, GradingOutcome, dict[str, float]]
) -> None:
    data, _, table, _ = dl19
    banks = load_bank(shared_data / "dl19" / "dl19-genq-questions-v1.jsonl.gz")
    bank_view, bank_table, _ = replay(data, banks=banks)
    assert bank_table.grades == table.grades and not bank_table.failures
    assert bank_view.text_of(bank_view.test_points["19335"][0])
    missing = missing_in_bank(bank_view, bank_table, min_grade=4, relevance_level=2)
    assert sum(q.relevant for q in missing.queries) == 2501 and len(missing.passages) == 609  # strict table: 609
    spurious = spurious_test_points(bank_view, bank_table, min_grade=4, relevance_level=2, limit=5)
    assert spurious[0].non_relevant_high >= spurious[-1].non_relevant_high > 0


def test_dl19_workbench_round_trip(tmp_path: Path, dl19: tuple[ExamData, ExamView, GradingOutcome, dict[str, float]]) -> None:
    """load -> export -> load on four DL19 queries (every field the loaders read survives)."""
    data, view, _, _ = dl19
    queries = set(view.queries[:4])
    pool = {p for q in queries for p in view.pooled[q]}
    subset = ExamData.model_construct(
        runs={n: r.model_copy(update={"rankings": {q: v for q, v in r.rankings.items() if q in queries}})
              for n, r in data.runs.items()},
        passages={p: data.passages[p] for p in pool},
        judgments={q: data.judgments[q] for q in queries},
        recorded={pair: g for pair, g in data.recorded.items() if pair[1].split("/")[0] in queries},
    )
    summary = export_workbench(tmp_path / "dl19.jsonl.gz", subset)
    assert summary.queries == 4 and summary.recorded_grades == 10 * summary.paragraphs
    again = load_runs([tmp_path / "dl19.jsonl.gz"]).data
    assert again.passages == subset.passages and again.judgments == subset.judgments
    assert again.recorded == subset.recorded
    assert {n: r.rankings for n, r in again.runs.items()} == {n: r.rankings for n, r in subset.runs.items() if r.rankings}
