"""The result core both documents hold, built once for both front ends: each run's mean and standard error of
every measure (``systems[]``) and, where asked, every measure's value per run and query (``per_query[]``).

The pytest session (report/build.py) and ``exam-harness evaluate`` (report/evaluation.py) call this one
function with the same scored result, so the same inputs give the same core; the session adds what only it
tallies (each run's case outcomes, grade counts, fallbacks) through ``session``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext
from exam_harness.measures.result import ExamResult, MeasureResult
from exam_harness.measures.trec_rag import scores_the_track
from exam_harness.models import GraderSpec, Run
from exam_harness.plan import ExamPlan
from exam_harness.results.schema import QueryScore, Score, SystemScore


def planned_measures(plan: ExamPlan, ctx: ScoringContext, taus: Sequence[int], grader: GraderSpec) -> list[Measure]:
    """The plan's measures at each tau scored (the session's one, each of ``--min-grade``), each once (a
    measure without a tau, the answers' length, is planned once): nugget F where the exam has nuggets, the
    TREC RAG track's scores where nuggets carry an importance and ``grader`` gave assignment grades
    (measures/trec_rag.py: scores_the_track), citation measures where citations were graded; the trec measures
    only where some run is ranked (a run of generated answers gets no value of them: Measure.scores_generated)."""
    nuggets, support = any(ctx.exam.nuggets.values()), bool(ctx.exam.support)
    track = bool(ctx.exam.importance) and scores_the_track(grader)
    ranked = not ctx.runs or any(run not in ctx.exam.generated for run in ctx.runs)
    return list(dict.fromkeys(m for tau in taus for m in plan.measures(tau, nuggets=nuggets, track=track,
                                                                         support=support, ranked=ranked)))


def result_core(result: ExamResult, measures: Sequence[Measure], runs: Mapping[str, Run], *,
                covered: MeasureResult | None, unanswered: Mapping[str, Collection[str]] | None = None,
                session: Callable[[str], Mapping[str, Any]] | None = None,
                ) -> tuple[list[SystemScore], list[QueryScore]]:
    """``systems[]`` and ``per_query[]`` (empty when ``covered`` is None) of ``measures`` scored in ``result``.

    A query is incomplete for a run where some measure's value rests on a pair that could not be graded,
    or where the run's declared system failed on it (``unanswered``: run -> queries); a row's ``covered``
    counts the test points ``covered`` (EXAM-Cover's result at the first tau) covers; ``session(run)``
    gives the session-only fields of the run's ``SystemScore``.
    """
    named = [(str(m), result[m]) for m in measures]  # each result looked up once (a lookup prints the measure)
    unanswered = unanswered or {}
    incomplete = {run: set().union(*(set(r.incomplete.get(run, ())) for _, r in named), unanswered.get(run, ()))
                  for run in result.runs}
    systems: list[SystemScore] = []
    rows: list[QueryScore] = []
    for run in result.runs:
        run_incomplete = incomplete[run]
        held = [(name, r.scores[run]) for name, r in named if run in r.scores]
        systems.append(SystemScore(
            run=run, generated=runs[run].generated, queries=len(result.queries),
            scores={name: Score(mean=value.mean, stderr=value.stderr) for name, value in held},
            incomplete_queries=[q for q in result.queries if q in run_incomplete],
            **(session(run) if session is not None else {}),
        ))
        if covered is None:
            continue
        run_cover = covered.per_query[run]
        run_values = [(name, r.per_query.get(run, {})) for name, r in named]
        for q in result.queries:
            bank = len(result.test_points[q])
            rows.append(QueryScore(
                run=run, query_id=q, covered=round(run_cover[q] * bank), test_points=bank,
                scores={name: values[q] for name, values in run_values if q in values},
                incomplete=q in run_incomplete,
            ))
    return systems, rows
