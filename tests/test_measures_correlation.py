"""Leaderboard correlation: sign, ties, missing runs, scipy cross-check."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import kendalltau, spearmanr

from exam_harness.measures.correlation import leaderboard_correlation

OFFICIAL = {"A": 1, "B": 2, "C": 3, "D": 4}


def test_perfect_agreement_is_plus_one() -> None:
    corr = leaderboard_correlation({"A": 0.9, "B": 0.7, "C": 0.5, "D": 0.1}, OFFICIAL)
    assert corr.spearman == pytest.approx(1.0) and corr.kendall == pytest.approx(1.0)
    assert corr.n == 4 and corr.missing == [] and corr.extra == []


def test_reversed_is_minus_one() -> None:
    corr = leaderboard_correlation({"A": 0.1, "B": 0.5, "C": 0.7, "D": 0.9}, OFFICIAL)
    assert corr.spearman == pytest.approx(-1.0) and corr.kendall == pytest.approx(-1.0)


def test_hand_case_with_ties() -> None:
    corr = leaderboard_correlation({"A": 3, "B": 2, "C": 2, "D": 1}, OFFICIAL)
    # our ranks 1, 2.5, 2.5, 4 vs 1, 2, 3, 4: Pearson on ranks = 4.5 / sqrt(4.5 * 5)
    assert corr.spearman == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    # 5 concordant, 0 discordant, 1 pair tied in ours only: tau-b = 5 / sqrt(5 * 6)
    assert corr.kendall == pytest.approx(5 / math.sqrt(30))


def test_official_ties_as_average_ranks() -> None:
    official = {"A": 1, "B": 2.5, "C": 2.5, "D": 4}
    corr = leaderboard_correlation({"A": 4, "B": 3, "C": 2, "D": 1}, official)
    assert corr.spearman == pytest.approx(4.5 / math.sqrt(4.5 * 5))


def test_missing_and_extra_runs() -> None:
    corr = leaderboard_correlation({"A": 3, "B": 2, "C": 1, "Z": 9}, OFFICIAL)
    assert corr.n == 3 and corr.missing == ["D"] and corr.extra == ["Z"]
    assert corr.spearman == pytest.approx(1.0)


def test_undefined_cases_are_nan_without_warnings() -> None:
    assert math.isnan(leaderboard_correlation({"A": 1}, OFFICIAL).spearman)
    tied = leaderboard_correlation({"A": 0.5, "B": 0.5, "C": 0.5}, OFFICIAL)
    assert math.isnan(tied.spearman) and math.isnan(tied.kendall) and tied.n == 3


def test_matches_scipy_on_random_leaderboards() -> None:
    rnd = random.Random(7)
    for _ in range(5):
        runs = [f"r{i}" for i in range(15)]
        scores = {r: round(rnd.random(), 1) for r in runs}  # rounding creates ties
        official = {r: i + 1 for i, r in enumerate(rnd.sample(runs, len(runs)))}
        corr = leaderboard_correlation(scores, official)
        xs = [scores[r] for r in runs]
        ys = [official[r] for r in runs]
        # higher score is better, rank 1 is best: agreement means a negative raw correlation
        assert corr.spearman == pytest.approx(-spearmanr(xs, ys).statistic)
        assert corr.kendall == pytest.approx(-kendalltau(xs, ys).statistic)


@pytest.mark.parametrize("size", [2, 3, 12, 33, 34, 37, 60])
def test_coefficients_and_p_values_equal_scipys(size: int) -> None:
    # computed without scipy: the coefficients must be scipy's to the last bit, the p-values (our own
    # distribution tails) to 1e-12 relative
    from scipy.stats import rankdata

    rnd = random.Random(size)
    for digits in (1, 2, 6):  # coarse rounding: many ties; fine: none (the exact p path for <= 33 runs)
        runs = [f"r{i}" for i in range(size)]
        scores = {r: round(rnd.random(), digits) for r in runs}
        official = {r: float(i + 1 if rnd.random() < 0.8 else rnd.randint(1, size))
                    for i, r in enumerate(rnd.sample(runs, size))}
        corr = leaderboard_correlation(scores, official)
        ours = rankdata([-scores[r] for r in runs])
        theirs = rankdata([official[r] for r in runs])
        if len(set(ours)) < 2 or len(set(theirs)) < 2:
            continue
        rho, tau = spearmanr(ours, theirs), kendalltau(ours, theirs)
        assert corr.spearman == rho.statistic and corr.kendall == tau.statistic
        for value, expected in ((corr.spearman_p, rho.pvalue), (corr.kendall_p, tau.pvalue)):
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-300, nan_ok=True)


def test_student_t_tail_against_exact_values() -> None:
    # the exact tail I_x(dof/2, 1/2) at 40 digits: independent of scipy (whose stdtr is off by 3e-9 at
    # dof 1, t 1e-8)
    mpmath = pytest.importorskip("mpmath")
    from exam_harness.measures.correlation import student_t_two_sided

    mpmath.mp.dps = 40
    for dof in (1, 2, 3, 5, 10, 35, 97, 200):
        for t in (0.0, 1e-8, 0.01, 0.5, 1.0, 1.68, 2.0, 3.0, 5.0, 12.0, 40.0):
            x = mpmath.mpf(dof) / (dof + mpmath.mpf(t) ** 2)
            exact = float(mpmath.betainc(mpmath.mpf(dof) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True))
            assert student_t_two_sided(t, dof) == pytest.approx(exact, rel=1e-12, abs=1e-300)
    assert student_t_two_sided(math.inf, 5) == 0.0
    assert math.isnan(student_t_two_sided(math.nan, 5)) and math.isnan(student_t_two_sided(1.0, 0))
