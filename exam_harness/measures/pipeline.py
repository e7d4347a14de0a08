"""The one scoring pipeline: a set of measures over a graded exam -> one :class:`ExamResult`, holding
what the caller said it :class:`Needs` beside the values."""

from __future__ import annotations

from collections.abc import Sequence

from exam_harness.measures.base import Measure, PerQuery
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.qrels import qrels_file_name
from exam_harness.measures.result import ExamResult, MeasureResult, Needs, TopK
from exam_harness.measures.trec import TrecMeasure


def _incomplete(ctx: ScoringContext, measure: Measure, per_query: PerQuery) -> dict[str, tuple[str, ...]]:
    if not ctx.exam.failed:
        return {}
    pool, k = measure.pool_read(), measure.depth()
    found = {run: tuple(q for q in values if ctx.rests_on_failures(run, q, k, pool))
             for run, values in per_query.items()}
    return {run: queries for run, queries in found.items() if queries}


def _tops(ctx: ScoringContext, k: int) -> TopK:
    pooled = ctx.pool("top-k", k)
    return TopK(k=k, runs=list(ctx.runs), top=ctx.top_k(k), pooled=pooled,
                banks={q: ctx.bank(q) for q in ctx.queries},
                rows={q: ctx.recorded_rows(q, pooled[q]) for q in ctx.queries}, grades=ctx.exam.grades)


def score(exam: ScoringInput | ScoringContext, measures: Sequence[Measure], needs: Needs | None = None) -> ExamResult:
    """Compute every (bound) measure, and what ``needs`` asks for beside; work shared between measures
    (top-k lists, grade rows, pools, qrels) is done once (see ScoringContext). A run a measure does not
    score (a run of generated answers for a trec_eval measure: Measure.scores_run) has neither values nor
    a score in its result."""
    ctx = exam if isinstance(exam, ScoringContext) else ScoringContext(exam)
    needs = needs or Needs()
    for measure in measures:
        if isinstance(measure, TrecMeasure):
            measure.announce(ctx)
    results: dict[str, MeasureResult] = {}
    for measure in measures:
        if str(measure) in results:
            continue
        runs = [run for run in ctx.runs if measure.scores_run(run in ctx.exam.generated)]
        kept = set(runs)
        per_query = {run: values for run, values in measure.compute(ctx).items() if run in kept}
        scores = {run: measure.aggregate(per_query.get(run, {})) for run in runs}
        results[str(measure)] = MeasureResult(measure, per_query, scores, _incomplete(ctx, measure, per_query))
    return ExamResult(
        runs=list(ctx.runs), queries=list(ctx.queries), test_points=ctx.exam.test_points, results=results,
        qrels={qrels_file_name(cut.variant, cut.min_grade, cut.m): ctx.qrels(cut) for cut in needs.qrels},
        tops=_tops(ctx, needs.top_k) if needs.top_k is not None else None,
        pool=ctx.pool(*needs.pool) if needs.pool is not None else None)
