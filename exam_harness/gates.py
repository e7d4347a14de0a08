"""CI gates over a report: score thresholds per run and measure, and regressions against a reference.

Thresholds (``--exam-fail-under``) read ``[RUN=][MEASURE:]VALUE``: ``0.5`` (every run, EXAM-Cover),
``my-rag=0.6`` (one run), ``nugget-f:0.3`` (another measure), ``V_strict:0.4`` (a TREC RAG score),
``my-rag=ndcg@10:0.4``. A run's own
threshold for a measure replaces the default one for that measure. Values are finite, in 0..1.
A judge asked K times per pair (grader option ``repeats``) may be gated on verdicts that hold: the
suffix ``@MofK`` (``0.5@2of3``, ``my-rag=exam-cover:0.6@3of3``) reads EXAM-Cover counting a test point
as covered only where it is answered in at least M of the K samples (docs/judge-variance.md).

A MEASURE is any measure by name, as ``--exam-measures`` takes it (built-in, a plugin's, any trec_eval
measure); it names the report's first measure it matches (see measures/lookup.py: ``ndcg@10`` is the
first label variant's, ``exam-cover`` the report's EXAM-Cover whatever its k and tau).

A declared live system's recorded figures (sections/system_costs.py) are gated by name, where LOWER is
better: ``latency-p50`` and ``latency-p95`` (seconds), ``tokens`` and ``cost`` (summed over its
queries), e.g. ``my-rag=latency-p95:2.5`` or ``cost:0.10``; the value is any finite number >= 0 and
the check fails when the run's figure is ABOVE it, or when its manifest records no such figure. A
threshold for every run applies to the runs that have a manifest.

Regressions (``--exam-compare-fail``) read ``MEASURE:DROP`` (an absolute drop, ``exam-cover:0.05``)
or ``MEASURE:PCT%`` (relative to the reference, ``exam-cover:5%``). A run whose mean drops by more
than the allowance fails; a paired permutation test over the queries both reports scored says whether
the drop stands out from per-query noise, and both are reported.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict

from exam_harness.errors import ConfigError

if TYPE_CHECKING:
    from exam_harness.measures.base import Measure
    from exam_harness.models import TestPoint
    from exam_harness.options import ExamOptions
    from exam_harness.registry import Registry
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.schema import ExamReport, MeasureInfo
    from exam_harness.sections.cost import CostSummary

    MeasureRegistry = Registry[type[Measure]]
    Document: TypeAlias = ExamReport | EvaluationReport  # either result document: the core fields are the same

class GateResult(BaseModel):
    """One check of the session's verdict: a gate asked for (a threshold, an allowed regression, the
    baseline) or a check always made (every pair graded, few grades read by a fallback rule). A part of
    the result document (results/schema.py), declared here where the gates make it."""

    model_config = ConfigDict(extra="forbid")

    gate: str  # the option or check: exam-fail-under, exam-compare-fail, exam-baseline, incomplete-exam, ...
    run: str | None = None
    measure: str | None = None
    value: float | None = None
    limit: float | None = None
    passed: bool
    message: str

    @property
    def case(self) -> str:
        """The check's pytest case name, e.g. ``exam-fail-under[weak-ranker-exam-cover]``."""
        params = "-".join(p for p in (self.run, self.measure) if p)
        return f"{self.gate}[{params}]" if params else self.gate


# What a comparison reads when told no measure.
COMPARED: tuple[str, ...] = ("exam-cover", "n-exam-cover")


def matches(run: str, patterns: Iterable[str]) -> bool:
    """Whether ``run`` is one of ``patterns`` (names or fnmatch patterns, case-sensitive)."""
    return any(run == p or fnmatch.fnmatchcase(run, p) for p in patterns)


@dataclass(frozen=True)
class RequiredScope:
    """Which runs a required test point is required of, and which runs never fail the session (issue 28).

    A bank's ``required: [my-rag, "rag-*"]`` names the runs its test point is required of; ``required:
    true`` means the runs of ``--exam-required-runs`` (``runs``; every run when none is given). A baseline
    run (``--exam-baseline`` / ``exam_baseline``, kept on purpose to compare with) is scored and compared but
    never fails the session: no test point is required of it, default thresholds skip it (a threshold naming
    it still applies) and its drops against a kept report are reported, not gated."""

    runs: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()

    @classmethod
    def of(cls, options: ExamOptions) -> RequiredScope:
        """The runs required test points apply to (``--exam-required-runs``) and the baseline run that never fails."""
        return cls(options.required_runs, (options.baseline,) if options.baseline else ())

    def is_baseline(self, run: str) -> bool:
        return matches(run, self.baselines)

    def applies(self, test_point: TestPoint, run: str) -> bool:
        """Whether ``test_point`` is required of ``run``: missing it fails the run's case."""
        if not test_point.required or self.is_baseline(run):
            return False
        patterns = test_point.required_runs or self.runs
        return not patterns or matches(run, patterns)

    def unmatched(self, banks_runs: Iterable[str], runs: Sequence[str]) -> list[str]:
        """The names or patterns among ``banks_runs`` and ``runs`` that match no run (a typo names none)."""
        return [p for p in dict.fromkeys([*self.runs, *banks_runs]) if not any(matches(r, [p]) for r in runs)]


@dataclass(frozen=True)
class Threshold:
    run: str | None  # None: every run without its own threshold for the measure
    measure: str
    value: float
    holds: tuple[int, int] | None = None  # (M, K): verdicts holding in at least M of K judge samples

    @property
    def gated(self) -> str:
        """What the threshold gates: the measure, with ``@MofK`` for verdicts holding in M of K samples."""
        return self.measure + (f"@{self.holds[0]}of{self.holds[1]}" if self.holds else "")

    def __str__(self) -> str:
        return (f"{self.run}=" if self.run else "") + f"{self.measure}:{self.value:g}" + (
            f"@{self.holds[0]}of{self.holds[1]}" if self.holds else "")


_HOLDS = re.compile(r"@\s*(\d+)\s*of\s*(\d+)\s*$")
HOLDS_MEASURE = "exam-cover"  # the one measure a count of holding verdicts gates
# a live system's figures from its manifest (the system-costs section), lower is better, with their titles
SYSTEM_FIGURES: dict[str, str] = {"latency-p50": "latency p50 (s)", "latency-p95": "latency p95 (s)",
                                  "tokens": "tokens", "cost": "cost"}


def measure_names(thresholds: Iterable[Threshold]) -> list[str]:
    """The measures ``thresholds`` gate (a system figure is no measure: the measure registries do not know it)."""
    return [t.measure for t in thresholds if t.measure not in SYSTEM_FIGURES]


def split_holds(gated: str) -> tuple[str, tuple[int, int] | None]:
    """``exam-cover@2of3`` -> ("exam-cover", (2, 3)); a measure without the suffix -> (measure, None)."""
    found = _HOLDS.search(gated)
    if found is None:
        return gated, None
    return gated[: found.start()], (int(found.group(1)), int(found.group(2)))


@dataclass(frozen=True)
class Allowance:
    measure: str
    drop: float
    relative: bool

    def exceeded(self, old: float, new: float) -> bool:
        limit = self.drop * old if self.relative else self.drop
        return old - new > limit + 1e-12

    def __str__(self) -> str:
        return f"{self.measure}:{self.drop * 100:g}%" if self.relative else f"{self.measure}:{self.drop:g}"


def _fraction(raw: str) -> float:
    return _in_range(raw, repr(raw), "a number", "a finite number in 0..1", 1.0)


def _in_range(raw: str, shown: str, kind: str, range_text: str, high: float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{shown} is not {kind}") from None
    if not math.isfinite(value) or not 0.0 <= value <= high:  # high may be inf: any finite number >= 0
        raise ValueError(f"{shown} must be {range_text}")
    return value


def _measure(raw: str) -> str:
    """A measure name as written, canonical where a built-in measure parses it (``ndcg_cut.10`` ->
    ``ndcg@10``, ``n-exam`` -> ``n-exam-cover``); a plugin's measure is checked once plugins are loaded
    (:func:`check_measures`)."""
    from exam_harness.measures.parsing import is_measure_syntax, parse_measure

    name = raw.strip()
    if not name:
        raise ValueError("the measure name is empty")
    try:
        return str(parse_measure(name))
    except ConfigError as exc:
        if not is_measure_syntax(name):
            raise ValueError(str(exc)) from None
        return name  # maybe a plugin's family: checked by check_measures


def check_measures(names: Sequence[str], registry: MeasureRegistry | None, where: str) -> None:
    """ConfigError naming ``where`` for a name that no measure of ``registry`` (built-ins and plugins) parses."""
    from exam_harness.measures.parsing import parse_measure

    for name in dict.fromkeys(names):
        try:
            parse_measure(name, registry)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


def parse_threshold(raw: str) -> Threshold:
    """``[RUN=][MEASURE:]VALUE`` -> :class:`Threshold` (ValueError with the reason otherwise)."""
    text = raw.strip()
    run: str | None = None
    if "=" in text:
        run_part, _, text = text.partition("=")
        run = run_part.strip()
        if not run:
            raise ValueError("the run name before '=' is empty; a threshold reads [RUN=][MEASURE:]VALUE")
    text, holds = split_holds(text)
    if holds is not None:
        m, k = holds
        if not 1 <= m <= k:
            raise ValueError(f"@{m}of{k} asks for verdicts holding in {m} of {k} samples; M of K needs 1 <= M <= K")
    measure, sep, value = text.rpartition(":")
    if not sep:
        measure, value = "exam-cover", text
    if measure.strip().lower() in SYSTEM_FIGURES:
        if holds is not None:
            raise ValueError(f"@MofK counts verdicts that hold across judge samples; {measure.strip()!r} is a "
                             "system's recorded figure")
        limit = _in_range(value.strip(), repr(value.strip()), "a number", "a finite number >= 0", math.inf)
        return Threshold(run, measure.strip().lower(), limit)
    name = _measure(measure)
    if holds is not None and name.split("(")[0].split("@")[0] != HOLDS_MEASURE:
        raise ValueError(f"@MofK counts verdicts that hold across judge samples, which EXAM-Cover counts; "
                         f"{name!r} is another measure")
    return Threshold(run, name, _fraction(value.strip()), holds)


def check_samples(thresholds: Sequence[Threshold], repeats: int) -> None:
    """ConfigError for a threshold ``@MofK`` whose K is not the judge's samples per pair (grader option
    ``repeats``), found before grading (and paying) rather than after it (issue 28, item 7)."""
    for t in thresholds:
        if t.holds is not None and t.holds[1] != repeats:
            asked = f"asks {repeats} samples per pair (grader option repeats={repeats})" if repeats > 1 else \
                "asks one sample per pair"
            raise ConfigError(f"--exam-fail-under {t}: @{t.holds[0]}of{t.holds[1]} reads {t.holds[1]} judge samples "
                              f"per pair, but the grader {asked}; set repeats={t.holds[1]} or change the gate")


def parse_allowance(raw: str) -> Allowance:
    """``MEASURE:DROP`` or ``MEASURE:PCT%`` -> :class:`Allowance`."""
    measure, sep, value = raw.strip().rpartition(":")
    if not sep or not measure:
        raise ValueError("an allowed drop reads MEASURE:DROP or MEASURE:PCT%, e.g. exam-cover:0.05 or exam-cover:5%")
    relative = value.strip().endswith("%")
    number = value.strip().removesuffix("%")
    drop = _fraction(number) if not relative else _percent(number)
    return Allowance(_measure(measure), drop, relative)


def _percent(raw: str) -> float:
    return _in_range(raw, repr(raw + "%"), "a percentage", "a percentage in 0..100", 100.0) / 100.0


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

    @property
    def lower_is_better(self) -> bool:
        """A system's recorded figure (latency, tokens, cost): the check fails above the limit."""
        return self.measure in SYSTEM_FIGURES

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.limit if self.lower_is_better else self.value >= self.limit


def threshold_checks(report: Document, thresholds: Sequence[Threshold],
                     registry: MeasureRegistry | None = None, scope: RequiredScope | None = None) -> list[GateCheck]:
    """Every examined run's value of every gated measure beside its threshold, sorted by run then measure."""
    systems = {s.run: s for s in report.systems}
    found = {t.measure: find(report, t.measure, registry) for t in thresholds if t.measure not in SYSTEM_FIGURES}
    figures = report.sections.get("system-costs")
    recorded = {s.run for s in figures.systems} if figures is not None else set()
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
        if gated in SYSTEM_FIGURES:
            # a threshold for every run gates the runs with a manifest (every run when none has one: it fails)
            if (run, gated) in own or run in recorded or not recorded:
                row = figures.run(run) if figures is not None else None
                checks.append(GateCheck(run, gated, limit, row.figure(gated) if row is not None else None,
                                        f"{SYSTEM_FIGURES[gated]}, at most"))
            continue
        measure, holds = split_holds(gated)
        info = found[measure]
        if holds is None and system.generated and measure in of_rankings and ranked and (run, gated) not in own:
            continue
        value: float | None
        if holds is not None:
            value = holding_cover(report, run, holds)
        else:
            score = system.scores.get(info.name) if info is not None else None
            value = score.mean if score is not None else None
        checks.append(GateCheck(run, gated, limit, value, info.title if info is not None else ""))
    return checks


def holding_cover(report: Document, run: str, holds: tuple[int, int]) -> float | None:
    """The run's EXAM-Cover counting test points answered in at least M of the K judge samples (None where
    the report holds no K samples per pair)."""
    jv = _judge_figures(report)
    figures = jv.run(run) if jv is not None and jv.repeats == holds[1] else None
    return figures.cover_at_least[holds[0] - 1] if figures is not None else None


def _judge_figures(report: Document) -> Any:
    """The document's judge-variance figures at its tau (its judge-variance section; evaluate's first tau),
    None without repeats."""
    content = report.sections.get("judge-variance")
    if content is None:
        return None
    tau = report.settings.min_grade if report.kind == "exam-report" else report.settings.min_grades[0]
    return content.at(tau)


def threshold_failures(report: Document, thresholds: Sequence[Threshold],
                       registry: MeasureRegistry | None = None) -> list[str]:
    """One FAIL line per run and measure below its threshold (a measure the report lacks is a failure too)."""
    return [_threshold_message(check, report, registry)
            for check in threshold_checks(report, thresholds, registry) if not check.passed]


def _threshold_message(check: GateCheck, report: Document, registry: MeasureRegistry | None = None) -> str:
    if check.lower_is_better:
        name = SYSTEM_FIGURES[check.measure]
        if check.value is None:
            return (f"FAIL run {check.run!r} records no {name} (no system manifest <run>.system.json beside the "
                    f"runs, or no such figure in it), so it cannot meet its limit {check.limit:g}")
        if not check.passed:
            return (f"FAIL {name} of run {check.run!r} is {check.value:.4g}, above the allowed {check.limit:g} "
                    "(lower is better)")
        return f"{name} of run {check.run!r} is {check.value:.4g}, at most the allowed {check.limit:g}"
    measure, holds = split_holds(check.measure)
    name = title(measure, report, registry)
    if holds is not None:
        name += f" with verdicts holding in {holds[0]} of {holds[1]} samples"
        if check.value is None:
            jv = _judge_figures(report)
            asked = f"asked {jv.repeats} samples per pair" if jv is not None else "asked once per pair"
            return (f"FAIL run {check.run!r} cannot meet {name}: the judge was {asked} (grader option "
                    f"repeats={holds[1]} asks {holds[1]})")
    if check.value is None and holds is None and unscored_answers(report, check.run, measure, registry):
        return (f"FAIL {name} is not scored for generated answers (it measures a ranking of passages, over "
                f"EXAM-Qrels), and run {check.run!r} is a run of generated answers, so it cannot meet its "
                f"threshold {check.limit:g}")
    if check.value is None:
        return f"FAIL {name} is not in the report, so run {check.run!r} cannot meet its threshold {check.limit:g}"
    if not check.passed:
        return f"FAIL Required {name} of {check.limit:g} not reached by run {check.run!r}: {check.value:.4f}"
    return f"{name} of run {check.run!r} is {check.value:.4f}, at least the required {check.limit:g}"


def threshold_results(report: Document, checks: Sequence[GateCheck],
                      registry: MeasureRegistry | None = None) -> list[GateResult]:
    """Each threshold check as a check of the verdict (``--exam-fail-under``)."""
    return [GateResult(gate="exam-fail-under", run=c.run, measure=c.measure, value=c.value, limit=c.limit,
                       passed=c.passed, message=_threshold_message(c, report, registry)) for c in checks]


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
    its limit is the lowest value the allowance accepts. Given the reference report ``old``, a gated
    measure that either report lacks for a run both hold is a failed check (issue 31, finding 14): a
    gate that cannot be checked must not pass silently."""
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
        lowest = c.old - (allowance.drop * c.old if allowance.relative else allowance.drop)
        results.append(GateResult(gate="exam-compare-fail", run=c.run, measure=c.measure, value=c.new,
                                  limit=lowest, passed=baseline or not c.regressed, message=message))
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


def budget_results(cost: CostSummary | None) -> list[GateResult]:
    """A failed ``exam-max-cost`` check when the session spent more than the grader's ``max_cost`` (a server
    reporting more tokens than the estimate, calls in flight at the stop): the budget was not held."""
    if cost is None or cost.max_cost is None or cost.session.cost is None or cost.session.cost <= cost.max_cost:
        return []
    from exam_harness.display import money

    return [GateResult(gate="exam-max-cost", value=cost.session.cost, limit=cost.max_cost, passed=False,
                       message=f"FAIL grading spent {money(cost.session.cost)}, more than max_cost "
                               f"{money(cost.max_cost)}: the server's usage exceeded the estimate that bounds each "
                               "batch (the grades made are cached)")]


@dataclass(frozen=True)
class Verdicts:
    """What the gates decided, beside the report: threshold checks, changes against a reference and any
    other FAIL line the session printed (the baseline gate's)."""

    checks: Sequence[GateCheck] = ()
    changes: Sequence[Change] = ()
    reference: str | None = None
    alpha: float = 0.05
    failures: Sequence[str] = ()
