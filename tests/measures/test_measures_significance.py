"""Paired permutation test, paired bootstrap, t-test and baseline comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import ttest_rel

from exam_harness.core.errors import InputError
from exam_harness.measures.significance import (
    bootstrap_ci,
    compare_to_baseline,
    paired_bootstrap,
    paired_permutation_test,
    paired_t_test,
)

RNG = np.random.default_rng(42)
BASE = {f"q{i}": float(v) for i, v in enumerate(RNG.uniform(0.2, 0.6, size=40))}
BETTER = {q: v + 0.3 + float(RNG.normal(0, 0.05)) for q, v in BASE.items()}


def test_identical_runs_give_p_one() -> None:
    assert paired_permutation_test(BASE, dict(BASE)) == 1.0
    boot = paired_bootstrap(BASE, dict(BASE))
    assert (boot.mean_diff, boot.ci_low, boot.ci_high, boot.p) == (0.0, 0.0, 0.0, 1.0)
    assert paired_t_test(BASE, dict(BASE)).p == 1.0


def test_clearly_different_runs_give_small_p() -> None:
    assert paired_permutation_test(BETTER, BASE) < 0.001
    assert paired_permutation_test(BETTER, BASE, alternative="greater") < 0.001
    assert paired_permutation_test(BETTER, BASE, alternative="less") == 1.0
    boot = paired_bootstrap(BETTER, BASE)
    assert boot.p < 0.001
    assert 0.25 < boot.ci_low < boot.mean_diff < boot.ci_high < 0.35


def test_exact_enumeration_small_n() -> None:
    # d = (1, 2, 3): of the 8 sign vectors only +++ and --- reach |sum| >= 6
    assert paired_permutation_test([2.0, 3.0, 4.0], [1.0, 1.0, 1.0]) == 2 / 8
    assert paired_permutation_test([2.0, 3.0, 4.0], [1.0, 1.0, 1.0], alternative="greater") == 1 / 8
    assert paired_permutation_test([2.0, 3.0, 4.0], [1.0, 1.0, 1.0], alternative="less") == 1.0
    # d = (1, -1, 2): the 8 sign-flipped sums are 2, -2, 4, 0, 0, -4, 2, -2; six reach |sum| >= 2
    assert paired_permutation_test([1.0, 0.0, 2.0], [0.0, 1.0, 0.0]) == 6 / 8


def test_monte_carlo_close_to_exact_and_deterministic() -> None:
    a = [0.5, 0.4, 0.7, 0.2, 0.9, 0.3, 0.6, 0.55, 0.35, 0.8, 0.45, 0.65]
    b = [0.45, 0.5, 0.5, 0.25, 0.7, 0.35, 0.5, 0.6, 0.3, 0.6, 0.5, 0.5]
    exact = paired_permutation_test(a, b, n_resamples=4096)  # 2^12 sign vectors, enumerated
    mc = paired_permutation_test(a, b, n_resamples=3000, seed=1)
    assert abs(mc - exact) < 0.03
    assert paired_permutation_test(a, b, n_resamples=3000, seed=1) == mc
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)
    assert paired_bootstrap(a, b, seed=3) != paired_bootstrap(a, b, seed=4)


def test_mappings_are_paired_by_query() -> None:
    a = {"q1": 1.0, "q2": 0.0, "q3": 0.5}
    shuffled = {"q3": 0.5, "q1": 1.0, "q2": 0.0}
    assert paired_permutation_test(a, shuffled) == 1.0
    with pytest.raises(InputError, match="different queries"):
        paired_permutation_test(a, {"q1": 1.0, "q2": 0.0})
    with pytest.raises(InputError, match="differ in length"):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="no paired scores"):
        paired_permutation_test([], [])
    with pytest.raises(InputError, match="alternative"):
        paired_permutation_test(a, a, alternative="bigger")  # type: ignore[arg-type]


def test_bootstrap_ci_single_score() -> None:
    mean, low, high = bootstrap_ci(list(BASE.values()), seed=0)
    assert low < mean < high
    assert mean == pytest.approx(float(np.mean(list(BASE.values()))))
    assert bootstrap_ci([0.3, 0.3, 0.3]) == pytest.approx((0.3, 0.3, 0.3))
    with pytest.raises(InputError, match="confidence"):
        bootstrap_ci([0.3], confidence=95)


def test_t_test_matches_scipy() -> None:
    res = paired_t_test(BETTER, BASE, confidence=0.9)
    keys = sorted(BASE)
    expected = ttest_rel([BETTER[k] for k in keys], [BASE[k] for k in keys])
    assert res.p == pytest.approx(float(expected.pvalue))
    ci = expected.confidence_interval(0.9)
    assert (res.ci_low, res.ci_high) == pytest.approx((ci.low, ci.high))
    assert math.isnan(paired_t_test([1.0], [0.0]).p)
    assert paired_t_test([1.0, 2.0], [0.5, 1.5]).p == 0.0  # a constant, non-zero difference


@pytest.mark.parametrize("method", ["permutation", "bootstrap", "t-test"])
def test_compare_to_baseline(method: str) -> None:
    worse = {q: v - 0.2 for q, v in BASE.items()}
    runs = {"base": BASE, "better": BETTER, "same": dict(BASE), "worse": worse}
    comparisons = compare_to_baseline(runs, "base", method=method, n_resamples=2000)
    result = {c.run: c for c in comparisons}
    assert list(result) == ["better", "same", "worse"]
    assert result["worse"].significantly_worse and not result["worse"].significantly_better
    assert result["worse"].diff == pytest.approx(-0.2)
    assert result["worse"].ci_low <= -0.2 <= result["worse"].ci_high
    assert result["better"].significantly_better and not result["better"].significantly_worse
    assert not result["same"].significantly_worse and result["same"].p == 1.0
    assert result["same"].n == 40 and result["same"].method == method


def test_compare_fills_unanswered_queries_with_zero() -> None:
    runs = {"base": {"q1": 0.5, "q2": 0.5}, "partial": {"q1": 0.5}}
    (cmp,) = compare_to_baseline(runs, "base", queries=["q1", "q2", "q3"])
    assert cmp.n == 3 and cmp.diff == pytest.approx(-0.5 / 3) and cmp.mean == pytest.approx(0.5 / 3)


def test_compare_errors() -> None:
    with pytest.raises(InputError, match="Did you mean 'base'"):
        compare_to_baseline({"base": BASE, "other": BASE}, "bsae")
    with pytest.raises(InputError, match="method"):
        compare_to_baseline({"base": BASE}, "base", method="wilcoxon")


def test_bootstrap_means_are_the_resample_means_on_one_thread() -> None:
    """Each bootstrap mean is the mean of the queries drawn (counted from the draws, not read back
    from the implementation), for a leaderboard's rows at once."""
    from exam_harness.measures.significance import _bootstrap_means, _resample_counts

    rng = np.random.default_rng(7)
    values = rng.uniform(0.0, 1.0, size=(5, 43))
    values[4] = 0.3  # a row of one value
    counts = _resample_counts(43, 300, 3)
    assert counts.shape == (43, 300) and (counts.sum(axis=0) == 43).all()
    means = _bootstrap_means(values, 300, 3)
    for s in (0, 17, 299):
        drawn = np.repeat(np.arange(43), counts[:, s].astype(int))  # the queries resample s drew
        for row in range(4):
            assert means[row, s] == pytest.approx(math.fsum(values[row, drawn].tolist()) / 43, abs=1e-15)
    assert (means[4] == 0.3).all()
