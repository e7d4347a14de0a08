"""Leaderboard correlation with an official ranking: Spearman's rho and Kendall's tau (tau-b).

Our scores are "higher is better"; official ranks are "1 is best". Both become ranks with ties
given the average rank, so a perfectly agreeing leaderboard gives +1. On those ranks:

- Spearman's rho is the Pearson correlation of the ranks (``numpy.corrcoef``); its two-sided
  p-value is Student's t test of ``t = r * sqrt((n - 2) / ((1 - r)(1 + r)))`` with n - 2 degrees of
  freedom (0 when |r| = 1; undefined for n = 2).
- Kendall's tau-b is ``(C - D) / sqrt((P - X)(P - Y))`` over the P = n(n-1)/2 pairs, C concordant,
  D discordant, X and Y pairs tied in ours and in theirs. Its two-sided p-value is exact (the number
  of permutations of n with at most min(D, C) inversions) when nothing is tied and n <= 33 or
  min(D, C) <= 1, else the normal approximation of C - D with the tie-corrected variance.

These are the definitions ``scipy.stats.spearmanr`` and ``scipy.stats.kendalltau`` (method "auto")
use; tests/measures/test_correlation_formulas.py compares statistic and p-value with them. They are computed
here with numpy and ``math`` because importing ``scipy.stats`` costs more than a second of CPU, a
third of an ``evaluate`` run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

# Kendall's exact null distribution is used up to this many runs (without ties), as scipy's "auto".
_KENDALL_EXACT_MAX_N = 33


@dataclass(frozen=True)
class Correlation:
    """Correlation over the ``n`` runs in both leaderboards.

    ``missing``: runs of the official leaderboard without a score; ``extra``: scored runs the
    official leaderboard lacks. Coefficients are None when undefined (n < 2, one side all tied, a NaN score):
    the result is written as strict JSON by ``evaluate`` (a field of its document), where NaN is not.
    """

    spearman: float | None
    kendall: float | None
    n: int
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    spearman_p: float | None = None
    kendall_p: float | None = None


def leaderboard_correlation(scores: Mapping[str, float], official_ranks: Mapping[str, float]) -> Correlation:
    common = sorted(set(scores) & set(official_ranks))
    missing = sorted(set(official_ranks) - set(scores))
    extra = sorted(set(scores) - set(official_ranks))
    n = len(common)
    ours_raw = np.array([-float(scores[r]) for r in common], dtype=float)
    theirs_raw = np.array([float(official_ranks[r]) for r in common], dtype=float)
    if n < 2 or np.isnan(ours_raw).any() or np.isnan(theirs_raw).any():
        return Correlation(None, None, n, missing, extra)
    ours, theirs = average_ranks(ours_raw), average_ranks(theirs_raw)
    if (ours == ours[0]).all() or (theirs == theirs[0]).all():
        return Correlation(None, None, n, missing, extra)
    rho, rho_p = spearman(ours, theirs)
    tau, tau_p = kendall_tau_b(ours, theirs)
    return Correlation(
        spearman=_finite(rho), kendall=_finite(tau), n=n, missing=missing, extra=extra,
        spearman_p=_finite(rho_p), kendall_p=_finite(tau_p),
    )


def average_ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranks 1..n of ``values`` ascending; tied values share the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]  # a group spans ranks starts+1 .. ends
    group_of = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = ((starts + 1 + ends) / 2.0)[group_of]
    return ranks


def spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Pearson's r of two rank vectors (neither constant) and its two-sided t-test p-value."""
    n = len(x)
    r = float(np.corrcoef(x, y)[0, 1])
    dof = n - 2
    if dof == 0:
        return r, math.nan
    if abs(r) >= 1.0:
        return r, 0.0
    t = r * math.sqrt(max(dof / ((r + 1.0) * (1.0 - r)), 0.0))
    return r, student_t_two_sided(t, dof)


def kendall_tau_b(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Kendall's tau-b of two vectors (neither constant) and its two-sided p-value."""
    n = len(x)
    discordant = _discordant_pairs(x, y)
    pairs = n * (n - 1) // 2
    ties_x, ties_y = _tie_counts(x), _tie_counts(y)
    tied_x = sum(t * (t - 1) // 2 for t in ties_x)
    tied_y = sum(t * (t - 1) // 2 for t in ties_y)
    tied_both = sum(t * (t - 1) // 2 for t in _tie_counts(np.stack([x, y], axis=1))) if tied_x and tied_y else 0
    # Every pair is concordant, discordant, or tied in x, in y or in both: C = P - X - Y + XY - D.
    s = pairs - tied_x - tied_y + tied_both - 2 * discordant  # C - D
    tau = min(1.0, max(-1.0, s / math.sqrt(pairs - tied_x) / math.sqrt(pairs - tied_y)))
    if tied_x == 0 and tied_y == 0:
        fewer = min(discordant, pairs - discordant)  # no ties: C = P - D
        if n <= _KENDALL_EXACT_MAX_N or fewer <= 1:
            return tau, _kendall_exact_two_sided(n, fewer)
    # Variance of C - D under independence, corrected for ties (Kendall, Rank Correlation Methods).
    m = n * (n - 1.0)
    var = (
        (m * (2 * n + 5) - _sum_tt1(ties_x, 2, 5) - _sum_tt1(ties_y, 2, 5)) / 18
        + (2 * tied_x * tied_y) / m
        + (_sum_tt1(ties_x, 1, -2) * _sum_tt1(ties_y, 1, -2) / (9 * m * (n - 2)) if n > 2 else 0.0)
    )
    return tau, math.erfc(abs(s) / math.sqrt(var) / math.sqrt(2.0))


def _discordant_pairs(x: NDArray[np.float64], y: NDArray[np.float64]) -> int:
    """Pairs ordered one way by x and the other by y, in O(n log n): in the order of x (ties by y),
    each item is discordant with the earlier items of larger y (those of equal x come earlier only
    with y not larger), counted with a Fenwick tree over y's dense ranks."""
    order = np.lexsort((y, x))
    dense = (np.unique(y, return_inverse=True)[1][order] + 1).tolist()
    tree = [0] * (max(dense) + 1)
    discordant = 0
    for seen, rank in enumerate(dense):
        at_most, i = 0, rank  # earlier items with y rank <= this one
        while i > 0:
            at_most += tree[i]
            i -= i & -i
        discordant += seen - at_most
        i = rank
        while i < len(tree):
            tree[i] += 1
            i += i & -i
    return discordant


def _tie_counts(values: NDArray[np.float64]) -> list[int]:
    """Sizes of the groups of equal values (of equal rows, for a 2-d array) with more than one member."""
    counts = np.unique(values, return_counts=True, axis=0)[1]
    return [int(c) for c in counts if c > 1]


def _sum_tt1(ties: Sequence[int], a: int, b: int) -> float:
    """Sum over tie groups of t(t - 1)(a t + b)."""
    return float(sum(t * (t - 1) * (a * t + b) for t in ties))


def _kendall_exact_two_sided(n: int, inversions: int) -> float:
    """2 P(I <= inversions), capped at 1, where I is the number of inversions of a uniformly random
    permutation of n items (its distribution is that of D when there are no ties)."""
    # counts[k]: permutations of j items with k inversions, k <= inversions only. Inserting item j
    # adds 0 .. j - 1 inversions, so the new count is a window sum of the old, by prefix sums.
    counts = [1] + [0] * inversions
    for j in range(2, n + 1):
        prefix = [0]
        for c in counts:
            prefix.append(prefix[-1] + c)
        counts = [prefix[k + 1] - prefix[max(0, k + 1 - j)] for k in range(inversions + 1)]
    return min(1.0, 2 * sum(counts) / math.factorial(n))


def student_t_two_sided(t: float, dof: int) -> float:
    """P(|T| >= |t|) for Student's t with an integer number of degrees of freedom >= 1.

    With theta = atan(|t| / sqrt(dof)), s = sin(theta) and x = cos(theta)^2, the finite series of
    Abramowitz & Stegun 26.7.3 (odd dof) and 26.7.4 (even dof) give A = P(|T| < |t|):
    even dof, A = s (c_0 + c_1 x + ... + c_{dof/2-1} x^{dof/2-1}) with c_0 = 1, c_k = c_{k-1} (2k-1)/(2k);
    odd dof, A = (2/pi) (theta + s sqrt(x) (d_0 + ... + d_{(dof-3)/2} x^{(dof-3)/2})), d_k = d_{k-1} 2k/(2k+1).
    The same coefficients summed to infinity give 1/s (the binomial series of 1/sqrt(1 - x)) and
    arcsin(cos theta) / s = (pi/2 - theta) / s (the series of arcsin(z)/sqrt(1 - z^2)), so 1 - A is
    the remainder of the series from the first term A leaves out. Where 1 - A < 0.1 that remainder is
    summed, all terms positive, so small p-values keep their digits, which 1 - A would cancel away.
    """
    if math.isinf(t):
        return 0.0
    t2 = t * t
    x = dof / (dof + t2)
    s = abs(t) / math.sqrt(dof + t2)
    odd = dof % 2 == 1

    def ratio(k: int) -> float:  # term k+1 / term k, without the factor x
        return (2 * k + 2) / (2 * k + 3) if odd else (2 * k + 1) / (2 * k + 2)

    first_left_out = (dof - 1) // 2 if odd else dof // 2
    term, head = 1.0, 0.0
    for k in range(first_left_out):
        head += term
        term *= x * ratio(k)
    theta = math.atan2(abs(t), math.sqrt(dof))
    p = 1.0 - (2.0 / math.pi) * (theta + s * math.sqrt(x) * head) if odd else 1.0 - s * head
    if p >= 0.1:
        return p
    tail, k = 0.0, first_left_out  # term is now the first left-out term
    while term > tail * 1e-17:
        tail += term
        term *= x * ratio(k)
        k += 1
    return (2.0 / math.pi) * s * math.sqrt(x) * tail if odd else s * tail


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
