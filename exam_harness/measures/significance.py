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

Every resampling loop is written once, over a matrix of rows (runs) x queries: a pair of runs is
the one-row case, a leaderboard (every run against a baseline, every run's interval) is all rows at
once, drawing the same resamples for every row of a call (one seeded generator per call).
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from exam_harness.core.errors import InputError

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
    return float(_permutation_p(d[None, :], n_resamples, seed, alternative)[0])


def _permutation_p(d: np.ndarray, n_resamples: int, seed: int, alternative: Alternative = "two-sided") -> np.ndarray:
    """The sign-flip p-value of each row of d (rows x queries): exact when every sign vector fits in
    ``n_resamples``, else over random sign vectors (the same ones for every row)."""
    n = d.shape[1]
    observed = d.sum(axis=1)
    tol = 1e-9 * (np.abs(d).sum(axis=1) + 1e-300)  # permuted sums are added in another order
    hits = np.zeros(d.shape[0], dtype=np.int64)

    def count(stats: np.ndarray) -> np.ndarray:  # stats: rows x resamples
        if alternative == "two-sided":
            extreme = np.abs(stats) >= (np.abs(observed) - tol)[:, None]
        elif alternative == "greater":
            extreme = stats >= (observed - tol)[:, None]
        else:
            extreme = stats <= (observed + tol)[:, None]
        return np.asarray(np.count_nonzero(extreme, axis=1))

    if n < 63 and 2**n <= n_resamples:
        total = 2**n
        for start in range(0, total, _CHUNK):
            indices = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)
            flips = 1.0 - 2.0 * ((indices[:, None] >> np.arange(n, dtype=np.int64)) & 1)
            hits += count(d @ flips.T)
        return np.asarray(hits / total, dtype=float)
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        block = min(_CHUNK, n_resamples - done)
        signs = rng.integers(0, 2, size=(block, n)) * 2.0 - 1.0
        hits += count(d @ signs.T)
        done += block
    return np.asarray((hits + 1) / (n_resamples + 1), dtype=float)


@functools.lru_cache(maxsize=8)
def _resample_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """n x resamples: how often each query is drawn in each bootstrap resample (one seeded generator,
    blocks of _CHUNK resamples). Cached: a leaderboard's runs, τ values and measures share them."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, n))
    for start in range(0, n_resamples, _CHUNK):
        rows = min(_CHUNK, n_resamples - start)
        index = rng.integers(0, n, size=(rows, n))
        np.add.at(counts, (np.arange(start, start + rows)[:, None], index), 1.0)
    by_query = np.ascontiguousarray(counts.T)  # the layout einsum reads fastest (see _bootstrap_means)
    by_query.setflags(write=False)
    return by_query


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """rows x resamples: each row's mean in each bootstrap resample of the queries (the columns).

    einsum, not the matrix product: BLAS hands a product this size (runs x queries x 1000) to a thread
    per core, whose start-up and waiting cost several times the sums themselves (2-15 ms of CPU a
    leaderboard on two busy cores against ~0.5 ms), and whose split of the work moves the last bits of
    the means with the number of cores. einsum sums on one thread in an order set by the shapes alone.
    It sums each row's deviations from its mean (every resample draws n queries, so the mean adds
    back): summed one query after another, the rounding stays at the deviations' scale (a constant
    difference between two runs stays inside its interval).
    """
    n = values.shape[1]
    centre = values.mean(axis=1, keepdims=True)
    deviations = np.einsum("rq,qs->rs", values - centre, _resample_counts(n, n_resamples, seed))
    return np.asarray(centre + deviations / n, dtype=float)


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
    means = _bootstrap_means(d[None, :], n_resamples, seed)[0]
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
    low, high = _percentile_ci(_bootstrap_means(v[None, :], n_resamples, seed)[0], confidence)
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


PerQueryByRun = Mapping[str, Mapping[str, float]]


def _matrix(per_query_by_run: PerQueryByRun, runs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
    return np.array([[float(per_query_by_run[r].get(q, 0.0)) for q in queries] for r in runs], dtype=float)


def bootstrap_cis(
    per_query_by_run: PerQueryByRun,
    *,
    queries: Iterable[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap CI of every run's mean over queries (``bootstrap_ci`` of each run).

    ``queries`` defaults to each run's own queries in its own order; pass a list to fill a query a
    run lacks with 0 (the leaderboard rule). Runs without any query get no interval.
    """
    _check_resamples(n_resamples)
    _check_confidence(confidence)
    groups: dict[tuple[str, ...], list[str]] = {}
    fixed = list(dict.fromkeys(queries)) if queries is not None else None
    for run, scores in per_query_by_run.items():
        qids = tuple(fixed if fixed is not None else scores)
        if qids:
            groups.setdefault(qids, []).append(run)
    tail = (1.0 - confidence) / 2.0
    out: dict[str, tuple[float, float]] = {}
    for qids, runs in groups.items():
        means = _bootstrap_means(_matrix(per_query_by_run, runs, qids), n_resamples, seed)
        lows, highs = np.quantile(means, [tail, 1.0 - tail], axis=1)
        for i, run in enumerate(runs):
            out[run] = (float(lows[i]), float(highs[i]))
    return out


def compare_to_baseline(
    per_query_by_run: PerQueryByRun,
    baseline: str,
    *,
    alpha: float = 0.05,
    method: Method | str = "permutation",
    n_resamples: int = 10000,
    seed: int = 0,
    queries: Iterable[str] | None = None,
) -> list[Comparison]:
    """Compare every other run with ``baseline`` over queries (per run: query -> score).

    Queries: ``queries`` if given (every run over the same ones, resampled together), else per run
    the union of its and the baseline's queries; a query missing from a run scores 0. p is
    two-sided; the CI (confidence 1 - alpha) is of the mean difference, from the paired bootstrap
    (permutation, bootstrap) or the t distribution (t-test). A run is significantly worse when
    diff < 0 and p < alpha. No multiple-comparison correction is applied.
    """
    if method not in METHODS:
        raise InputError("unknown significance test", field="method", value=method, expected=", ".join(METHODS))
    if not 0.0 < alpha < 1.0:
        raise InputError("alpha must lie strictly between 0 and 1", field="alpha", value=alpha, expected="e.g. 0.05")
    _check_resamples(n_resamples)
    if baseline not in per_query_by_run:
        close = difflib.get_close_matches(baseline, list(per_query_by_run), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"baseline run not found.{hint}", field="baseline", value=baseline,
            expected="one of " + ", ".join(sorted(per_query_by_run)),
        )
    fixed = list(dict.fromkeys(queries)) if queries is not None else None
    base_scores = per_query_by_run[baseline]
    groups: dict[tuple[str, ...], list[str]] = {}  # runs over the same queries are resampled together
    for run, scores in per_query_by_run.items():
        if run == baseline:
            continue
        qids = tuple(fixed if fixed is not None else sorted(set(scores) | set(base_scores)))
        if not qids:
            raise InputError(f"no queries to compare run {run!r} with the baseline", field="queries", value=[],
                             expected="at least one query")
        groups.setdefault(qids, []).append(run)
    found: dict[str, Comparison] = {}
    for qids, runs in groups.items():
        for comparison in _compare_rows(per_query_by_run, runs, baseline, list(qids), alpha, method, n_resamples, seed):
            found[comparison.run] = comparison
    return [found[run] for run in per_query_by_run if run in found]


def _compare_rows(
    per_query_by_run: PerQueryByRun, runs: list[str], baseline: str, qids: list[str], alpha: float, method: str,
    n_resamples: int, seed: int,
) -> list[Comparison]:
    n = len(qids)
    values = _matrix(per_query_by_run, runs, qids)
    base = _matrix(per_query_by_run, [baseline], qids)[0]
    d = values - base
    confidence = 1.0 - alpha
    if method == "t-test":
        tests = [paired_t_test(row.tolist(), base.tolist(), confidence=confidence) for row in values]
        diff = np.array([t.mean_diff for t in tests])
        lows, highs, p = (np.array([getattr(t, f) for t in tests]) for f in ("ci_low", "ci_high", "p"))
    else:
        diff = d.mean(axis=1)
        means = _bootstrap_means(d, n_resamples, seed)
        tail = (1.0 - confidence) / 2.0
        lows, highs = np.quantile(means, [tail, 1.0 - tail], axis=1)
        if method == "bootstrap":
            tol = 1e-9 * (np.abs(d).sum(axis=1) + 1e-300)
            hits = np.count_nonzero(np.abs(means - diff[:, None]) >= (np.abs(diff) - tol)[:, None], axis=1)
            p = (hits + 1) / (n_resamples + 1)
        else:
            p = _permutation_p(d, n_resamples, seed)
    base_mean = math.fsum(base.tolist()) / n
    out: list[Comparison] = []
    for i, run in enumerate(runs):
        di, pi = float(diff[i]), float(p[i])
        out.append(
            Comparison(
                run=run, baseline=baseline, mean=math.fsum(values[i].tolist()) / n, baseline_mean=base_mean,
                diff=di, p=pi, ci_low=float(lows[i]), ci_high=float(highs[i]), n=n, method=method,
                significantly_worse=di < 0 and pi < alpha, significantly_better=di > 0 and pi < alpha,
            )
        )
    return out


def baseline_gate(
    per_query_by_run: PerQueryByRun,
    baseline: str,
    alpha: float = 0.05,
    method: Method | str = "permutation",
    *,
    measure: str = "EXAM-Cover",
    queries: Iterable[str] | None = None,
    n_resamples: int = 10000,
    seed: int = 0,
) -> list[str]:
    """One failure message per run significantly worse than ``baseline`` (diff < 0 and p < alpha).

    Queries: ``queries``, else every query any run scored (a query a run lacks scores 0). Each
    message names the run, its mean and the baseline's, the difference with its CI, and the p-value.
    An unknown baseline is an InputError listing the runs.
    """
    comparisons = baseline_comparisons(per_query_by_run, baseline, alpha, method, queries=queries,
                                       n_resamples=n_resamples, seed=seed)
    return [baseline_message(c, measure, alpha) for c in comparisons if c.significantly_worse]


def baseline_comparisons(
    per_query_by_run: PerQueryByRun,
    baseline: str,
    alpha: float = 0.05,
    method: Method | str = "permutation",
    *,
    queries: Iterable[str] | None = None,
    n_resamples: int = 10000,
    seed: int = 0,
) -> list[Comparison]:
    """Every run against ``baseline`` as the baseline gate tests it (see :func:`baseline_gate`)."""
    qids = list(dict.fromkeys(queries)) if queries is not None else sorted(
        {q for scores in per_query_by_run.values() for q in scores}
    )
    return compare_to_baseline(
        per_query_by_run, baseline, queries=qids, alpha=alpha, method=method, n_resamples=n_resamples, seed=seed
    )


def baseline_message(c: Comparison, measure: str, alpha: float) -> str:
    """The baseline gate's line for one run: a FAIL line when significantly worse, else what it found."""
    level = round((1.0 - alpha) * 100, 6)
    found = (f"{c.mean:.4f} vs {c.baseline_mean:.4f}, difference {c.diff:+.4f} "
             f"({level:g}% CI [{c.ci_low:+.4f}, {c.ci_high:+.4f}])")
    test = f"({c.method} test over {c.n} queries)"
    if c.significantly_worse:
        return (f"FAIL run {c.run!r} is significantly worse than baseline {c.baseline!r} on {measure}: {found}, "
                f"p = {c.p:.4g} < alpha {alpha:g} {test}")
    return (f"run {c.run!r} is not significantly worse than baseline {c.baseline!r} on {measure}: {found}, "
            f"p = {c.p:.4g} {test}")
