"""Leaderboard correlation with an official ranking: Spearman's rho and Kendall's tau (tau-b).

Our scores are "higher is better"; official ranks are "1 is best". Both become ranks with ties
given the average rank (scipy.stats.rankdata), so a perfectly agreeing leaderboard gives +1.
The coefficients are computed on those ranks with
scipy.stats.spearmanr and scipy.stats.kendalltau (tau-b, which accounts for ties).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Correlation:
    """Correlation over the ``n`` runs in both leaderboards.

    ``missing``: runs of the official leaderboard without a score; ``extra``: scored runs the
    official leaderboard lacks. Coefficients are None when undefined (n < 2, or one side all tied):
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
    from scipy.stats import kendalltau, rankdata, spearmanr

    common = sorted(set(scores) & set(official_ranks))
    missing = sorted(set(official_ranks) - set(scores))
    extra = sorted(set(scores) - set(official_ranks))
    n = len(common)
    ours = rankdata([-float(scores[r]) for r in common], method="average")
    theirs = rankdata([float(official_ranks[r]) for r in common], method="average")
    # scipy warns (an error under filterwarnings=error) on constant input; the value is NaN anyway.
    if n < 2 or len(set(ours)) < 2 or len(set(theirs)) < 2:
        return Correlation(None, None, n, missing, extra)
    rho = spearmanr(ours, theirs)
    tau = kendalltau(ours, theirs)
    return Correlation(
        spearman=_finite(rho.statistic),
        kendall=_finite(tau.statistic),
        n=n,
        missing=missing,
        extra=extra,
        spearman_p=_finite(rho.pvalue),
        kendall_p=_finite(tau.pvalue),
    )


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
