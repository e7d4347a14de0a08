"""Estimates from a stratified sample of labelled units and their intervals (docs/calibration.md, "What each
interval means"). Pure numpy/scipy: no file, no grader.

A :class:`Design` holds each labelled unit's stratum and each stratum's size N_h (the labelled count n_h is
counted from the units): each unit weighs N_h / n_h (Horvitz–Thompson), and a total's variance is the
stratified simple-random-sampling one, sum over strata of N_h^2 (1 - n_h/N_h) S_h^2 / n_h, S_h^2 the
stratum's sample variance (a fully labelled stratum adds nothing). A stratum holding one labelled unit has no
S_h^2 of its own; the single units of such strata are pooled into one (collapsed strata), else the whole
sample's variance stands in. Labels that are no sample (a file of the old format, or labels chosen by hand)
weigh 1 each and are treated as a simple random sample of an infinite population: their figures describe the
labelled pairs, as the old ``analyze agreement --team-labels`` did.

A figure that is a smooth function of totals (a ratio, Cohen's kappa) gets its standard error by
linearisation: the gradient at the estimated totals, times their covariance. Intervals:

- a proportion (TPR, TNR, precision, base rate): Clopper–Pearson at the effective sample size
  p(1-p)/Var(p) (Korn and Graubard's interval for survey proportions), with the degrees of freedom of the
  design (labelled units less strata); where the estimate is 0 or 1 the effective size is Kish's of the
  domain's weights, so a share of 1.0 over 12 labelled pairs reads [0.74, 1] rather than [1, 1]. Each
  stratum's variance takes a pseudo-unit (judges.py: a pair of each label, at the stratum's verdict), so a
  large stratum whose few labels show no positive (a judge's misses among its grade-0 pairs) is not read as
  certain: on the heat pump bank's pool (benchmarks/calibration.py's exam) 200 labelled pairs covered the
  truth 92-100% of 100 seeds without it (kappa 92% at 100 pairs), 96-100% with it;
- Cohen's kappa: estimate ± t(df) standard errors on the atanh scale (:func:`bounded`); where the labelled
  pairs agree in full, from the Clopper–Pearson interval of the observed agreement (judges.py);
- a corrected score: estimate ± t(df) standard errors (ppi.py).

A domain that holds only fully labelled strata is known exactly: its interval is the point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

CONFIDENCE = 0.95
SPREAD = 1e-9  # a standard error below this is none: the units agree exactly
PSEUDO_UNITS = 1.0  # units added to each stratum's variance of a corrected score's moves (Design.variances)


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval (None: undefined, e.g. a TPR over labels with no positive)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    se: float | None = None


UNDEFINED = Estimate(None)


@dataclass(frozen=True)
class Design:
    """The labelled units of a stratified sample: each one's stratum (an index into ``sizes``) and each
    stratum's size; ``sizes`` None: the labels are no sample (unit weights, no finite population)."""

    strata: np.ndarray
    sizes: np.ndarray | None
    counts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        strata = np.asarray(self.strata, dtype=int)
        object.__setattr__(self, "strata", strata)
        groups = int(strata.max()) + 1 if strata.size else 0
        if self.sizes is not None:
            sizes = np.asarray(self.sizes, dtype=float)
            object.__setattr__(self, "sizes", sizes)
            groups = max(groups, len(sizes))
        counts = np.bincount(strata, minlength=groups).astype(float)
        if self.sizes is not None and np.any(counts > self.sizes):
            raise ValueError("a stratum holds more labelled units than its size")
        object.__setattr__(self, "counts", counts)

    @classmethod
    def of(cls, unit_strata: Sequence[str], sizes: Mapping[str, int] | None) -> Design:
        """The design of units labelled in strata named ``unit_strata`` (``sizes``: stratum -> N_h)."""
        names = sorted(sizes) if sizes is not None else sorted(set(unit_strata))
        index = {name: i for i, name in enumerate(names)}
        strata = np.asarray([index[s] for s in unit_strata], dtype=int)
        given = np.asarray([sizes[n] for n in names], dtype=float) if sizes is not None else None
        return cls(strata, given)

    @property
    def n(self) -> int:
        return int(self.strata.size)

    @property
    def weights(self) -> np.ndarray:
        """N_h / n_h of each unit's stratum (1 when the labels are no sample)."""
        if self.sizes is None:
            return np.ones(self.n)
        return np.asarray((self.sizes / np.maximum(self.counts, 1.0))[self.strata], dtype=float)

    @property
    def df(self) -> int:
        """Degrees of freedom of the variance: labelled units less the strata holding some."""
        return max(self.n - int(np.count_nonzero(self.counts)), 1)

    def total(self, x: np.ndarray) -> np.ndarray:
        """The estimated population total of each column of ``x`` (one row per labelled unit)."""
        return np.asarray(self.weights @ np.asarray(x, dtype=float), dtype=float)

    def covariance(self, x: np.ndarray, pseudo_rows: Mapping[int, np.ndarray] | None = None,
                   pseudo: float = PSEUDO_UNITS) -> np.ndarray:
        """The estimated covariance of :meth:`total` (stratified simple random sampling without replacement).
        ``pseudo_rows``: per stratum, rows of which ``pseudo`` units in all (shared alike) join its sample
        covariance, not its total: a stratum whose few labelled units all agree is not read as one of no spread
        (the judges' figures add a pair of each label: judges.py)."""
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        k = x.shape[1]
        out = np.zeros((k, k))
        single: list[int] = []  # strata with one labelled unit and others not labelled: no variance of their own
        for h in map(int, np.flatnonzero(self.counts)):
            n_h = self.counts[h]
            weight, fpc = self._scale(h)
            if fpc == 0.0:
                continue
            rows = x[self.strata == h]
            extra = None if pseudo_rows is None else pseudo_rows.get(h)
            if extra is not None and len(extra) and pseudo > 0:
                out += n_h * weight * weight * fpc * _with_pseudo(rows, np.atleast_2d(extra), pseudo)
                continue
            if n_h < 2:
                single.append(h)
                continue
            out += n_h * weight * weight * fpc * np.atleast_2d(np.cov(rows, rowvar=False, ddof=1))
        if single:
            stand_in = self._stand_in(x, single)
            for h in single:
                weight, fpc = self._scale(h)
                out += weight * weight * fpc * stand_in
        return out

    def variances(self, x: np.ndarray, scale: np.ndarray, pseudo: float = PSEUDO_UNITS,
                  floor: np.ndarray | None = None) -> np.ndarray:
        """The estimated variance of :meth:`total` of each column of ``x``, each stratum's sample variance
        taken with ``pseudo`` units added, half at +c and half at -c, c the mean of ``scale`` (the largest
        move a unit could make) over the stratum's labelled units, at least ``floor`` (that mean over the
        population's units, whose strata are not known here): a stratum whose few labelled units all agree is
        not read as one of no spread (docs/calibration.md, "What each interval means")."""
        x = np.asarray(x, dtype=float)
        scale = np.abs(np.asarray(scale, dtype=float))
        least = np.zeros(x.shape[1]) if floor is None else np.abs(np.asarray(floor, dtype=float))
        out = np.zeros(x.shape[1])
        for h in map(int, np.flatnonzero(self.counts)):
            weight, fpc = self._scale(h)
            if fpc == 0.0:
                continue
            rows, c = x[self.strata == h], np.maximum(scale[self.strata == h].mean(axis=0), least)
            n_h = len(rows)
            mean = rows.mean(axis=0)
            squares = ((rows - mean) ** 2).sum(axis=0) + pseudo / 2 * ((c - mean) ** 2 + (c + mean) ** 2)
            spread = squares / (n_h - 1 + pseudo) if n_h - 1 + pseudo > 0 else c * c  # one unit, no pseudo-unit
            out += n_h * weight * weight * fpc * spread
        return out

    def _scale(self, h: int) -> tuple[float, float]:
        """A stratum's weight N_h/n_h and finite-population correction 1 - n_h/N_h (1, 1 without sizes)."""
        if self.sizes is None:
            return 1.0, 1.0
        return float(self.sizes[h] / self.counts[h]), float(1.0 - self.counts[h] / self.sizes[h])

    def _stand_in(self, x: np.ndarray, single: Sequence[int]) -> np.ndarray:
        """The variance of a stratum with one labelled unit: that of the pooled single units (collapsed
        strata), else of the whole sample, else none."""
        rows = x[np.isin(self.strata, single)]
        if len(rows) < 2:
            rows = x
        if len(rows) < 2:
            return np.zeros((x.shape[1], x.shape[1]))
        return np.atleast_2d(np.cov(rows, rowvar=False, ddof=1))

    def exhausted(self, units: np.ndarray) -> bool:
        """Whether every stratum holding one of ``units`` (a mask) is fully labelled: a census there."""
        if self.sizes is None:
            return False
        held = np.unique(self.strata[units])
        return bool(np.all(self.counts[held] >= self.sizes[held]))


def _with_pseudo(rows: np.ndarray, extra: np.ndarray, pseudo: float) -> np.ndarray:
    """The sample covariance of ``rows`` with ``pseudo`` units more, shared alike by the rows of ``extra``."""
    share = pseudo / len(extra)
    mean = (rows.sum(axis=0) + share * extra.sum(axis=0)) / (len(rows) + pseudo)
    spread = (rows - mean).T @ (rows - mean) + share * (extra - mean).T @ (extra - mean)
    return np.asarray(spread / (len(rows) - 1 + pseudo), dtype=float)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, df))


def gradient(f: Callable[[np.ndarray], float], at: np.ndarray) -> np.ndarray:
    """The gradient of ``f`` at ``at`` by central differences (steps relative to each total's size)."""
    out = np.zeros(len(at))
    for i, value in enumerate(at):
        step = 1e-6 * max(1.0, abs(float(value)))
        up, down = at.copy(), at.copy()
        up[i] += step
        down[i] -= step
        out[i] = (f(up) - f(down)) / (2 * step)
    return out


def linearised(f: Callable[[np.ndarray], float], x: np.ndarray, design: Design,
               pseudo_rows: Mapping[int, np.ndarray] | None = None) -> tuple[float, float]:
    """``f`` of the estimated totals of ``x``'s columns and its linearised standard error (NaN where ``f``
    is undefined); ``pseudo_rows`` as :meth:`Design.covariance` takes them."""
    totals = design.total(x)
    value = f(totals)
    if not math.isfinite(value):
        return math.nan, math.nan
    grad = gradient(f, totals)
    if not np.all(np.isfinite(grad)):
        return value, math.nan
    variance = float(grad @ design.covariance(x, pseudo_rows) @ grad)
    return value, math.sqrt(max(variance, 0.0))


def kish(weights: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of non-negative ``weights``."""
    square = float(np.sum(weights * weights))
    return float(np.sum(weights)) ** 2 / square if square > 0 else 0.0


def proportion(numerator: np.ndarray, denominator: np.ndarray, design: Design,
               confidence: float = CONFIDENCE, pseudo_rows: Mapping[int, np.ndarray] | None = None) -> Estimate:
    """The ratio of two totals that is a share in 0..1 (numerator <= denominator unit by unit) with the
    Korn–Graubard interval (module docstring); undefined where no labelled unit is in the denominator.
    ``pseudo_rows``: per stratum, (numerator, denominator) rows joining its variance (Design.covariance)."""
    x = np.column_stack([numerator, denominator]).astype(float)
    domain = x[:, 1] > 0
    if not np.any(domain):
        return UNDEFINED
    p, se = linearised(lambda t: t[0] / t[1] if t[1] > 0 else math.nan, x, design, pseudo_rows)
    p = min(max(p, 0.0), 1.0)
    if design.exhausted(domain):
        return Estimate(p, p, p, 0.0)
    counts = design.weights[domain] * x[domain, 1]
    # no spread to read a design effect from (p is 0 or 1, or one unit): the weights' own
    size = p * (1.0 - p) / (se * se) if 0.0 < p < 1.0 and se > SPREAD else kish(counts)
    size = min(size, float(np.sum(counts)))  # never more trials than the domain's estimated size
    size *= (t_quantile(max(design.n - 1, 1), confidence) / t_quantile(design.df, confidence)) ** 2
    if not (math.isfinite(size) and size > 0):
        return Estimate(p, None, None, se)
    low, high = clopper_pearson(p * size, size, confidence)
    return Estimate(p, low, high, se)


def clopper_pearson(successes: float, trials: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Clopper–Pearson interval at (possibly fractional) ``successes`` of ``trials``."""
    from scipy import stats

    alpha = 1.0 - confidence
    failures = trials - successes
    low = 0.0 if successes <= 0 else float(stats.beta.ppf(alpha / 2, successes, failures + 1))
    high = 1.0 if failures <= 0 else float(stats.beta.ppf(1 - alpha / 2, successes + 1, failures))
    return low, high


def bounded(value: float, se: float, df: int, confidence: float = CONFIDENCE) -> Estimate:
    """A figure in -1..1 (Cohen's kappa) with the interval tanh(atanh(value) ± t(df) se / (1 - value^2)):
    on that scale the estimate is nearer normal, which a simulation over seeds shows the plain ± t se
    interval is not at a few dozen labels (tests/features/calibration/test_calibration_figures.py)."""
    if not math.isfinite(value):
        return UNDEFINED
    if not math.isfinite(se) or abs(value) >= 1.0 or se <= 0.0:
        return Estimate(value, None, None, se if math.isfinite(se) else None)
    z, spread = math.atanh(value), t_quantile(df, confidence) * se / (1.0 - value * value)
    return Estimate(value, math.tanh(z - spread), math.tanh(z + spread), se)
