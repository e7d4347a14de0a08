"""CI gates over a report: score thresholds per run and measure, and regressions against a reference.

Thresholds (``--exam-fail-under``) read ``[RUN=][MEASURE:]VALUE``: ``0.5`` (every run, EXAM-Cover),
``my-rag=0.6`` (one run), ``nugget-f:0.3`` (another measure), ``V_strict:0.4`` (a TREC RAG score),
``my-rag=ndcg@10:0.4``. A run's own
threshold for a measure replaces the default one for that measure. Values are finite, in 0..1.

Regressions (``--exam-compare-fail``) read ``MEASURE:DROP`` (an absolute drop, ``exam-cover:0.05``)
or ``MEASURE:PCT%`` (relative to the reference, ``exam-cover:5%``). A run whose mean drops by more
than the allowance fails; a paired permutation test over the queries both reports scored says whether
the drop stands out from per-query noise, and both are reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from exam_harness.report.schema import ExamReport, QueryScore, SystemScore

# Measures a gate can name, as the pytest report holds them; trec_eval measures read the first label.
REPORT_MEASURES: tuple[str, ...] = ("exam-cover", "n-exam", "nugget-f")
# the TREC RAG track's scores, in the report where nuggets carry an importance (any case)
TRACK_SCORES = {name.lower(): name for name in ("A", "A_strict", "V", "V_strict", "W", "W_strict")}


@dataclass(frozen=True)
class Threshold:
    run: str | None  # None: every run without its own threshold for the measure
    measure: str
    value: float

    def __str__(self) -> str:
        return (f"{self.run}=" if self.run else "") + f"{self.measure}:{self.value:g}"


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
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{raw!r} is not a number") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{raw!r} must be a finite number in 0..1")
    return value


def _measure(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise ValueError("the measure name is empty")
    from exam_harness.errors import ConfigError
    from exam_harness.measures.trec import parse_trec_name

    if name in REPORT_MEASURES:
        return name
    if name.lower() in TRACK_SCORES:
        return TRACK_SCORES[name.lower()]
    try:
        return parse_trec_name(name).name
    except ConfigError:
        valid = ", ".join(REPORT_MEASURES)
        raise ValueError(
            f"unknown measure {name!r}; gates read {valid}, the TREC RAG scores (A, A_strict, V, V_strict, W, "
            "W_strict) or a trec_eval measure such as ndcg@10") from None


def parse_threshold(raw: str) -> Threshold:
    """``[RUN=][MEASURE:]VALUE`` -> :class:`Threshold` (ValueError with the reason otherwise)."""
    text = raw.strip()
    run: str | None = None
    if "=" in text:
        run_part, _, text = text.partition("=")
        run = run_part.strip()
        if not run:
            raise ValueError("the run name before '=' is empty; a threshold reads [RUN=][MEASURE:]VALUE")
    measure, sep, value = text.rpartition(":")
    if not sep:
        measure, value = "exam-cover", text
    return Threshold(run, _measure(measure), _fraction(value.strip()))


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
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{raw + '%'!r} is not a percentage") from None
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise ValueError(f"{raw + '%'!r} must be a percentage in 0..100")
    return value / 100.0


# --- reading a report --------------------------------------------------------------------------


def system_value(system: SystemScore, measure: str, label: str) -> float | None:
    """A run's mean of a gate measure in a report (None where the report has none)."""
    if measure == "exam-cover":
        return system.exam_cover
    if measure == "n-exam":
        return system.n_exam_cover
    if measure == "nugget-f":
        return system.nugget_f.mean if system.nugget_f is not None else None
    if measure in system.measures:
        return system.measures[measure].mean
    score = system.qrels_measures.get(label, {}).get(measure)
    return score.mean if score is not None else None


def query_value(row: QueryScore, measure: str, label: str) -> float | None:
    if measure == "exam-cover":
        return row.exam_cover
    if measure == "n-exam":
        return row.n_exam_cover
    if measure == "nugget-f":
        return row.nugget_f
    if measure in row.measures:
        return row.measures[measure]
    return row.qrels_measures.get(label, {}).get(measure)


def label_of(report: ExamReport) -> str:
    return report.settings.label_variants[0] if report.settings.label_variants else "max-grade"


def title(measure: str, report: ExamReport) -> str:
    k = report.settings.k
    return {"exam-cover": f"EXAM-Cover@{k}", "n-exam": f"n-EXAM@{k}", "nugget-f": "nugget-F"}.get(measure, measure)


# --- thresholds --------------------------------------------------------------------------------


def effective_thresholds(thresholds: Sequence[Threshold], runs: Sequence[str]) -> dict[tuple[str, str], float]:
    """(run, measure) -> the threshold that applies: the run's own, else the default for the measure."""
    applied: dict[tuple[str, str], float] = {}
    for t in thresholds:
        if t.run is None:
            for run in runs:
                applied.setdefault((run, t.measure), t.value)
    for t in thresholds:
        if t.run is not None:
            applied[(t.run, t.measure)] = t.value
    return applied


@dataclass(frozen=True)
class GateCheck:
    """One run's measure against the threshold that applies to it (``value`` None: not in the report)."""

    run: str
    measure: str
    limit: float
    value: float | None

    @property
    def passed(self) -> bool:
        return self.value is not None and self.value >= self.limit


def threshold_checks(report: ExamReport, thresholds: Sequence[Threshold]) -> list[GateCheck]:
    """Every examined run's value of every gated measure beside its threshold, sorted by run then measure."""
    label = label_of(report)
    systems = {s.run: s for s in report.systems}
    checks: list[GateCheck] = []
    for (run, measure), limit in sorted(effective_thresholds(thresholds, list(systems)).items()):
        system = systems.get(run)
        if system is None:
            continue  # a run named by a threshold but not examined: checked before grading
        checks.append(GateCheck(run, measure, limit, system_value(system, measure, label)))
    return checks


def threshold_failures(report: ExamReport, thresholds: Sequence[Threshold]) -> list[str]:
    """One FAIL line per run and measure below its threshold (a measure the report lacks is a failure too)."""
    failures: list[str] = []
    for check in threshold_checks(report, thresholds):
        name = title(check.measure, report)
        if check.value is None:
            failures.append(
                f"FAIL {name} is not in the report, so run {check.run!r} cannot meet its threshold {check.limit:g}")
        elif not check.passed:
            failures.append(
                f"FAIL Required {name} of {check.limit:g} not reached by run {check.run!r}: {check.value:.4f}")
    return failures


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

    @property
    def delta(self) -> float:
        return self.new - self.old


def compare(
    old: ExamReport, new: ExamReport, measures: Sequence[str], allowances: Sequence[Allowance] = ()
) -> list[Change]:
    """Every run both reports hold, on every measure: means, difference and the paired test."""
    from exam_harness.measures.significance import paired_permutation_test

    label = label_of(new)
    limits: Mapping[str, Allowance] = {a.measure: a for a in allowances}
    olds = {s.run: s for s in old.systems}
    changes: list[Change] = []
    for system in sorted(new.systems, key=lambda s: s.run):
        before = olds.get(system.run)
        if before is None:
            continue
        for measure in measures:
            a, b = system_value(before, measure, label_of(old)), system_value(system, measure, label)
            if a is None or b is None:
                continue
            pairs = _paired(old, new, system.run, measure)
            p = paired_permutation_test([y for _, y in pairs], [x for x, _ in pairs]) if len(pairs) >= 2 else math.nan
            allowance = limits.get(measure)
            regressed = allowance is not None and allowance.exceeded(a, b)
            changes.append(Change(system.run, measure, a, b, len(pairs), p, regressed))
    return changes


def _paired(old: ExamReport, new: ExamReport, run: str, measure: str) -> list[tuple[float, float]]:
    before = {r.query_id: query_value(r, measure, label_of(old)) for r in old.per_query if r.run == run}
    pairs = []
    for row in new.per_query:
        if row.run != run or row.query_id not in before:
            continue
        a, b = before[row.query_id], query_value(row, measure, label_of(new))
        if a is not None and b is not None:
            pairs.append((a, b))
    return pairs


def regression_failures(changes: Sequence[Change], allowances: Sequence[Allowance], report: ExamReport,
                        reference: str, alpha: float) -> list[str]:
    limits = {a.measure: a for a in allowances}
    lines = []
    for c in changes:
        if not c.regressed:
            continue
        significance = ("significant" if c.p < alpha else "not significant") if not math.isnan(c.p) else "untested"
        lines.append(
            f"FAIL run {c.run!r} regressed on {title(c.measure, report)} against {reference}: {c.old:.4f} -> "
            f"{c.new:.4f} ({c.delta:+.4f}; allowed drop {limits[c.measure]}); paired test over {c.queries} "
            f"queries p = {c.p:.3g}, {significance} at alpha {alpha:g}"
        )
    return lines


@dataclass(frozen=True)
class Verdicts:
    """What the gates decided, beside the report: threshold checks, changes against a reference and any
    other FAIL line the session printed (the baseline gate's)."""

    checks: Sequence[GateCheck] = ()
    changes: Sequence[Change] = ()
    reference: str | None = None
    alpha: float = 0.05
    failures: Sequence[str] = ()
