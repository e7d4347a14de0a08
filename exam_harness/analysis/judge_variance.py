"""How much of a run's score is the judge's noise: the figures of a grader asked K times per pair
(grader option ``repeats``; definitions in docs/judge-variance.md).

For run r over the n scored queries, with ``x[q][s]`` the EXAM-Cover of query q when every pair takes its
grade of sample s alone:

* the sample scores ``S[s] = mean_q x[q][s]``; the *judge variance* is their variance over the K samples
  (``ddof=1``): how far the score of one sampled judge moves when the judge is asked again, the queries fixed;
* the *query variance* is the squared standard error of the report's score over its queries (``Var_q / n``,
  ``ddof=1``, the report's ``stderr`` squared): how far it moves with another draw of queries;
* the *judge share* is ``judge / (judge + query)`` (None when both are 0).

A *case* (a run on a test point, one pytest case) answers in sample s when some passage of the run's top-k
has a grade >= tau in sample s; it is *flaky* when it answers in some samples and not in others. A run's
``cover_at_least[m - 1]`` is its EXAM-Cover counting a test point as covered only when its case answers
in at least m of the K samples (the ``@MofK`` form of ``--exam-fail-under`` gates on it).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from exam_harness.measures.context import ScoringContext
from exam_harness.models import QueryBank
from exam_harness.report.schema import CaseSpread, JudgeVariance, RunJudgeVariance

Pair = tuple[str, str]


def _variance(values: Sequence[float]) -> float:
    return statistics.variance(values) if len(values) > 1 else 0.0


def judge_share(judge: float, query: float) -> float | None:
    """The judge's share of the two variances (None when the score varies with neither)."""
    total = judge + query
    return judge / total if total > 0 else None


def case_samples(test_point: str, top: Sequence[str], samples: Mapping[Pair, tuple[int, ...]], repeats: int,
                 min_grade: int) -> tuple[list[int | None], list[bool]]:
    """One case over the K samples: the best grade of the run's top-k ``top`` in each sample (None: no
    passage graded in every sample) and whether that sample answers the test point."""
    best: list[int | None] = [None] * repeats
    for pid in top:
        grades = samples.get((pid, test_point))
        if grades is not None:
            best = [g if b is None or g > b else b for g, b in zip(grades, best)]
    return best, [b is not None and b >= min_grade for b in best]


def judge_variance(
    ctx: ScoringContext,
    banks: Sequence[QueryBank],
    samples: Mapping[Pair, tuple[int, ...]],
    *,
    repeats: int,
    reducer: str,
    k: int,
    min_grade: int,
    measure: str,
    cover: Mapping[str, Mapping[str, float]],
    shown_id: Callable[[QueryBank, str], str] = lambda bank, tid: tid,
) -> JudgeVariance:
    """The judge-variance figures of every run of ``ctx``: ``samples`` are each pair's K sample grades,
    ``cover`` the report's per-query EXAM-Cover (run -> query -> value) at ``k`` and ``min_grade``;
    ``shown_id`` gives the id a case shows (its pytest id)."""
    tops = ctx.top_k(k)
    scored = {q for q in ctx.queries if ctx.bank(q)}
    by_query = {b.query.id: b for b in banks}
    runs: list[RunJudgeVariance] = []
    cases: list[CaseSpread] = []
    for run in ctx.runs:
        # per query: covered test points per sample, and per test point the samples it answers in
        per_sample: dict[str, list[int]] = {}
        holds: dict[str, list[int]] = {}
        flaky = 0
        for q in ctx.queries:
            if q not in scored:
                continue
            points = ctx.bank(q)
            top = tops[run][q]
            covered = [0] * repeats
            answered_in: list[int] = []
            for tid in points:
                best, answered = case_samples(tid, top, samples, repeats, min_grade)
                count = sum(answered)
                answered_in.append(count)
                for s, yes in enumerate(answered):
                    covered[s] += yes
                is_flaky = 0 < count < repeats
                flaky += is_flaky
                bank = by_query.get(q)
                cases.append(CaseSpread(run=run, query_id=q, test_point_id=shown_id(bank, tid) if bank else tid,
                                        best_grades=best, answered_in=count, flaky=is_flaky))
            per_sample[q] = covered
            holds[q] = answered_in
        n = len(per_sample)
        sample_scores = [sum(per_sample[q][s] / len(ctx.bank(q)) for q in per_sample) / n if n else 0.0
                         for s in range(repeats)]
        at_least = [sum(sum(c >= m for c in holds[q]) / len(ctx.bank(q)) for q in holds) / n if n else 0.0
                    for m in range(1, repeats + 1)]
        values = [v for q, v in cover.get(run, {}).items() if q in scored]
        query = _variance(values) / len(values) if values else 0.0
        judge = _variance(sample_scores)
        runs.append(RunJudgeVariance(
            run=run, score=sum(values) / len(values) if values else 0.0, sample_scores=sample_scores,
            judge_variance=judge, query_variance=query, judge_share=judge_share(judge, query),
            cases=sum(len(h) for h in holds.values()), flaky=flaky, cover_at_least=at_least))
    return JudgeVariance(repeats=repeats, reducer=reducer, measure=measure, min_grade=min_grade, k=k, runs=runs,
                         cases=cases)
