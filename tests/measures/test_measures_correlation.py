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


def test_undefined_cases_are_none_without_warnings() -> None:
    assert leaderboard_correlation({"A": 1}, OFFICIAL).spearman is None
    tied = leaderboard_correlation({"A": 0.5, "B": 0.5, "C": 0.5}, OFFICIAL)
    assert tied.spearman is None and tied.kendall is None and tied.n == 3 and tied.kendall_p is None


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
