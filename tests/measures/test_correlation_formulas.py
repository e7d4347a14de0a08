"""The rank correlations of ``measures.correlation`` equal scipy.stats's (the oracle here) to the last digits,
and ``evaluate`` computes them without importing scipy.stats."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special
from scipy.stats import kendalltau, rankdata, spearmanr

from exam_harness.measures.correlation import average_ranks, leaderboard_correlation, student_t_two_sided
from tests.helpers import write_exam


def close(mine: float | None, oracle: float) -> bool:
    """Within 1e-12 absolute and, for a p-value far below 1, 1e-9 relative; None where scipy gives NaN."""
    if mine is None:
        return math.isnan(oracle)
    return abs(mine - oracle) <= 1e-12 and (oracle == 0 or abs(mine - oracle) <= 1e-9 * abs(oracle))


def check_against_scipy(scores: list[float], official: list[float]) -> None:
    runs = [f"run{i}" for i in range(len(scores))]
    corr = leaderboard_correlation(dict(zip(runs, scores)), dict(zip(runs, official)))
    ours, theirs = rankdata([-s for s in scores]), rankdata(official)
    assert corr.n == len(runs)
    if len(runs) < 2 or len(set(ours)) < 2 or len(set(theirs)) < 2:
        assert (corr.spearman, corr.kendall, corr.spearman_p, corr.kendall_p) == (None, None, None, None)
        return
    rho, tau = spearmanr(ours, theirs), kendalltau(ours, theirs)
    assert close(corr.spearman, rho.statistic), (corr.spearman, rho.statistic)
    assert close(corr.spearman_p, rho.pvalue), (corr.spearman_p, rho.pvalue)
    assert close(corr.kendall, tau.statistic), (corr.kendall, tau.statistic)
    assert close(corr.kendall_p, tau.pvalue), (corr.kendall_p, tau.pvalue)


@st.composite
def leaderboards(draw: st.DrawFn, max_n: int = 60, levels: int | None = None) -> tuple[list[float], list[float]]:
    """Scores and official ranks of 2..max_n runs; ``levels`` few distinct values make ties likely,
    None makes them distinct (a permutation, and scores that follow it with some swaps or not at all)."""
    n = draw(st.integers(2, max_n))
    if levels is None:
        official = [float(r) for r in draw(st.permutations(range(1, n + 1)))]
        agreement = draw(st.sampled_from(["random", "close", "reversed"]))
        if agreement == "random":
            scores = [float(s) for s in draw(st.permutations(range(n)))]
        else:
            scores = [-r if agreement == "close" else r for r in official]
            for _ in range(draw(st.integers(0, 3))):  # a few swaps: near +-1, tiny p-values
                i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
                scores[i], scores[j] = scores[j], scores[i]
        return scores, official
    scores = draw(st.lists(st.integers(0, levels).map(lambda v: v / 8), min_size=n, max_size=n))
    official = draw(st.lists(st.integers(1, levels), min_size=n, max_size=n))
    return scores, official


@settings(max_examples=120, deadline=None)
@given(leaderboards(levels=None))
def test_distinct_values_equal_scipy(board: tuple[list[float], list[float]]) -> None:
    check_against_scipy(*board)  # n <= 33: Kendall's exact null distribution; above, exact only for D or C <= 1


@settings(max_examples=100, deadline=None)
@given(leaderboards(levels=None, max_n=12))
def test_small_distinct_values_equal_scipy(board: tuple[list[float], list[float]]) -> None:
    check_against_scipy(*board)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([2, 3, 5, 12]).flatmap(lambda levels: leaderboards(levels=levels)))
def test_tied_values_equal_scipy(board: tuple[list[float], list[float]]) -> None:
    check_against_scipy(*board)  # normal approximation with the tie-corrected variance; constant sides are None


def test_exact_kendall_boundaries_equal_scipy() -> None:
    for n in (33, 34, 45):  # exact up to 33 without ties; beyond, only with one discordant (or concordant) pair
        identity = [float(i) for i in range(n)]
        one_swap = identity[:]
        one_swap[3], one_swap[4] = one_swap[4], one_swap[3]
        two_swaps = one_swap[:]
        two_swaps[10], two_swaps[11] = two_swaps[11], two_swaps[10]
        for official in (identity, one_swap, two_swaps, identity[::-1], one_swap[::-1]):
            check_against_scipy([-v for v in identity], official)


def test_average_ranks_equal_scipy_rankdata() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = rng.integers(0, 6, size=int(rng.integers(1, 40))).astype(float)
        assert np.array_equal(average_ranks(values), rankdata(values))


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 7, 10, 31, 58, 200, 1589])
def test_student_t_tail_equals_scipy(dof: int) -> None:
    # scipy's t tail loses digits for |t| < 1e-3 (one degree of freedom: 3e-9 at t = 1e-8, where 1 - 2 atan(t)/pi
    # is exact); rank correlations do not come that close to 0 unless they are 0
    for t in (0.0, 1e-3, 0.3, 1.0, 1.7, 2.5, 4.0, 9.0, 30.0, 1e3, 1e6, math.inf):
        assert close(student_t_two_sided(t, dof), 2 * special.stdtr(dof, -t)), (t, dof)


def test_missing_extra_and_constant_sides() -> None:
    corr = leaderboard_correlation({"A": 3, "B": 2, "C": 1, "Z": 9}, {"A": 1, "B": 2, "C": 3, "D": 4})
    assert (corr.n, corr.missing, corr.extra) == (3, ["D"], ["Z"]) and corr.spearman == pytest.approx(1.0)
    check_against_scipy([0.5, 0.5, 0.5], [1, 2, 3])
    check_against_scipy([0.1, 0.5, 0.9], [2, 2, 2])
    check_against_scipy([0.1, 0.5], [1, 2])  # n = 2: rho's p-value undefined (None), tau's exact p is 1
    nan_score = leaderboard_correlation({"A": math.nan, "B": 1, "C": 2}, {"A": 1, "B": 2, "C": 3})
    assert nan_score.spearman is None and nan_score.kendall_p is None  # as scipy's NaN, which JSON cannot hold


def test_evaluate_correlates_without_importing_scipy_stats(tmp_path: Path) -> None:
    exam, official = write_exam(tmp_path / "data")
    code = (
        "import sys\n"
        "from exam_harness.cli import main\n"
        f"code = main(['evaluate', {str(exam)!r}, '--official', {str(official)!r}, '--min-grade', '3', '4', '--k', '2'])\n"
        "assert code == 0, code\n"
        "assert 'scipy.stats' not in sys.modules, sorted(m for m in sys.modules if m.startswith('scipy'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Correlation with the official leaderboard" in done.stdout and "0.500 / 0.333" in done.stdout
