"""The gates' checks over a result document (either envelope): each run's gated measures (and the features' gate
figures) against their thresholds, the changes against a reference report with a paired permutation test over the
queries both scored, and the gates that check nothing. The gates themselves (thresholds, allowances,
:class:`GateResult`) are declared in exam_harness/config/gates.py, below the document; results/verdict.py turns
these checks into the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from exam_harness.config.gates import (
    HOLDING_FIGURE,
    JUDGE_FIGURES,
    Allowance,
    GateResult,
    HoldingFigure,
    RequiredScope,
    Threshold,
    split_holds,
)
from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_kinds import KIND_NAMES

if TYPE_CHECKING:
    from exam_harness.config.gates import GateFigure, MeasureRegistry
    from exam_harness.core.grade_kinds import GradesNeeded
    from exam_harness.core.registry import Registry
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.schema import ExamReport, MeasureInfo

    Document: TypeAlias = ExamReport | EvaluationReport  # either result document: the core fields are the same


# --- reading a report ---------------------------------------------------------------------------


def find(report: Document, measure: str, registry: MeasureRegistry | None = None) -> MeasureInfo | None:
    """The report's measure that ``measure`` names (None where it holds none)."""
    from exam_harness.measures.lookup import find_measure

    try:
        return find_measure(report.measures, measure, registry)
    except ConfigError:
        return None


def not_for_generated(info: MeasureInfo | None, registry: MeasureRegistry | None = None) -> bool:
    """Whether the report's measure ``info`` gives a run of generated answers no value (a trec_eval measure
    over EXAM-Qrels: Measure.scores_generated); False for a measure the registry cannot parse."""
    if info is None:
        return False
    from exam_harness.measures.parsing import parse_measure

    try:
        return not parse_measure(info.name, registry).scores_generated
    except ConfigError:
        return False


def unscored_answers(report: Document, run: str, measure: str, registry: MeasureRegistry | None = None) -> bool:
    """Whether ``run`` is a run of generated answers and the measure named ``measure`` one that scores no
    generated answers (read from its name: an exam of generated answers alone does not plan it)."""
    system = next((s for s in report.systems if s.run == run), None)
    if system is None or not system.generated:
        return False
    from exam_harness.measures.parsing import parse_measure

    try:
        return not parse_measure(measure, registry).scores_generated
    except ConfigError:
        return False


def unsuited_grades(report: Document, measure: str, registry: MeasureRegistry | None = None
                    ) -> tuple[GradesNeeded, str] | None:
    """What ``measure`` needs and the kind of grades the report holds instead, where ``measure`` is computed from
    one kind of grades only (``Measure.grades_needed``, core/grade_kinds.py) and the report's grader gave another
    kind; else None."""
    from exam_harness.measures.parsing import parse_measure

    try:
        needed = parse_measure(measure, registry).grades_needed
    except ConfigError:
        return None
    if needed is None:
        return None
    kind = needed.unmet_by(report.settings.grader)
    return None if kind is None else (needed, kind)


def title(measure: str, report: Document, registry: MeasureRegistry | None = None) -> str:
    info = find(report, measure, registry)
    return info.title if info is not None else measure


# --- thresholds --------------------------------------------------------------------------------


def effective_thresholds(thresholds: Sequence[Threshold], runs: Sequence[str],
                         scope: RequiredScope | None = None) -> dict[tuple[str, str], float]:
    """(run, measure) -> the threshold that applies: the run's own, else the default for the measure (which
    skips a baseline run of ``scope``)."""
    applied: dict[tuple[str, str], float] = {}
    for t in thresholds:
        if t.run is None:
            for run in runs:
                if scope is None or not scope.is_baseline(run):
                    applied.setdefault((run, t.gated), t.value)
    for t in thresholds:
        if t.run is not None:
            applied[(t.run, t.gated)] = t.value
    return applied


@dataclass(frozen=True)
class GateCheck:
    """One run's measure against the threshold that applies to it (``value`` None: not in the report)."""

    run: str
    measure: str
    limit: float
    value: float | None
    title: str = ""  # the measure's column title in the report ("" where the report holds no such measure)
    figure: GateFigure | None = None  # the feature's gate figure the check reads (None: a measure)

    @property
    def lower_is_better(self) -> bool:
        """A gate figure declared so (a live system's latency, tokens, cost): the check fails above the limit."""
        return self.figure is not None and self.figure.lower_is_better

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.limit if self.lower_is_better else self.value >= self.limit


def threshold_checks(report: Document, thresholds: Sequence[Threshold],
                     registry: MeasureRegistry | None = None, scope: RequiredScope | None = None,
                     figures: Registry[GateFigure] | None = None) -> list[GateCheck]:
    """Every examined run's value of every gated measure (or gate figure of ``figures``) beside its threshold,
    sorted by run then measure (the judge's figures are the session's, checked by :func:`judge_results`)."""
    thresholds = [t for t in thresholds if t.measure not in JUDGE_FIGURES]
    systems = {s.run: s for s in report.systems}
    declared = {t.measure: figures.get(t.measure) for t in thresholds
                if figures is not None and t.measure in figures and t.holds is None}
    found = {t.measure: find(report, t.measure, registry) for t in thresholds if t.measure not in declared}
    own = {(t.run, t.gated) for t in thresholds if t.run is not None}
    # a threshold for every run on a measure of rankings gates the ranked runs (every run when none is ranked:
    # it fails, naming why); a run of generated answers named by its own threshold fails, naming why
    of_rankings = {name for name, info in found.items() if not_for_generated(info, registry)}
    ranked = any(not s.generated for s in report.systems)
    checks: list[GateCheck] = []
    for (run, gated), limit in sorted(effective_thresholds(thresholds, list(systems), scope).items()):
        system = systems.get(run)
        if system is None:
            continue  # a run named by a threshold but not examined: checked before grading
        if gated in declared:
            figure = declared[gated]
            content = report.sections.get(figure.section)
            # a threshold for every run gates the runs the figure names (every run when it names none: they fail)
            scoped = figure_runs(figure, content)
            if (run, gated) in own or run in scoped or not scoped:
                checks.append(GateCheck(run, gated, limit,
                                        figure.value(content, run) if content is not None else None,
                                        figure.title + (", at most" if figure.lower_is_better else ""), figure))
            continue
        measure, holds = split_holds(gated)
        info = found[measure]
        if holds is None and system.generated and measure in of_rankings and ranked and (run, gated) not in own:
            continue
        value: float | None
        if holds is not None:
            value = holding_cover(report, run, holds, figures)
        else:
            score = system.scores.get(info.name) if info is not None else None
            value = score.mean if score is not None else None
        checks.append(GateCheck(run, gated, limit, value, info.title if info is not None else ""))
    return checks


def figure_runs(figure: GateFigure, content: Any) -> set[str]:
    """The runs a threshold for every run gates on ``figure`` (its optional ``runs(content)``; none named: all)."""
    runs = getattr(figure, "runs", None)
    return set(runs(content)) if callable(runs) and content is not None else set()


def holding_cover(report: Document, run: str, holds: tuple[int, int],
                  figures: Registry[GateFigure] | None = None) -> float | None:
    """The run's EXAM-Cover counting test points answered in at least M of the K judge samples (None where
    the report holds no K samples per pair), read by the gate figure of ``@MofK`` (:func:`holding_figure`)."""
    figure = holding_figure(figures)
    if figure is None:
        return None
    return figure.holding(report.sections.get(figure.section), document_tau(report), run, holds)


def holding_samples(report: Document, figures: Registry[GateFigure] | None = None) -> int | None:
    """The judge's samples per pair the report's figures at its tau hold (None: asked once per pair)."""
    figure = holding_figure(figures)
    return None if figure is None else figure.samples(report.sections.get(figure.section), document_tau(report))


def holding_figure(figures: Registry[GateFigure] | None) -> HoldingFigure | None:
    """The gate figure ``@MofK`` reads (:data:`~exam_harness.config.gates.HOLDING_FIGURE`): the one of ``figures``,
    else (a caller that gives none) the in-tree features' (core/host.py); None where no plugin registers one."""
    if figures is None:
        from exam_harness.core.host import active_hook
        from exam_harness.core.registry import Registry

        figures = Registry("gate figure")
        active_hook().pytest_exam_register_gate_figures(registry=figures)
    if HOLDING_FIGURE not in figures:
        return None
    figure = figures.get(HOLDING_FIGURE)
    return figure if isinstance(figure, HoldingFigure) else None


def document_tau(report: Document) -> int:
    """The tau a document's gates read: the pytest report's, ``evaluate``'s first."""
    return report.settings.min_grade if report.kind == "exam-report" else report.settings.min_grades[0]


def judge_results(report: Document, thresholds: Sequence[Threshold]) -> list[GateResult]:
    """Each threshold on the judge's figure (``cascade-kept``) as a check of the verdict: the cascade's 95% lower
    bound of the share of its decider's passes it kept, at the document's tau (evaluate's first), against the
    limit; a document without a cascade's figures, or whose cascade entry was written before schema 4.2 (no
    bound), fails the check, saying why."""
    results: list[GateResult] = []
    for t in thresholds:
        if t.measure not in JUDGE_FIGURES:
            continue
        tau = document_tau(report)
        notes = report.sections.get("judge-notes")
        found = next((c for c in getattr(notes, "cascade", []) if c.min_grade == tau), None)
        if found is None:
            grader = report.settings.grader.name
            message = (f"FAIL cascade-kept: the document holds no cascade's figures at tau={tau} (grader {grader!r}), "
                       f"so it cannot meet {t.value:g}")
            results.append(GateResult(gate="exam-fail-under", measure=t.measure, limit=t.value, passed=False,
                                      message=message))
            continue
        if found.kept_lower_bound is None:  # an entry of a 4.0/4.1 document: an estimated miss rate, no bound
            message = (f"FAIL cascade-kept: the document's cascade figures at tau={tau} were written as schema "
                       f"{report.schema_version}, which stated an estimated miss rate, not a 95% lower bound of the "
                       f"share of its decider's passes kept, so it cannot meet {t.value:g}")
            results.append(GateResult(gate="exam-fail-under", measure=t.measure, limit=t.value, passed=False,
                                      message=message))
            continue
        value = float(found.kept_lower_bound)
        passed = value >= t.value - 1e-12
        said = (f"the cascade kept ≥ {100 * value:.1f}% of its decider's passes (95% lower bound, tau={tau}), "
                f"{found.calls:,} of {found.pairs:,} pairs sent")
        message = (f"{said}, at least the required {100 * t.value:g}%" if passed else
                   f"FAIL Required cascade-kept of {100 * t.value:g}% not reached: {said}")
        results.append(GateResult(gate="exam-fail-under", measure=t.measure, value=value, limit=t.value,
                                  passed=passed, message=message))
    return results


def threshold_failures(report: Document, thresholds: Sequence[Threshold],
                       registry: MeasureRegistry | None = None) -> list[str]:
    """One FAIL line per run and measure below its threshold (a measure the report lacks is a failure too)."""
    return [_threshold_message(check, report, registry)
            for check in threshold_checks(report, thresholds, registry) if not check.passed]


def _figure_message(check: GateCheck, figure: GateFigure) -> str:
    name = figure.title
    if check.value is None:
        missing = getattr(figure, "missing_message", None)  # optional: the figure's own words for it
        if callable(missing):
            return str(missing(check.run, check.limit))
        return (f"FAIL run {check.run!r} has no {name} (the document's {figure.section!r} section holds none for it), "
                f"so it cannot meet its limit {check.limit:g}")
    if figure.lower_is_better:
        if not check.passed:
            return (f"FAIL {name} of run {check.run!r} is {check.value:.4g}, above the allowed {check.limit:g} "
                    "(lower is better)")
        return f"{name} of run {check.run!r} is {check.value:.4g}, at most the allowed {check.limit:g}"
    if not check.passed:
        return f"FAIL Required {name} of {check.limit:g} not reached by run {check.run!r}: {check.value:.4g}"
    return f"{name} of run {check.run!r} is {check.value:.4g}, at least the required {check.limit:g}"


def _threshold_message(check: GateCheck, report: Document, registry: MeasureRegistry | None = None,
                       figures: Registry[GateFigure] | None = None) -> str:
    if check.figure is not None:
        return _figure_message(check, check.figure)
    measure, holds = split_holds(check.measure)
    name = title(measure, report, registry)
    if holds is not None:
        name += f" with verdicts holding in {holds[0]} of {holds[1]} samples"
        if check.value is None:
            samples = holding_samples(report, figures)
            asked = f"asked {samples} samples per pair" if samples is not None else "asked once per pair"
            return (f"FAIL run {check.run!r} cannot meet {name}: the judge was {asked} (grader option "
                    f"repeats={holds[1]} asks {holds[1]})")
    if check.value is None and holds is None and unscored_answers(report, check.run, measure, registry):
        return (f"FAIL {name} is not scored for generated answers (it measures a ranking of passages, over "
                f"EXAM-Qrels), and run {check.run!r} is a run of generated answers, so it cannot meet its "
                f"threshold {check.limit:g}")
    unsuited = unsuited_grades(report, measure, registry) if check.value is None and holds is None else None
    if unsuited is not None:
        needed, kind = unsuited
        named = KIND_NAMES.get(needed.kind, needed.kind)
        gave = f"{kind} grades" if kind != "other" else f"grades that are not {named}"
        return (f"FAIL {name} is {needed.what}, and grader {report.settings.grader.name!r} gave {gave}, so run "
                f"{check.run!r} cannot meet its threshold {check.limit:g} ({needed.advice})")
    if check.value is None:
        return f"FAIL {name} is not in the report, so run {check.run!r} cannot meet its threshold {check.limit:g}"
    if not check.passed:
        return f"FAIL Required {name} of {check.limit:g} not reached by run {check.run!r}: {check.value:.4f}"
    return f"{name} of run {check.run!r} is {check.value:.4f}, at least the required {check.limit:g}"


def threshold_results(report: Document, checks: Sequence[GateCheck], registry: MeasureRegistry | None = None,
                      figures: Registry[GateFigure] | None = None) -> list[GateResult]:
    """Each threshold check as a check of the verdict (``--exam-fail-under``)."""
    return [GateResult(gate="exam-fail-under", run=c.run, measure=c.measure, value=c.value, limit=c.limit,
                       passed=c.passed, message=_threshold_message(c, report, registry, figures)) for c in checks]


# --- regressions against a reference -----------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One run's change on one measure from the reference report to the new one."""

    run: str
    measure: str
    old: float
    new: float
    queries: int  # queries both reports scored
    p: float  # two-sided paired permutation test over those queries (nan with fewer than 2)
    regressed: bool = False  # dropped by more than its allowance
    title: str = ""  # the measure's column title in the new report

    @property
    def delta(self) -> float:
        return self.new - self.old


def compare(
    old: Document, new: Document, measures: Sequence[str], allowances: Sequence[Allowance] = (),
    registry: MeasureRegistry | None = None,
) -> list[Change]:
    """Every run both reports hold, on every measure both hold: means, difference and the paired test.
    A measure is found by name in each report (so ``ndcg@10`` compares the first label variant's)."""
    from exam_harness.measures.significance import paired_permutation_test

    limits: Mapping[str, Allowance] = {a.measure: a for a in allowances}
    olds = {s.run: s for s in old.systems}
    changes: list[Change] = []
    for system in sorted(new.systems, key=lambda s: s.run):
        before = olds.get(system.run)
        if before is None:
            continue
        for measure in measures:
            was, now = find(old, measure, registry), find(new, measure, registry)
            if was is None or now is None or was.name not in before.scores or now.name not in system.scores:
                continue
            a, b = before.scores[was.name].mean, system.scores[now.name].mean
            pairs = paired_values(old, new, system.run, was.name, now.name)
            p = paired_permutation_test([y for _, y in pairs], [x for x, _ in pairs]) if len(pairs) >= 2 else math.nan
            allowance = limits.get(measure)
            regressed = allowance is not None and allowance.exceeded(a, b)
            changes.append(Change(system.run, measure, a, b, len(pairs), p, regressed, now.title))
    return changes


def paired_values(old: Document, new: Document, run: str | None, was: str,
                  now: str) -> list[tuple[float, float]]:
    """(old, new) value of measure ``was`` in ``old`` and ``now`` in ``new`` on every query both scored,
    for ``run`` (every run when None), in the new report's order."""
    before = {(r.run, r.query_id): r.scores.get(was) for r in old.per_query if run is None or r.run == run}
    pairs = []
    for row in new.per_query:
        if run is not None and row.run != run:
            continue
        a, b = before.get((row.run, row.query_id)), row.scores.get(now)
        if a is not None and b is not None:
            pairs.append((a, b))
    return pairs


def regression_failures(changes: Sequence[Change], allowances: Sequence[Allowance], report: Document,
                        reference: str, alpha: float, registry: MeasureRegistry | None = None, *,
                        old: Document | None = None) -> list[str]:
    return [r.message for r in regression_results(changes, allowances, report, reference, alpha, registry, old=old)
            if not r.passed]


def regression_results(changes: Sequence[Change], allowances: Sequence[Allowance], report: Document,
                       reference: str, alpha: float, registry: MeasureRegistry | None = None, *,
                       old: Document | None = None, scope: RequiredScope | None = None) -> list[GateResult]:
    """Each change on a measure with an allowed drop as a check of the verdict (``--exam-compare-fail``);
    its limit is the lowest value the allowance accepts (:meth:`Allowance.lowest`, never negative). Given the
    reference report ``old``, a gated measure that either report lacks for a run both hold is a failed check
    (issue 31, finding 14): a gate that cannot be checked must not pass silently."""
    limits = {a.measure: a for a in allowances}
    results = unmeasured_results(changes, allowances, old, report, reference, registry) if old is not None else []
    for c in changes:
        allowance = limits.get(c.measure)
        if allowance is None:
            continue  # shown in the comparison table, gated by nothing
        significance = ("significant" if c.p < alpha else "not significant") if not math.isnan(c.p) else "untested"
        change = (f"on {title(c.measure, report, registry)} against {reference}: {c.old:.4f} -> {c.new:.4f} "
                  f"({c.delta:+.4f}; "
                  f"allowed drop {allowance}); paired test over {c.queries} queries p = {c.p:.3g}, {significance} "
                  f"at alpha {alpha:g}")
        baseline = scope is not None and scope.is_baseline(c.run)
        message = (f"baseline run {c.run!r} (never gated) {'dropped' if c.regressed else 'changed'} {change}"
                   if baseline else f"FAIL run {c.run!r} regressed {change}" if c.regressed
                   else f"run {c.run!r} within its allowance {change}")
        results.append(GateResult(gate="exam-compare-fail", run=c.run, measure=c.measure, value=c.new,
                                  limit=allowance.lowest(c.old), passed=baseline or not c.regressed, message=message))
    return results


def unmeasured_results(changes: Sequence[Change], allowances: Sequence[Allowance], old: Document,
                       new: Document, reference: str, registry: MeasureRegistry | None = None) -> list[GateResult]:
    """A failed ``exam-compare-fail`` check for each run both reports hold and each allowed drop with no
    change to check: the measure is missing from the reference, from this report, or from the run's scores.
    The message names the measures both reports hold, so a misnamed gate is fixed at once."""
    compared = {(c.run, c.measure) for c in changes}
    olds = {s.run for s in old.systems}
    results = []
    for allowance in dict.fromkeys(allowances):
        was, now = find(old, allowance.measure, registry), find(new, allowance.measure, registry)
        lacking = (f"the reference {reference}" if was is None else "this report" if now is None
                   else "the run's scores in one of the reports")
        both = sorted({m.title for m in old.measures} & {m.title for m in new.measures})
        ranked_only = not_for_generated(now, registry)
        for system in sorted(new.systems, key=lambda s: s.run):
            if system.run not in olds or (system.run, allowance.measure) in compared:
                continue
            if ranked_only and system.generated:
                continue  # a measure of rankings gives generated answers no value in either report: no change
            results.append(GateResult(
                gate="exam-compare-fail", run=system.run, measure=allowance.measure, passed=False,
                message=f"FAIL run {system.run!r}: the allowed drop {allowance} cannot be checked: "
                        f"{allowance.measure!r} is not in {lacking}; measures both reports hold: "
                        f"{', '.join(both) or 'none'}"))
    return results


# --- a gate that checks nothing -----------------------------------------------------------------


def unchecked_results(report: Document, thresholds: Sequence[Threshold], allowances: Sequence[Allowance],
                      results: Sequence[GateResult], *, reference: tuple[str, Document] | None = None,
                      baseline: str | None = None) -> list[GateResult]:
    """A failed check for each gate asked for that checked nothing in ``report`` (issue 39, finding 6): a
    threshold naming a run the document lacks or applying to none of its runs (no run at all, only the
    baseline), an allowed drop with no run both reports hold, a baseline with no other run. ``results`` are
    the checks made so far; a gate that checks nothing must not pass."""
    runs = [s.run for s in report.systems]
    held = ", ".join(repr(r) for r in runs[:10]) + (f" and {len(runs) - 10} more" if len(runs) > 10 else "") or "none"
    failed: list[GateResult] = []
    gated = {(r.run, r.measure) for r in results if r.gate == "exam-fail-under"}
    for t in dict.fromkeys(thresholds):
        if any(measure == t.gated and (t.run is None or run == t.run) for run, measure in gated):
            continue
        why = (f"the document holds no run {t.run!r}" if t.run is not None and t.run not in runs
               else "it applies to no run of the document (a default threshold skips the baseline run)")
        failed.append(GateResult(gate="exam-fail-under", run=t.run, measure=t.gated, limit=t.value, passed=False,
                                 message=f"FAIL the threshold {t} checks nothing: {why}; runs held: {held}"))
    compared = {r.measure for r in results if r.gate == "exam-compare-fail"}
    if reference is not None:
        name, old = reference
        common = sorted(set(runs) & {s.run for s in old.systems})
        why = (f"the reference {name} holds none of the document's runs (it holds "
               f"{', '.join(repr(s.run) for s in old.systems[:10]) or 'none'}; this document {held})" if not common
               else f"no run both reports hold ({', '.join(map(repr, common[:10]))}) is scored by it")
        failed += [GateResult(gate="exam-compare-fail", measure=a.measure, passed=False,
                              message=f"FAIL the allowed drop {a} checks nothing: {why}")
                   for a in dict.fromkeys(allowances) if a.measure not in compared]
    if baseline is not None and not any(r.gate == "exam-baseline" for r in results):
        failed.append(GateResult(gate="exam-baseline", run=baseline, passed=False,
                                 message=f"FAIL the baseline {baseline!r} checks nothing: the document holds no other "
                                         f"run to compare with it; runs held: {held}"))
    return failed


@dataclass(frozen=True)
class Verdicts:
    """What the gates decided, beside the report: threshold checks, changes against a reference and any
    other FAIL line the session printed (the baseline gate's)."""

    checks: Sequence[GateCheck] = ()
    changes: Sequence[Change] = ()
    reference: str | None = None
    alpha: float = 0.05
    failures: Sequence[str] = ()
