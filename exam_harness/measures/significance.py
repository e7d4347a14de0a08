"""Paired significance tests over queries, bootstrap confidence intervals, baseline comparisons.

Scores are paired by query: pass two mappings query -> score with the same queries (or two
equal-length sequences). Resampling is vectorised with numpy and seeded, so a call with the same
arguments always returns the same numbers.

- Permutation test (randomisation, sign flips): under H0 each query's difference d_i is as likely
  -d_i. Statistic: mean difference. With 2^n <= n_resamples every sign vector is enumerated (exact
  p); otherwise p = (#{|T*| >= |T|} + 1) / (n_resamples + 1) over random sign vectors.
- Paired bootstrap: resample queries with replacement; percentile CI of the mean difference;
  two-sided p by the shift method, p = (#{|T* - T| >= |T|} + 1) / (n_resamples + 1).
- Paired t-test: classical, t distribution with n-1 degrees of freedom.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from exam_harness.errors import InputError

Scores = Mapping[str, float] | Sequence[float]
Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["permutation", "bootstrap", "t-test"]
METHODS: tuple[str, ...] = ("permutation", "bootstrap", "t-test")
ALTERNATIVES: tuple[str, ...] = ("two-sided", "greater", "less")

_CHUNK = 2048  # resamples per vectorised block: bounds memory at _CHUNK x n floats


@dataclass(frozen=True)
class BootstrapResult:
    mean_diff: float
    ci_low: float
    ci_high: float
    p: float


@dataclass(frozen=True)
class Comparison:
    """A run against the baseline over ``n`` queries; diff = run mean - baseline mean."""

    run: str
    baseline: str
    mean: float
    baseline_mean: float
    diff: float
    p: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    significantly_worse: bool
    significantly_better: bool


def _vector(values: Scores, what: str) -> np.ndarray:
    arr = np.asarray(list(values.values()) if isinstance(values, Mapping) else list(values), dtype=float)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InputError(f"{what} must be finite numbers", field=what, value=arr.tolist()[:5], expected="floats")
    return arr


def _paired(a: Scores, b: Scores) -> np.ndarray:
    """The per-query differences a - b, paired by query id (mappings) or position (sequences)."""
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise InputError("pair two mappings or two sequences, not one of each", field="b", value=type(b).__name__,
                         expected=type(a).__name__)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            only = sorted(set(a) ^ set(b))
            raise InputError(
                "the two runs are scored on different queries", field="queries", value=only[:5],
                expected="the same queries on both sides (fill unanswered queries with 0 first)",
            )
        keys = sorted(a)
        a, b = [a[k] for k in keys], [b[k] for k in keys]
    va, vb = _vector(a, "a"), _vector(b, "b")
    if va.shape != vb.shape:
        raise InputError("paired scores differ in length", field="b", value=len(vb), expected=f"{len(va)} scores")
    if va.size == 0:
        raise InputError("no paired scores to test", field="a", value=[], expected="at least one query")
    return np.asarray(va - vb, dtype=float)


def _check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise InputError("number of resamples must be positive", field="n_resamples", value=n_resamples,
                         expected="an integer >= 1, e.g. 10000")


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise InputError("confidence must lie strictly between 0 and 1", field="confidence", value=confidence,
                         expected="e.g. 0.95")


def _tolerance(d: np.ndarray) -> float:
    # Permuted sums are computed in another order than the observed one; allow rounding noise.
    return 1e-9 * (float(np.abs(d).sum()) + 1e-300)


def paired_permutation_test(
    a: Scores,
    b: Scores,
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> float:
    """p-value of the sign-flip randomisation test of mean(a - b) = 0.

    ``greater`` tests a > b, ``less`` tests a < b. Identical runs give p = 1.
    """
    if alternative not in ALTERNATIVES:
        raise InputError(
            "unknown alternative", field="alternative", value=alternative, expected=", ".join(ALTERNATIVES)
        )
    _check_resamples(n_resamples)
    d = _paired(a, b)
    n = d.size
    observed = float(d.sum())
    tol = _tolerance(d)

    def count(stats: np.ndarray) -> int:
        if alternative == "two-sided":
            return int(np.count_nonzero(np.abs(stats) >= abs(observed) - tol))
        if alternative == "greater":
            return int(np.count_nonzero(stats >= observed - tol))
        return int(np.count_nonzero(stats <= observed + tol))

    if n < 63 and 2**n <= n_resamples:
        total = 2**n
        hits = 0
        for start in range(0, total, _CHUNK):
            indices = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)
            flips = 1.0 - 2.0 * ((indices[:, None] >> np.arange(n, dtype=np.int64)) & 1)
            hits += count(flips @ d)
        return float(hits / total)
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    while done < n_resamples:
        block = min(_CHUNK, n_resamples - done)
        signs = rng.integers(0, 2, size=(block, n)) * 2.0 - 1.0
        hits += count(signs @ d)
        done += block
    return (hits + 1) / (n_resamples + 1)


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = values.size
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, _CHUNK):
        rows = min(_CHUNK, n_resamples - start)
        out[start : start + rows] = values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    return out


def _percentile_ci(means: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def paired_bootstrap(
    a: Scores,
    b: Scores,
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Mean of a - b, its percentile bootstrap CI, and the two-sided bootstrap p-value."""
    _check_resamples(n_resamples)
    _check_confidence(confidence)
    d = _paired(a, b)
    observed = float(d.mean())
    means = _bootstrap_means(d, n_resamples, seed)
    low, high = _percentile_ci(means, confidence)
    hits = int(np.count_nonzero(np.abs(means - observed) >= abs(observed) - _tolerance(d)))
    return BootstrapResult(observed, low, high, (hits + 1) / (n_resamples + 1))


def bootstrap_ci(
    values: Scores, *, n_resamples: int = 10000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(mean, ci_low, ci_high) of one score over queries, by the percentile bootstrap."""
    _check_resamples(n_resamples)
    _check_confidence(confidence)
    v = _vector(values, "values")
    if v.size == 0:
        raise InputError("no scores to bootstrap", field="values", value=[], expected="at least one query")
    low, high = _percentile_ci(_bootstrap_means(v, n_resamples, seed), confidence)
    return float(v.mean()), low, high


def paired_t_test(a: Scores, b: Scores, *, confidence: float = 0.95) -> BootstrapResult:
    """Paired t-test: mean of a - b, its t-interval and two-sided p (NaN with fewer than 2 queries)."""
    from scipy.stats import t as t_dist

    _check_confidence(confidence)
    d = _paired(a, b)
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return BootstrapResult(mean, math.nan, math.nan, math.nan)
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0.0:  # every query differs by the same amount: no variance to test against
        return BootstrapResult(mean, mean, mean, 1.0 if mean == 0.0 else 0.0)
    half = float(t_dist.ppf(1.0 - (1.0 - confidence) / 2.0, n - 1)) * se
    p = float(2.0 * t_dist.sf(abs(mean / se), n - 1))
    return BootstrapResult(mean, mean - half, mean + half, p)


def compare_to_baseline(
    per_query_by_run: Mapping[str, Mapping[str, float]],
    baseline: str,
    *,
    alpha: float = 0.05,
    method: Method = "permutation",
    n_resamples: int = 10000,
    seed: int = 0,
    queries: Iterable[str] | None = None,
) -> list[Comparison]:
    """Compare every other run with ``baseline`` over queries (per run: query -> score).

    Queries: ``queries`` if given, else the union of the two runs' queries; a query missing from a
    run scores 0. p is two-sided; the CI (confidence 1 - alpha) is of the mean difference, from the
    paired bootstrap (permutation, bootstrap) or the t distribution (t-test). A run is
    significantly worse when diff < 0 and p < alpha. No multiple-comparison correction is applied.
    """
    if method not in METHODS:
        raise InputError("unknown significance test", field="method", value=method, expected=", ".join(METHODS))
    if not 0.0 < alpha < 1.0:
        raise InputError("alpha must lie strictly between 0 and 1", field="alpha", value=alpha, expected="e.g. 0.05")
    if baseline not in per_query_by_run:
        close = difflib.get_close_matches(baseline, list(per_query_by_run), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"baseline run not found.{hint}", field="baseline", value=baseline,
            expected="one of " + ", ".join(sorted(per_query_by_run)),
        )
    fixed = list(dict.fromkeys(queries)) if queries is not None else None
    base_scores = per_query_by_run[baseline]
    out: list[Comparison] = []
    for run, scores in per_query_by_run.items():
        if run == baseline:
            continue
        qids = fixed if fixed is not None else sorted(set(scores) | set(base_scores))
        if not qids:
            raise InputError(f"no queries to compare run {run!r} with the baseline", field="queries", value=[],
                             expected="at least one query")
        a = [float(scores.get(q, 0.0)) for q in qids]
        b = [float(base_scores.get(q, 0.0)) for q in qids]
        confidence = 1.0 - alpha
        if method == "t-test":
            res = paired_t_test(a, b, confidence=confidence)
            p = res.p
        else:
            res = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed, confidence=confidence)
            p = res.p if method == "bootstrap" else paired_permutation_test(a, b, n_resamples=n_resamples, seed=seed)
        mean_a, mean_b = math.fsum(a) / len(a), math.fsum(b) / len(b)
        out.append(
            Comparison(
                run=run, baseline=baseline, mean=mean_a, baseline_mean=mean_b, diff=res.mean_diff, p=p,
                ci_low=res.ci_low, ci_high=res.ci_high, n=len(qids), method=method,
                significantly_worse=res.mean_diff < 0 and p < alpha,
                significantly_better=res.mean_diff > 0 and p < alpha,
            )
        )
    return out
