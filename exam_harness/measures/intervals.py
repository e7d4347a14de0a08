"""Confidence intervals and baseline comparisons for whole leaderboards at once.

:mod:`exam_harness.measures.significance` tests one pair of runs per call. A leaderboard needs the
same test for every run, and its functions draw the same resamples for every run of a leaderboard
(one seeded generator per call, the same number of queries). So the resampling is done once here,
for all runs as one matrix, giving exactly the numbers the per-run functions give (tested), at a
fraction of the time: every leaderboard score of ``exam-harness evaluate`` gets its interval.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from exam_harness.errors import InputError
from exam_harness.measures.significance import (
    METHODS,
    Comparison,
    _check_confidence,
    _check_resamples,
    compare_to_baseline,
)

_CHUNK = 2048  # the per-run functions draw resamples in blocks of this many (same stream)

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
    """Percentile bootstrap CI of every run's mean over queries; equals
    ``bootstrap_ci({q: scores[q] for q in queries}, ...)[1:]`` run by run.

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
        values = _matrix(per_query_by_run, runs, qids)
        means = _bootstrap_means(values, n_resamples, seed)
        lows, highs = np.quantile(means, [tail, 1.0 - tail], axis=1)
        for i, run in enumerate(runs):
            out[run] = (float(lows[i]), float(highs[i]))
    return out


@functools.lru_cache(maxsize=8)
def _resample_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """resamples x n: how often each query is drawn in each bootstrap resample, drawn exactly as
    metrics.significance draws its resample indices (same generator, same blocks)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, n))
    rows_done = 0
    for start in range(0, n_resamples, _CHUNK):
        rows = min(_CHUNK, n_resamples - start)
        index = rng.integers(0, n, size=(rows, n))
        np.add.at(counts, (np.arange(rows_done, rows_done + rows)[:, None], index), 1.0)
        rows_done += rows
    counts.setflags(write=False)
    return counts


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """runs x resamples means; row i equals metrics.significance._bootstrap_means(values[i], ...)
    up to rounding (a weighted sum by draw counts instead of a mean of the drawn values)."""
    n = values.shape[1]
    return np.asarray(values @ _resample_counts(n, n_resamples, seed).T / n, dtype=float)


def _permutation_p(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Two-sided sign-flip p per row of d (runs x queries), the random-resample branch."""
    rng = np.random.default_rng(seed)
    n = d.shape[1]
    observed = np.abs(d.sum(axis=1))
    tol = 1e-9 * (np.abs(d).sum(axis=1) + 1e-300)
    hits = np.zeros(d.shape[0], dtype=np.int64)
    done = 0
    while done < n_resamples:
        rows = min(_CHUNK, n_resamples - done)
        signs = rng.integers(0, 2, size=(rows, n)) * 2.0 - 1.0
        stats = d @ signs.T  # runs x rows
        hits += np.count_nonzero(np.abs(stats) >= (observed - tol)[:, None], axis=1)
        done += rows
    return (hits + 1) / (n_resamples + 1)


def compare_runs(
    per_query_by_run: PerQueryByRun,
    baseline: str,
    *,
    queries: Iterable[str],
    alpha: float = 0.05,
    method: str = "permutation",
    n_resamples: int = 10000,
    seed: int = 0,
) -> list[Comparison]:
    """Every run against ``baseline`` over ``queries`` (a query a run lacks scores 0): the same
    comparisons as :func:`exam_harness.measures.significance.compare_to_baseline`, vectorised over runs.

    The t-test, and permutation tests small enough to enumerate every sign vector, are delegated to
    ``compare_to_baseline`` itself.
    """
    qids = list(dict.fromkeys(queries))
    n = len(qids)
    small = method == "permutation" and n < 63 and 2**n <= n_resamples
    if method not in METHODS or method == "t-test" or small or baseline not in per_query_by_run or n == 0:
        return compare_to_baseline(
            per_query_by_run, baseline, alpha=alpha, method=method, n_resamples=n_resamples, seed=seed,  # type: ignore[arg-type]
            queries=qids,
        )
    if not 0.0 < alpha < 1.0:
        raise InputError("alpha must lie strictly between 0 and 1", field="alpha", value=alpha, expected="e.g. 0.05")
    _check_resamples(n_resamples)
    runs = [r for r in per_query_by_run if r != baseline]
    if not runs:
        return []
    values = _matrix(per_query_by_run, runs, qids)
    base = _matrix(per_query_by_run, [baseline], qids)[0]
    d = values - base
    diff = d.mean(axis=1)
    means = _bootstrap_means(d, n_resamples, seed)
    tail = (1.0 - (1.0 - alpha)) / 2.0  # the library's CI at confidence 1 - alpha, to the last bit
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
        mean = math.fsum(values[i].tolist()) / n
        pi = float(p[i])
        di = float(diff[i])
        out.append(
            Comparison(
                run=run, baseline=baseline, mean=mean, baseline_mean=base_mean, diff=di, p=pi,
                ci_low=float(lows[i]), ci_high=float(highs[i]), n=n, method=method,
                significantly_worse=di < 0 and pi < alpha, significantly_better=di > 0 and pi < alpha,
            )
        )
    return out


def baseline_gate(
    per_query_by_run: PerQueryByRun,
    baseline: str,
    alpha: float = 0.05,
    method: str = "permutation",
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
    method: str = "permutation",
    *,
    queries: Iterable[str] | None = None,
    n_resamples: int = 10000,
    seed: int = 0,
) -> list[Comparison]:
    """Every run against ``baseline`` as the baseline gate tests it (see :func:`baseline_gate`)."""
    qids = list(dict.fromkeys(queries)) if queries is not None else sorted(
        {q for scores in per_query_by_run.values() for q in scores}
    )
    return compare_runs(
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
