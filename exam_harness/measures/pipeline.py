"""The one scoring pipeline: a set of measures over a graded exam -> one :class:`ExamResult`."""

from __future__ import annotations

from collections.abc import Sequence

from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.result import ExamResult, MeasureResult
from exam_harness.measures.trec import TrecMeasure


def score(exam: ScoringInput | ScoringContext, measures: Sequence[Measure]) -> ExamResult:
    """Compute every (bound) measure; work shared between measures is done once (see ScoringContext).

    Pass a :class:`ScoringContext` to reuse its qrels afterwards (e.g. to write them to files).
    """
    ctx = exam if isinstance(exam, ScoringContext) else ScoringContext(exam)
    for measure in measures:
        if isinstance(measure, TrecMeasure):
            measure.announce(ctx)
    results: dict[str, MeasureResult] = {}
    for measure in measures:
        if str(measure) in results:
            continue
        per_query = measure.compute(ctx)
        scores = {run: measure.aggregate(per_query.get(run, {})) for run in ctx.runs}
        results[str(measure)] = MeasureResult(measure, per_query, scores)
    return ExamResult(runs=list(ctx.runs), queries=list(ctx.queries), test_points=ctx.exam.test_points,
                      results=results)
