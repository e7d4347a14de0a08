"""``exam-harness evaluate``'s document: the result core of the JSON report inside an evaluation envelope.

For each tau of the plan, every measure of :meth:`ExamPlan.measures` is scored once by the one scoring
pipeline. The scores are the report's result core (results/schema.py): ``measures[]`` (each with its
printed name, title, label, tau and k), ``systems[].scores[NAME]`` (mean and standard error) and, with
``--per-query``, ``per_query[].scores[NAME]``. The envelope adds what only ``evaluate`` computes, per
measure in ``leaderboards[]`` (keyed by the measure's name): the queries it scored and those it left out
(n-EXAM where no passage of the pool covers a test point) and bootstrap confidence intervals; and for the
whole evaluation the settings, the grading summary (the report's cache summary with its source) and the
collection.

JSON shape (``--json``)::

    {"kind": "evaluation", "schema_version": "4.1", "measures": [{"name": "exam-cover(tau=3)@20", ...}],
     "systems": [{"run": "runA", "queries": 43, "scores": {"exam-cover(tau=3)@20": {"mean": 0.71,
                  "stderr": 0.03}}}],
     "leaderboards": [{"measure": "exam-cover(tau=3)@20", "key": "exam-cover@20", "queries": 43,
                       "dropped": [], "ci": {"runA": [0.65, 0.77]}}],
     "sections": {"correlations": {...}, "agreement": {...}}, "settings": {...}, "grading": {...},
     "collection": {...}}

``sections`` holds the optional parts, each computed by its section (results/sections.py, sections/) from
the inputs given here through :class:`~exam_harness.results.scored.Scored`: the correlations with the
official leaderboard, significance against a baseline, the agreement with the judgments (with the
"min answers = m" views and the direct grades), those of the features given by evaluate's options (the runs
over external qrels, the nugget assignments against human ones); and those both front ends compute the same way:
an LLM grader's cost, judge variance
at each tau, a plugin's own.
``results/document.py`` joins this envelope and the pytest report into the one JSON schema
``exam-harness schema`` prints.

Undefined numbers (a correlation over tied scores) are ``null``, never NaN, so the file is strict JSON.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import InputError
from exam_harness.core.models import GraderSpec
from exam_harness.core.version import __version__
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import ExamPlan
from exam_harness.grading.passes import GradingOutcome
from exam_harness.measures.base import Measure
from exam_harness.measures.qrels import relevance_level
from exam_harness.measures.result import MeasureResult
from exam_harness.measures.significance import bootstrap_cis
from exam_harness.measures.trec import TrecMeasure
from exam_harness.report.core import build
from exam_harness.results.evaluation import (
    CollectionSummary,
    EvaluationGrading,
    EvaluationReport,
    EvaluationSettings,
    MeasureStats,
)
from exam_harness.results.scored import Scored, ScoringInputs, collect_scoring_inputs
from exam_harness.results.scoring import SupportCredits, score_exam, scoring_input


def grading_summary(outcome: GradingOutcome, cache: str | None = None) -> EvaluationGrading:
    """The grading pass in the report's terms; ``cache``: the grade cache's path (None for recorded grades)."""
    recorded = outcome.source == "recorded"
    if recorded:
        examples = [f"no recorded grade for passage {p} on {t}" for p, t in list(outcome.failures)[:3]]
    else:
        examples = [f"{p} on {t}: {msg}" for (p, t), msg in list(outcome.failures.items())[:3]]
    return EvaluationGrading(
        path=None if recorded else cache, pairs=outcome.pairs, unique_pairs=outcome.unique,
        hits=outcome.cache_hits, misses=0 if recorded else outcome.cache_misses, graded=outcome.graded,
        failures=len(outcome.failures), grading_seconds=round(outcome.seconds, 3),
        source="recorded" if recorded else "grader", failure_examples=examples,
    )


def check_baseline(baseline: str | None, runs: Mapping[str, object]) -> None:
    if baseline is not None and baseline not in runs:
        import difflib

        close = difflib.get_close_matches(baseline, list(runs), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(f"baseline run not found.{hint}", field="baseline", value=baseline,
                         expected="one of " + ", ".join(sorted(runs)))


def score_evaluation(view: ExamView, outcome: GradingOutcome, plan: ExamPlan, spec: GraderSpec, *,
                     responses: Mapping[str, Mapping[str, str]] | None = None,
                     support: SupportCredits | None = None, qrels: bool = False,
                     run_folders: Sequence[Path] = ()) -> Scored:
    """The exam scored as ``evaluate`` scores it (results/scoring.py): every tau of the plan, the queries in
    exam order (the order decides bootstrap draws), the plan's pool for the collection summary; with
    ``qrels`` the EXAM-Qrels at every tau. ``run_folders``: where the runs were read (a live system's
    manifest beside a run gives its failed queries and its latency and cost)."""
    exam = scoring_input(view, outcome, plan, responses=responses, support=support)
    scored = score_exam(exam, view, outcome, plan, plan.min_grades, grader=spec, qrels=qrels, pool=True)
    return replace(scored, run_folders=run_folders)


def evaluate_exam(
    scored: Scored,
    spec: GraderSpec,
    options: ExamOptions,
    *,
    official: Mapping[str, float] | None = None,
    min_answers: Sequence[int] = (),
    cache: str | None = None,
    inputs: ScoringInputs | None = None,
) -> EvaluationReport:
    """Every measure of the plan at each of its tau values (:func:`score_evaluation`); the sections
    (results/sections.py) computed from the inputs given: the correlations with ``official``, the agreement
    tables with the "min answers = m" views for each m of ``min_answers`` (and the direct-grade views when
    the files hold recorded direct grades), and what features add (the runs over external qrels ...)
    (``inputs``: by default what the active hook's features add for ``options``, results/scored.py)."""
    view, outcome, plan, result, measures = scored.view, scored.grading, scored.plan, scored.result, scored.measures
    data = view.data
    check_baseline(options.baseline, data.runs)
    queries = list(result.queries)
    stats = [_stats(result[m], m, queries, options) for m in measures]
    pool = result.pool
    if pool is None:
        raise ValueError("evaluate's document needs the pool scored with it (score_evaluation)")
    scored = replace(
        scored, official=official or None, min_answers=tuple(min_answers),
        inputs=inputs if inputs is not None else collect_scoring_inputs(options, "evaluate"))
    core = build(scored, per_query=options.per_query)
    return EvaluationReport(
        tool_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        settings=_settings(plan, options, spec),
        grading=grading_summary(outcome, cache),
        collection=CollectionSummary(
            queries=len(queries), passages=sum(len(pool[q]) for q in queries),
            distinct_passages=len({p for q in queries for p in pool[q]}), runs=len(data.runs),
            test_points=sum(len(view.test_points[q]) for q in queries),
            judged=sum(len(j) for q, j in data.judgments.items() if q in view.test_points),
        ),
        measures=core.measures,
        systems=core.systems,
        per_query=core.per_query,
        leaderboards=stats,
        sections=core.sections,
    )


def _stats(result: MeasureResult, measure: Measure, queries: Sequence[str], options: ExamOptions) -> MeasureStats:
    per_query = {run: dict(values) for run, values in result.per_query.items()}
    label = measure.label if isinstance(measure, TrecMeasure) else None
    tau = int(getattr(measure, "min_grade", 0))  # every measure of an exam plan is bound to a tau
    scored = {q for values in per_query.values() for q in values}
    stats = MeasureStats(
        measure=str(measure),
        key=measure.key,
        queries=max((len(v) for v in per_query.values()), default=0),
        dropped=[q for q in queries if q not in scored],
        relevance_level=relevance_level(label, tau) if label is not None else None,
    )
    if options.bootstrap:
        stats.ci = bootstrap_cis(per_query, n_resamples=options.bootstrap, seed=options.seed,
                                 confidence=options.confidence)
    return stats


def _settings(plan: ExamPlan, options: ExamOptions, spec: GraderSpec) -> EvaluationSettings:
    return EvaluationSettings(
        grader=spec, k=plan.k, min_grades=list(plan.min_grades), labels=list(plan.labels),
        measures=[str(m) for m in plan.requested], qrels_m=plan.qrels_m, pool=plan.pool,
        judgment_level=plan.relevance_level, alpha_ndcg=plan.alpha_ndcg,
        redundancy_alpha=plan.redundancy_alpha, nugget_f=plan.nugget_f, beta=plan.beta,
        bootstrap=options.bootstrap, confidence=options.confidence, seed=options.seed,
        baseline=options.baseline, significance=options.significance, alpha=options.alpha,
        resamples=options.resamples, per_query=options.per_query,
    )
