"""The CI gates as declared: score thresholds per run and measure, allowed regressions against a
reference, which runs a required test point binds, and :class:`GateResult`, the one check of a verdict.
Parsed by the option schema (config/options.py); checked against a result document by results/gate_checks.py.

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

A feature's gate figure (:class:`GateFigure`, registered through ``pytest_exam_register_gate_figures``) is gated
by its name the same way, ``[RUN=]NAME:LIMIT``: the value its section holds for the run, at least LIMIT (or at
most, where lower is better: a declared live system's ``latency-p95``, ``cost``, ... of the live-systems feature,
e.g. ``my-rag=latency-p95:2.5``). A name no built-in measure parses (a plugin's measure or a gate figure) is
read in lower case with any finite LIMIT >= 0 here, and checked against the registries once plugins are
loaded (:func:`check_thresholds`): a measure's limit must then lie in 0..1.

The judge's own figure is gated by name, for the session as a whole (no ``RUN=``): ``cascade-kept:0.95``
fails where the cascade grader's 95% lower bound of the share of its decider's passes it kept is below 0.95
(sections/judge_notes.py states it; a report without a cascade's figures fails it, saying so).

Regressions (``--exam-compare-fail``) read ``MEASURE:DROP`` (an absolute drop, ``exam-cover:0.05``)
or ``MEASURE:PCT%`` (relative to the reference, ``exam-cover:5%``). A run whose mean drops by more
than the allowance fails (results/gate_checks.py also runs the paired permutation test that says whether
the drop stands out from per-query noise).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.core.errors import ConfigError

if TYPE_CHECKING:
    from exam_harness.core.models import TestPoint
    from exam_harness.core.registry import Registry
    from exam_harness.measures.base import Measure

    MeasureRegistry = Registry[type[Measure]]


class GateResult(BaseModel):
    """One check of the session's verdict: a gate asked for (a threshold, an allowed regression, the
    baseline) or a check always made (every pair graded, few grades read by a fallback rule). A part of
    the result document (results/schema.py), declared here, below the document and its checks."""

    model_config = ConfigDict(extra="forbid")

    gate: str  # the option or check: exam-fail-under, exam-compare-fail, exam-baseline, incomplete-exam, ...
    run: str | None = None
    measure: str | None = None
    # finite and >= 0 as every number of a report (results/read.py refuses others): a check that could hold a
    # negative limit would make the session write a report that `exam-harness verdict` then refuses
    value: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    limit: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    passed: bool
    message: str

    @property
    def case(self) -> str:
        """The check's pytest case name, e.g. ``exam-fail-under[weak-ranker-exam-cover]``."""
        params = "-".join(p for p in (self.run, self.measure) if p)
        return f"{self.gate}[{params}]" if params else self.gate


@runtime_checkable
class GateFigure(Protocol):
    """A value of a section that ``--exam-fail-under`` (and ``exam-harness verdict --fail-under``) gates by name:
    ``[RUN=]NAME:LIMIT``. Registered through ``pytest_exam_register_gate_figures``; results/gate_checks.py reads it
    from the document's section ``section`` for each run, so the pytest session and ``verdict`` decide alike.

    Optionally (read where present, as a section's ``placement``): ``runs(content)``, the runs a threshold for
    every run gates (every run when it names none or the document lacks the section; a run named by its own
    threshold is always gated), and ``missing_message(run, limit)``, the FAIL line of a run without the value."""

    name: str  # what a threshold names (a lower-case word: no spaces, no ':' or '=')
    title: str  # how a check's message names it
    section: str  # the document section it is read from
    lower_is_better: bool  # the check fails above the limit (else below it)

    def value(self, content: Any, run: str) -> float | None:
        """The run's figure from the section's content (None: the section holds none for the run)."""


# The gate figure a threshold's ``@MofK`` suffix reads (``exam-cover:0.5@2of3``), registered under this name by the
# judge-variance feature (exam_harness/features/judge_variance): not a word a threshold names (names are read in
# lower case), so no threshold reaches it but through the suffix.
HOLDING_FIGURE = "exam-cover@MofK"


@runtime_checkable
class HoldingFigure(GateFigure, Protocol):
    """The gate figure of :data:`HOLDING_FIGURE`: EXAM-Cover counting a test point as covered only where its case
    answers in at least M of the judge's K samples per pair, read from the section ``section`` at the document's
    tau (evaluate's first). results/gate_checks.py words the checks (a measure's, with the suffix)."""

    def holding(self, content: Any, tau: int, run: str, holds: tuple[int, int]) -> float | None:
        """The run's EXAM-Cover with verdicts holding in ``holds`` = (M, K) samples (None: the section holds no K
        samples per pair at ``tau``, or nothing for the run)."""

    def samples(self, content: Any, tau: int) -> int | None:
        """The samples per pair the section's figures at ``tau`` were asked (None: none held there)."""


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
    baselines: tuple[str, ...] = ()  # ExamOptions.required_scope makes the scope from the options

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
_WORD = re.compile(r"[\w.-]+")  # a bare name: no parameters or cut-off, read in lower case as families are
HOLDS_MEASURE = "exam-cover"  # the one measure a count of holding verdicts gates


# the judge's figures a session is gated on as a whole (higher is better), with their titles
JUDGE_FIGURES: dict[str, str] = {"cascade-kept": "the cascade's kept share of its decider's passes (95% lower bound)"}


def measure_names(thresholds: Iterable[Threshold], figures: Iterable[str] = ()) -> list[str]:
    """The measures ``thresholds`` gate (the judge's figure, or a feature's gate figure named in ``figures``, is no
    measure: the measure registries do not know it)."""
    named = set(figures)
    return [t.measure for t in thresholds if t.measure not in JUDGE_FIGURES and t.measure not in named]


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

    def lowest(self, old: float) -> float:
        """The lowest score the allowance accepts after a reference score ``old``: the reference less the allowed
        drop, never below 0 (a score is not negative, so a drop larger than the reference allows any score).
        The verdict stores it as the check's ``limit``, which a report, like every number it holds, keeps >= 0."""
        return max(0.0, old - (self.drop * old if self.relative else self.drop))

    def exceeded(self, old: float, new: float) -> bool:
        return new < self.lowest(old) - 1e-12

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


def check_thresholds(thresholds: Sequence[Threshold], registry: MeasureRegistry | None, figures: Iterable[str],
                     where: str) -> None:
    """ConfigError naming ``where`` for a threshold that names neither a measure of ``registry`` nor a gate figure
    of ``figures``, or that holds a measure to a limit outside 0..1 (a name only a plugin's family parses is
    read with any finite limit >= 0, before the plugins are known)."""
    named = set(figures)
    check_measures(measure_names(thresholds, named), registry, where)
    for t in thresholds:
        if t.measure not in named and not 0.0 <= t.value <= 1.0:
            raise ConfigError(f"{where} {t}: {t.value:g} must be a finite number in 0..1 (the limit of a measure)")


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
    if measure.strip().lower() in JUDGE_FIGURES:
        name = measure.strip().lower()
        if run is not None or holds is not None:
            raise ValueError(f"{name!r} is the judge's figure for the whole session: it takes no RUN= and no @MofK "
                             f"({name}:VALUE)")
        return Threshold(None, name, _fraction(value.strip()))
    name = _measure(measure)
    if holds is not None and name.split("(")[0].split("@")[0] != HOLDS_MEASURE:
        raise ValueError(f"@MofK counts verdicts that hold across judge samples, which EXAM-Cover counts; "
                         f"{name!r} is another measure")
    if holds is None and not _builtin_measure(name):  # a plugin's measure or a feature's gate figure
        # a limit below 0 is none a verdict can hold (GateResult's limit is >= 0 like every number of a report)
        limit = _in_range(value.strip(), repr(value.strip()), "a number", "a finite number >= 0", math.inf)
        return Threshold(run, name.lower() if _WORD.fullmatch(name) else name, limit)
    return Threshold(run, name, _fraction(value.strip()), holds)


def _builtin_measure(name: str) -> bool:
    from exam_harness.measures.parsing import parse_measure

    try:
        parse_measure(name)
    except ConfigError:
        return False
    return True



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
