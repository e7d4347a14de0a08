"""Leaderboard correlation with an official ranking: Spearman's rho and Kendall's tau (tau-b).

Our scores are "higher is better"; official ranks are "1 is best". Both become ranks with ties
given the average rank (as scipy.stats.rankdata), so a perfectly agreeing leaderboard gives +1.
The coefficients and p-values are scipy.stats.spearmanr's and scipy.stats.kendalltau's (tau-b,
which accounts for ties), computed here the way those functions compute them, with numpy and the
two distribution tails below (tests/test_measures_correlation.py compares every value with scipy's):
importing scipy costs more CPU than all the correlations of ``evaluate`` together. The one case not
repeated here, Kendall's exact p-value (no ties, at most 33 runs), is left to scipy.stats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Correlation:
    """Correlation over the ``n`` runs in both leaderboards.

    ``missing``: runs of the official leaderboard without a score; ``extra``: scored runs the
    official leaderboard lacks. Coefficients are NaN when undefined (n < 2, or one side all tied).
    """

    spearman: float
    kendall: float
    n: int
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    spearman_p: float = math.nan
    kendall_p: float = math.nan


def leaderboard_correlation(scores: Mapping[str, float], official_ranks: Mapping[str, float]) -> Correlation:
    import numpy as np

    common = sorted(set(scores) & set(official_ranks))
    missing = sorted(set(official_ranks) - set(scores))
    extra = sorted(set(scores) - set(official_ranks))
    n = len(common)
    ours = average_ranks(np.array([-float(scores[r]) for r in common]))
    theirs = average_ranks(np.array([float(official_ranks[r]) for r in common]))
    # scipy warns (an error under filterwarnings=error) on constant input; the value is NaN anyway.
    if n < 2 or len(set(ours)) < 2 or len(set(theirs)) < 2:
        return Correlation(math.nan, math.nan, n, missing, extra)
    rho, rho_p = _spearman(ours, theirs)
    tau, tau_p = _kendall(ours, theirs)
    return Correlation(spearman=rho, kendall=tau, n=n, missing=missing, extra=extra, spearman_p=rho_p, kendall_p=tau_p)


def average_ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranks 1..n, tied values sharing their average rank (scipy.stats.rankdata, method="average")."""
    import numpy as np

    order = np.argsort(values, kind="mergesort")
    inverse = np.empty(order.size, dtype=np.intp)
    inverse[order] = np.arange(order.size, dtype=np.intp)
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    dense = starts.cumsum()[inverse]
    count = np.r_[np.nonzero(starts)[0], len(starts)]
    result: NDArray[np.float64] = 0.5 * (count[dense] + count[dense - 1] + 1)
    return result


def _spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Pearson's r of the two rank vectors and its two-sided p from Student's t with n - 2 degrees."""
    import numpy as np

    matrix: NDArray[np.float64] = np.asarray(np.corrcoef(np.column_stack((x, y)), rowvar=False))
    rs = matrix[1, 0]  # a numpy float: rs = ±1 divides by 0 without raising
    dof = x.size - 2
    with np.errstate(divide="ignore"):  # rs = ±1: t is infinite, p is 0
        t = rs * np.sqrt(np.clip(dof / ((rs + 1.0) * (1.0 - rs)), 0, None))
    return float(rs), student_t_two_sided(float(t), dof)


def _kendall(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """tau-b from the concordant minus discordant pairs, ties counted apart; p by the normal
    approximation with the tie-corrected variance (scipy's "asymptotic" method)."""
    import numpy as np

    size = x.size
    dx, dy = _dense(x), _dense(y)
    dis = int(np.count_nonzero((dx[:, None] < dx[None, :]) & (dy[:, None] > dy[None, :])))
    xtie, x0, x1 = _tie_counts(dx)
    ytie, y0, y1 = _tie_counts(dy)
    pairs = np.stack((dx, dy), axis=1)
    _, joint = np.unique(pairs, axis=0, return_counts=True)
    ntie = int((joint * (joint - 1) // 2).sum())
    tot = size * (size - 1) // 2
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = min(1.0, max(-1.0, float(con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie))))
    if xtie == 0 and ytie == 0 and (size <= 33 or min(dis, tot - dis) <= 1):
        from scipy.stats import kendalltau  # the exact distribution of small untied rankings

        return tau, float(kendalltau(x, y).pvalue)
    m = size * (size - 1.0)
    var = (m * (2 * size + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (size - 2))
    z = float(con_minus_dis / np.sqrt(var))
    return tau, math.erfc(abs(z) / math.sqrt(2.0))  # two-sided normal tail: 2 * Phi(-|z|)


def _dense(values: NDArray[np.float64]) -> NDArray[np.intp]:
    """Dense ranks 1..k (equal values, equal rank)."""
    import numpy as np

    _, inverse = np.unique(values, return_inverse=True)
    result: NDArray[np.intp] = inverse.astype(np.intp) + 1
    return result


def _tie_counts(dense: NDArray[np.intp]) -> tuple[int, int, int]:
    """Tied pairs and the two tie sums of the variance: sum t(t-1)(t-2), sum t(t-1)(2t+5)."""
    import numpy as np

    cnt = np.bincount(dense).astype("int64", copy=False)
    cnt = cnt[cnt > 1]
    return (int((cnt * (cnt - 1) // 2).sum()), int((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
            int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()))


def student_t_two_sided(t: float, dof: int) -> float:
    """P(|T| >= |t|) for Student's t with ``dof`` degrees of freedom: the regularized incomplete beta
    I_x(dof/2, 1/2) at x = dof / (dof + t^2). NaN for dof < 1 or t NaN, as scipy.special.stdtr."""
    if dof < 1 or math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    t2 = t * t
    return _incomplete_beta(dof / 2.0, 0.5, dof / (dof + t2), t2 / (dof + t2))


def _incomplete_beta(a: float, b: float, x: float, y: float) -> float:
    """Regularized incomplete beta I_x(a, b), ``y`` = 1 - x computed apart (x near 1 keeps y's digits),
    by its continued fraction (modified Lentz) on the side where it converges fast."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-16
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for aa in (m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")  # pragma: no cover
