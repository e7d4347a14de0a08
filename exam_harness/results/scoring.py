"""Scoring an exam for its document, the same way for both front ends: the measures the plan gives at each
tau scored by the one pipeline (measures/pipeline.py), with what the document's builder reads beside them
(EXAM-Qrels, each run's top-k with its grades, the pool), as one :class:`~exam_harness.results.scored.Scored`.

The pytest session scores its one tau, ``exam-harness evaluate`` each of ``--min-grade``; the builders
(report/core.py) read the returned result only, never the scoring context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from exam_harness.core.models import GraderSpec
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import ExamPlan
from exam_harness.grading.passes import GradingOutcome
from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.pipeline import score
from exam_harness.measures.qrels import QrelsCut
from exam_harness.measures.result import Needs
from exam_harness.results.scored import Scored

SupportCredits = Mapping[str, Mapping[str, tuple[tuple[float | None, ...], ...]]]


def scoring_input(view: ExamView, grading: GradingOutcome, plan: ExamPlan, *,
                  responses: Mapping[str, Mapping[str, str]] | None = None, sort_queries: bool = False,
                  support: SupportCredits | None = None) -> ScoringInput:
    """The measures' input, one rule for both front ends: the view's queries (sorted for the pytest
    session, in exam order for ``evaluate``, where the order decides bootstrap draws), every test point a
    nugget where nugget F is asked for a bank without nuggets, the pairs that could not be graded (they
    count as uncovered, and the values resting on them are incomplete) and citation support credits."""
    exam = view.scoring_input(grading.grades, responses=responses, sort_queries=sort_queries,
                              all_nuggets=plan.nugget_f, failed=grading.failures.keys(), tie_order=plan.tie_order)
    return replace(exam, support=support) if support is not None else exam


def ranks_passages(exam: ScoringInput) -> bool:
    """Whether some run ranks the collection's passages (or no run is known yet): only then do the trec
    measures and the EXAM-Qrels they score against say anything (a generated answer is no passage)."""
    return not exam.runs or any(run not in exam.generated for run in exam.runs)


def planned_measures(plan: ExamPlan, exam: ScoringInput, taus: Sequence[int], grader: GraderSpec) -> list[Measure]:
    """The plan's measures at each tau scored (the session's one, each of ``--min-grade``), each once (a
    measure without a tau, the answers' length, is planned once): nugget F where the exam has nuggets, the
    measures features plan for this exam and ``grader``'s grades (hook ``pytest_exam_planned_measures``: the
    TREC RAG track's scores where nuggets carry an importance and the grades are assignments), citation measures
    where citations were graded; the trec measures only where some run is ranked (a run of generated answers
    gets no value of them: Measure.scores_generated)."""
    nuggets, support = any(exam.nuggets.values()), bool(exam.support)
    extra = features_measures(exam, grader)
    return list(dict.fromkeys(m for tau in taus for m in plan.measures(tau, nuggets=nuggets, extra=extra,
                                                                         support=support, ranked=ranks_passages(exam))))


def features_measures(exam: ScoringInput, grader: GraderSpec) -> list[Measure]:
    """The measures the active front end's features and plugins plan for ``exam`` (core/host.py), in hook order."""
    from exam_harness.core.host import active_hook

    planned = active_hook().pytest_exam_planned_measures(exam=exam, grader=grader)
    return [measure for measures in planned if measures for measure in measures]


def score_exam(exam: ScoringInput, view: ExamView, grading: GradingOutcome, plan: ExamPlan, taus: Sequence[int], *,
               grader: GraderSpec | None = None, qrels: bool = False, tops: bool = False, pool: bool = False,
               redact_all: bool = False) -> Scored:
    """The plan's measures at ``taus`` scored over ``exam``, as :class:`Scored`; with ``qrels`` the
    EXAM-Qrels of every label variant at each tau (by file name), with ``tops`` each run's top-k with the
    grades of its passages (the pytest session's outcomes and grade counts), with ``pool`` the plan's pool
    per query (no EXAM-Qrels where no run ranks passages: they would label nothing). ``grader``: the spec
    that gave the grades (the plan's by default)."""
    ctx = ScoringContext(exam)
    measures = planned_measures(plan, exam, taus, grader or plan.grader)
    cuts = [QrelsCut(label, tau, plan.qrels_m, plan.pool, plan.k) for tau in taus for label in plan.labels]
    needs = Needs(qrels=cuts if qrels and ranks_passages(exam) else (), top_k=plan.k if tops else None,
                  pool=(plan.pool, plan.k) if pool else None)
    result = score(ctx, measures, needs)
    return Scored(ctx=ctx, view=view, grading=grading, plan=plan, taus=list(taus), result=result,
                  measures=measures, redact_all=redact_all)
