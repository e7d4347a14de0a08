"""``exam-harness evaluate``'s leaderboards: a view of the one scoring pipeline's result.

For each tau of the plan, every measure of :meth:`ExamPlan.measures` becomes a leaderboard with a
bootstrap confidence interval per system, Spearman's rho and Kendall's tau against an official
leaderboard when one is given, and paired significance tests against a baseline run on request.

JSON shape (``--json``)::

    {"leaderboards": [{"measure": "exam-cover@20", "min_grade": 3, "systems": {"runA": 0.71},
                       "stderr": {"runA": 0.03}, "ci": {"runA": [0.65, 0.77]},
                       "correlation": {"spearman": 0.72, "kendall": 0.54, ...}},
                      {"measure": "P@20", "label": "max-grade", "min_grade": 3, ...}, ...],
     "agreement": {...}, "settings": {...}, "grading": {...}, "collection": {...}}

Undefined numbers (a correlation over tied scores) are ``null``, never NaN, so the file is strict JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.analysis.agreement import AgreementResult, agreement_tables, finite
from exam_harness.errors import InputError
from exam_harness.grading import GradingOutcome
from exam_harness.inputs import ExamView
from exam_harness.io.textio import atomic_write_text
from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext
from exam_harness.measures.correlation import leaderboard_correlation
from exam_harness.measures.intervals import bootstrap_cis, compare_runs
from exam_harness.measures.pipeline import score
from exam_harness.measures.qrels import relevance_level
from exam_harness.measures.result import MeasureResult
from exam_harness.measures.trec import TrecMeasure
from exam_harness.models import GraderSpec
from exam_harness.options import ExamOptions
from exam_harness.plan import ExamPlan


class CorrelationResult(BaseModel):
    spearman: float | None
    kendall: float | None
    n: int
    spearman_p: float | None = None
    kendall_p: float | None = None
    missing: list[str] = Field(default_factory=list)
    extra: list[str] = Field(default_factory=list)


class ComparisonResult(BaseModel):
    diff: float
    ci: tuple[float, float]
    p: float
    significantly_worse: bool
    significantly_better: bool


class SignificanceResult(BaseModel):
    baseline: str
    method: str
    alpha: float
    resamples: int
    runs: dict[str, ComparisonResult]


class Leaderboard(BaseModel):
    """One measure at one minimum grade: every system's mean over queries."""

    model_config = ConfigDict(extra="forbid")

    measure: str
    label: str | None = None
    min_grade: int
    relevance_level: int | None = None
    queries: int = 0
    systems: dict[str, float]
    stderr: dict[str, float] = Field(default_factory=dict)
    ci: dict[str, tuple[float, float]] = Field(default_factory=dict)
    correlation: CorrelationResult | None = None
    significance: SignificanceResult | None = None
    per_query: dict[str, dict[str, float]] | None = None

    @property
    def key(self) -> str:
        return f"{self.measure}[{self.label}]" if self.label else self.measure


class CollectionSummary(BaseModel):
    queries: int
    passages: int
    distinct_passages: int
    runs: int
    test_points: int
    judged: int


class GradingSummary(BaseModel):
    """How the grades of an evaluation were obtained."""

    source: str  # "recorded" or "grader"
    grader: dict[str, Any] = Field(default_factory=dict)
    pairs: int = 0
    unique_pairs: int = 0
    cache_hits: int = 0
    graded: int = 0
    failures: int = 0
    seconds: float = 0.0
    failure_examples: list[str] = Field(default_factory=list)


_OPTIONAL_BOARD_KEYS = ("label", "relevance_level", "correlation", "significance", "per_query")


class EvaluationResult(BaseModel):
    leaderboards: list[Leaderboard]
    agreement: AgreementResult | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    grading: GradingSummary | None = None
    collection: CollectionSummary | None = None
    official: dict[str, float] | None = None

    def find(self, measure: str, min_grade: int, label: str | None = None) -> Leaderboard:
        for board in self.leaderboards:
            if board.measure == measure and board.min_grade == min_grade and board.label == label:
                return board
        have = sorted({(b.measure, b.label or "", b.min_grade) for b in self.leaderboards})
        raise KeyError(f"no leaderboard {measure!r} label={label!r} min_grade={min_grade}; have {have[:12]}")

    def to_json(self) -> dict[str, Any]:
        """The JSON document: optional parts that are absent are left out rather than null."""
        doc = self.model_dump(mode="json")
        for board in doc["leaderboards"]:
            for key in _OPTIONAL_BOARD_KEYS:
                if board.get(key) is None:
                    board.pop(key, None)
        return {key: value for key, value in doc.items() if value is not None}

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n")
        return path


def grading_summary(outcome: GradingOutcome, spec: GraderSpec) -> GradingSummary:
    if outcome.source == "recorded":
        grader: dict[str, Any] = {"name": "recorded", "model": spec.model, "prompt_class": spec.prompt_class}
        examples = [f"no recorded grade for passage {p} on {t}" for p, t in list(outcome.failures)[:3]]
    else:
        grader = spec.model_dump(mode="json")
        examples = [f"{p} on {t}: {msg}" for (p, t), msg in list(outcome.failures.items())[:3]]
    return GradingSummary(
        source=outcome.source, grader=grader, pairs=outcome.pairs, unique_pairs=outcome.unique,
        cache_hits=outcome.cache_hits, graded=outcome.graded, failures=len(outcome.failures),
        seconds=round(outcome.seconds, 3), failure_examples=examples,
    )


def check_baseline(baseline: str | None, runs: Mapping[str, object]) -> None:
    if baseline is not None and baseline not in runs:
        import difflib

        close = difflib.get_close_matches(baseline, list(runs), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(f"baseline run not found.{hint}", field="baseline", value=baseline,
                         expected="one of " + ", ".join(sorted(runs)))


def scoring_context(
    view: ExamView, outcome: GradingOutcome, plan: ExamPlan, responses: Mapping[str, Mapping[str, str]] | None = None
) -> ScoringContext:
    """The measures' context over the view's queries in exam order (the order decides bootstrap draws)."""
    return ScoringContext(view.scoring_input(outcome.grades, responses=responses, all_nuggets=plan.nugget_f))


def evaluate_exam(
    ctx: ScoringContext,
    view: ExamView,
    outcome: GradingOutcome,
    spec: GraderSpec,
    plan: ExamPlan,
    options: ExamOptions,
    *,
    official: Mapping[str, float] | None = None,
) -> EvaluationResult:
    """Every leaderboard of the plan at each of its tau values, plus the agreement tables."""
    data = view.data
    check_baseline(options.baseline, data.runs)
    nuggets = bool(ctx.exam.nuggets)
    measures = [m for tau in plan.min_grades for m in plan.measures(tau, nuggets=nuggets)]
    result = score(ctx, measures)
    boards = [_leaderboard(result[m], m, ctx, options, official) for m in measures]
    agreement = None
    if data.judgments:
        tps = {q: view.test_points[q] for q in view.queries}
        agreement = agreement_tables(outcome.grades, tps, data.judgments, relevance_level=plan.relevance_level,
                                     min_grades=plan.min_grades)
    pool = ctx.pool(plan.pool, plan.k)
    queries = list(ctx.queries)
    return EvaluationResult(
        leaderboards=boards,
        agreement=agreement,
        settings=_settings(plan, options),
        grading=grading_summary(outcome, spec),
        collection=CollectionSummary(
            queries=len(queries), passages=sum(len(pool[q]) for q in queries),
            distinct_passages=len({p for q in queries for p in pool[q]}), runs=len(data.runs),
            test_points=sum(len(view.test_points[q]) for q in queries),
            judged=sum(len(j) for q, j in data.judgments.items() if q in view.test_points),
        ),
        official=dict(official) if official else None,
    )


def _leaderboard(
    result: MeasureResult, measure: Measure, ctx: ScoringContext, options: ExamOptions,
    official: Mapping[str, float] | None,
) -> Leaderboard:
    per_query = {run: dict(values) for run, values in result.per_query.items()}
    label = measure.label if isinstance(measure, TrecMeasure) else None
    tau = int(getattr(measure, "min_grade", 0))  # every measure of an exam plan is bound to a tau
    board = Leaderboard(
        measure=measure.key,
        label=label,
        min_grade=tau,
        relevance_level=relevance_level(label, tau) if label is not None else None,
        queries=max((len(v) for v in per_query.values()), default=0),
        systems={run: s.mean for run, s in result.scores.items()},
        stderr={run: s.stderr for run, s in result.scores.items()},
        per_query=per_query if options.per_query else None,
    )
    if options.bootstrap:
        board.ci = bootstrap_cis(per_query, n_resamples=options.bootstrap, seed=options.seed,
                                 confidence=options.confidence)
    if official:
        c = leaderboard_correlation(board.systems, official)
        board.correlation = CorrelationResult(
            spearman=finite(c.spearman), kendall=finite(c.kendall), n=c.n, spearman_p=finite(c.spearman_p),
            kendall_p=finite(c.kendall_p), missing=c.missing, extra=c.extra,
        )
    if options.baseline is not None:
        qids = sorted({q for values in per_query.values() for q in values})
        comparisons = compare_runs(per_query, options.baseline, queries=qids, alpha=options.alpha,
                                   method=options.significance, n_resamples=options.resamples, seed=options.seed)
        board.significance = SignificanceResult(
            baseline=options.baseline, method=options.significance, alpha=options.alpha, resamples=options.resamples,
            runs={c.run: ComparisonResult(diff=c.diff, ci=(c.ci_low, c.ci_high), p=c.p,
                                          significantly_worse=c.significantly_worse,
                                          significantly_better=c.significantly_better) for c in comparisons},
        )
    return board


def _settings(plan: ExamPlan, options: ExamOptions) -> dict[str, Any]:
    return {
        "k": plan.k, "min_grades": list(plan.min_grades), "labels": list(plan.labels),
        "measures": list(plan.trec_measures), "qrels_m": plan.qrels_m, "pool": plan.pool,
        "judgment_level": plan.relevance_level, "alpha_ndcg": plan.alpha_ndcg,
        "redundancy_alpha": plan.redundancy_alpha, "nugget_f": True if plan.nugget_f else None, "beta": plan.beta,
        "bootstrap": options.bootstrap, "confidence": options.confidence, "seed": options.seed,
        "baseline": options.baseline, "significance": options.significance, "alpha": options.alpha,
        "resamples": options.resamples, "per_query": options.per_query,
    }
