"""One verdict over a result document: :func:`decide` ``(document, checks) -> Verdict``.

The checks a session makes, from the document alone (pure: no pytest, no file read, nothing changed):

- ``exam-fail-under``: each run's gated measures against their thresholds, and the judge's figure
  (``cascade-kept``: the cascade's lower bound of the share of its decider's passes it kept);
- ``exam-baseline``: no run significantly worse than the baseline run (paired test over queries);
- ``exam-compare-fail``: no run dropped against a kept report by more than allowed;
- ``incomplete-exam``: no run's scores rest on pairs that could not be graded (or on queries its
  declared system failed on);
- ``exam-max-fallbacks``: no run has more than its share of grades read by a fallback rule;
- the features' checks from their sections (hook ``pytest_exam_verdict_checks``): the cost feature's
  ``exam-max-cost`` (a session spent more than ``max_cost``), the live systems' ``exam-stale`` (a recording
  stale under ``--exam-stale=fail``).

A gate asked for that checks nothing (a threshold naming a run the document lacks, an allowed drop against a
kept report holding none of its runs, a document with no run) is a failed check of its own: it never passes.

The pytest session (pytest_plugins/reporting.py) decides here and maps the verdict onto its outcome
and JUnit cases; ``exam-harness verdict REPORT.json`` decides here from a saved document, so both reach
the same verdict. Failed exam cases (a missed required test point, a case whose pairs could not be
graded) fail a session too; :attr:`Decision.failed_cases` counts them from the document's tallies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from exam_harness.config.gates import COMPARED, Allowance, RequiredScope, Threshold
from exam_harness.results.gate_checks import (
    Change,
    GateCheck,
    compare,
    find,
    judge_results,
    regression_results,
    threshold_checks,
    threshold_results,
    unchecked_results,
)
from exam_harness.results.schema import ExamReport, GateResult, SystemScore, Verdict

if TYPE_CHECKING:
    from exam_harness.config.gates import GateFigure
    from exam_harness.config.options import ExamOptions
    from exam_harness.core.registry import Registry
    from exam_harness.measures.base import Measure
    from exam_harness.measures.significance import Comparison
    from exam_harness.results.evaluation import EvaluationReport

    Document: TypeAlias = ExamReport | EvaluationReport

BASELINE_MEASURE = "exam-cover"


@dataclass(frozen=True)
class Checks:
    """What to check, as the gate options say (``Checks.of(options, ...)``)."""

    thresholds: Sequence[Threshold] = ()
    allowances: Sequence[Allowance] = ()
    reference: tuple[str, ExamReport] | None = None  # (its name, the kept report) for --compare
    baseline: str | None = None
    alpha: float = 0.05
    significance: str = "permutation"
    resamples: int = 10000
    max_fallbacks: float = 0.05
    registry: Registry[type[Measure]] | None = None  # plugin measures, named as built-in ones
    scope: RequiredScope = field(default_factory=RequiredScope)  # required points per run; the baseline
    figures: Registry[GateFigure] | None = None  # the features' gate figures a threshold may name

    @classmethod
    def of(cls, options: ExamOptions, reference: tuple[str, ExamReport] | None = None,
           registry: Registry[type[Measure]] | None = None, figures: Registry[GateFigure] | None = None) -> Checks:
        return cls(thresholds=options.fail_under, allowances=options.compare_fail, reference=reference,
                   baseline=options.baseline, alpha=options.alpha, significance=options.significance,
                   resamples=options.resamples, max_fallbacks=options.max_fallbacks, registry=registry,
                   scope=options.required_scope, figures=figures)


@dataclass(frozen=True)
class Decision:
    """The verdict and the details the summaries show beside it."""

    verdict: Verdict
    thresholds: Sequence[GateCheck] = ()
    changes: Sequence[Change] = ()  # every compared measure against the reference, gated or not
    comparisons: Sequence[Comparison] = ()  # every run against the baseline
    baseline_measure: str = ""  # the title of the measure the baseline compares
    per_query: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # run -> query -> that measure
    failed_cases: int = 0  # exam cases that failed: missed required test points, pairs not graded

    @property
    def passed(self) -> bool:
        return self.verdict.passed and not self.failed_cases


def decide(document: Document, checks: Checks) -> Verdict:
    """The document's verdict under ``checks``."""
    return decision(document, checks).verdict


def decision(document: Document, checks: Checks) -> Decision:
    """:func:`decide` with the details (threshold checks, changes, baseline comparisons)."""
    thresholds = threshold_checks(document, checks.thresholds, checks.registry, checks.scope, checks.figures)
    results = [*threshold_results(document, thresholds, checks.registry, checks.figures),
               *judge_results(document, checks.thresholds)]
    comparisons: list[Comparison] = []
    per_query: dict[str, dict[str, float]] = {}
    title = ""
    if checks.baseline is not None:
        from exam_harness.measures.significance import baseline_comparisons, baseline_message

        title, per_query = _per_query(document, BASELINE_MEASURE)
        comparisons = baseline_comparisons(per_query, checks.baseline, checks.alpha, checks.significance,
                                           n_resamples=checks.resamples)
        results += [GateResult(
            gate="exam-baseline", run=c.run, measure=BASELINE_MEASURE, value=c.mean, limit=c.baseline_mean,
            passed=not c.significantly_worse, message=baseline_message(c, title, checks.alpha)) for c in comparisons]
    changes: list[Change] = []
    if checks.reference is not None:
        name, reference = checks.reference
        measures = list(dict.fromkeys([*COMPARED, *(a.measure for a in checks.allowances)]))
        changes = compare(reference, document, measures, checks.allowances, checks.registry)
        results += regression_results(changes, checks.allowances, document, name, checks.alpha, checks.registry,
                                      old=reference, scope=checks.scope)
    results += unchecked_results(document, checks.thresholds, checks.allowances, results,
                                 reference=checks.reference, baseline=checks.baseline)
    over = {s.run for s in document.systems if over_fallback_limit(s.fallbacks, s.grade_counts, checks.max_fallbacks)}
    results += _incomplete_results(document, over)
    results += [_fallback_result(s, checks.max_fallbacks) for s in document.systems if s.run in over]
    results += feature_checks(document)
    verdict = Verdict(passed=all(r.passed for r in results), gates=results)
    failed = sum(s.outcomes.required_missed + s.outcomes.errors for s in document.systems)
    return Decision(verdict, thresholds, changes, comparisons, title, per_query, failed)


def feature_checks(document: Document) -> list[GateResult]:
    """The checks the features make from their sections (``pytest_exam_verdict_checks``), in their order: those of
    the front end's plugins, else the in-tree features' (core/host.py)."""
    from exam_harness.core.host import active_hook

    return [result for found in active_hook().pytest_exam_verdict_checks(document=document) if found
            for result in found]


def over_fallback_limit(fallbacks: int, grade_counts: Mapping[str, int], limit: float) -> bool:
    """Whether more than ``limit`` of a run's grades were read by a fallback rule (``--max-fallbacks``):
    its scores over the queries holding such grades are then incomplete (the report builder marks them)."""
    return bool(fallbacks) and fallbacks > limit * _graded(grade_counts)


def incomplete_cause(document: Document) -> int:
    """The pairs that could not be graded (0: only declared systems failed on some queries)."""
    return document.cache.failures if isinstance(document, ExamReport) else document.grading.failures


def _graded(grade_counts: Mapping[str, int]) -> int:
    return sum(n for grade, n in grade_counts.items() if grade != "failed")


def _per_query(document: Document, measure: str) -> tuple[str, dict[str, dict[str, float]]]:
    """The title of the document's ``measure`` and its value per run and query."""
    from exam_harness.core.errors import ConfigError

    info = find(document, measure)
    if info is None:
        raise ConfigError(f"the baseline compares {measure}, which the document does not hold")
    values: dict[str, dict[str, float]] = {s.run: {} for s in document.systems}
    for row in document.per_query:
        value = row.scores.get(info.name)
        if value is not None:
            values.setdefault(row.run, {})[row.query_id] = value
    if document.systems and not any(values.values()):
        raise ConfigError(f"the baseline compares {info.title} per query, and the document holds no per-query "
                          "scores (evaluate writes them with --per-query)")
    return info.title, values


def _incomplete_results(document: Document, over_fallbacks: set[str]) -> list[GateResult]:
    """A failed ``incomplete-exam`` check per run with incomplete queries (a run past the fallback limit
    has its own check: its incomplete queries include those its fallback grades made so)."""
    systems = [s for s in document.systems if s.incomplete_queries and s.run not in over_fallbacks]
    if incomplete_cause(document):
        why = ("the scores of run {run!r} rest on pairs that could not be graded in {n} of {queries} queries; "
               "they are not scores")
    else:  # only declared systems failed: the systems plugin's FAIL line says which, on how many queries
        why = ("run {run!r} has no answer in {n} of {queries} queries (its system failed on them); its scores are "
               "not scores")
    return [GateResult(gate="incomplete-exam", run=s.run, value=len(s.incomplete_queries), limit=0, passed=False,
                       message="FAIL incomplete exam: " + why.format(run=s.run, n=len(s.incomplete_queries),
                                                                     queries=s.queries))
            for s in systems]


def _fallback_result(s: SystemScore, limit: float) -> GateResult:
    graded = _graded(s.grade_counts)
    share = s.fallbacks / graded
    n = len(s.incomplete_queries)
    over = f"the {n} quer{'y' if n == 1 else 'ies'} marked incomplete"
    return GateResult(
        gate="exam-max-fallbacks", run=s.run, value=share, limit=limit, passed=False,
        message=f"FAIL run {s.run!r}: {s.fallbacks} of {graded} grades ({share:.1%}) were read by a fallback rule "
                f"from answers holding no grade, more than --exam-max-fallbacks {limit:g} allows; its scores over "
                f"{over} rest on them and are not scores")
