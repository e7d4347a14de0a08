"""Meta-evaluation of a judge against the truth (TREC AutoJudge's questions): rank correlations that
weigh the top of a leaderboard, Krippendorff's alpha, and Cohen's kappa per topic and pooled.

- **tau_AP** (Yilmaz, Aslam and Robertson, SIGIR 2008), one-sided: the candidate leaderboard is read top
  down; for each run below the first, the share of the runs the candidate puts above it that the truth
  also puts above it; ``tau_AP = 2 / (n - 1) * sum(share) - 1``. Ties in the candidate follow Urbano and
  Marrero's tau_AP,b (SIGIR 2017): a run is compared with the runs strictly above its tie group, its share
  divided by how many those are, and the first tie group is skipped (``n - 1`` becomes the number of runs
  outside it); a tie in the truth counts as a disagreement.
- **symmetric tau_AP** (:func:`tau_ap_symmetric`): the mean of the two one-sided values, each leaderboard
  taken once as the candidate: the ``tauap_b`` that autojudge-evaluate reports (its ``pyircore.tauap_b``).
  The two are named apart: only the one-sided form is the usual tau_AP.
- **Krippendorff's alpha** for two coders with no missing values (each unit labelled by both): ``1 - D_o /
  D_e`` over the coincidence matrix of the pairable values, with the nominal (0/1) or interval (squared
  difference) distance.
- **kappa per topic and pooled**: Cohen's kappa of each topic's (truth, judge) labels, their mean over the
  topics where kappa is defined, and kappa over all pairs at once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from exam_harness.measures.kappa import cohen_kappa


def _check(truth: Sequence[float], candidate: Sequence[float]) -> None:
    if len(truth) != len(candidate):
        raise ValueError(f"the two leaderboards have {len(truth)} and {len(candidate)} runs; they must be aligned")
    if len(truth) < 3:
        raise ValueError(f"tau_AP needs at least 3 runs, got {len(truth)}")


def tau_ap(truth: Sequence[float], candidate: Sequence[float]) -> float:
    """One-sided tau_AP of ``candidate``'s leaderboard against ``truth``'s (scores per run, aligned; higher is
    better), with tau_AP,b's treatment of ties in the candidate."""
    _check(truth, candidate)
    n = len(candidate)
    total = 0.0
    outside_top = 0
    for i in range(n):
        above = [j for j in range(n) if candidate[j] > candidate[i]]
        if not above:  # the candidate's first tie group: nothing above to agree on
            continue
        outside_top += 1
        agreeing = sum(1 for j in above if truth[j] > truth[i])
        total += agreeing / len(above)
    if outside_top == 0:
        return math.nan  # every run tied in the candidate
    return 2.0 / outside_top * total - 1.0


def tau_ap_symmetric(a: Sequence[float], b: Sequence[float]) -> float:
    """The mean of both one-sided tau_AP values (each leaderboard once the candidate): autojudge-evaluate's
    ``tauap_b``."""
    return (tau_ap(a, b) + tau_ap(b, a)) / 2.0


def krippendorff_alpha(pairs: Sequence[tuple[float, float]], level: str = "nominal") -> float:
    """Krippendorff's alpha of two coders' values on the same units (``pairs``: one (first, second) per
    unit); ``level`` ``nominal`` or ``interval``. NaN when undefined (fewer than 2 units, one value only)."""
    if level not in ("nominal", "interval"):
        raise ValueError(f"level={level!r}: nominal or interval")
    # coincidence matrix: each unit's two values, counted both ways (m_u - 1 = 1 for two coders)
    coincidences: Counter[tuple[float, float]] = Counter()
    for first, second in pairs:
        coincidences[(first, second)] += 1
        coincidences[(second, first)] += 1
    n = sum(coincidences.values())
    if n < 4:
        return math.nan
    marginals: Counter[float] = Counter()
    for (c, _k), count in coincidences.items():
        marginals[c] += count

    def distance(c: float, k: float) -> float:
        return float(c != k) if level == "nominal" else (c - k) ** 2

    observed = math.fsum(count * distance(c, k) for (c, k), count in coincidences.items()) / n
    expected = math.fsum(marginals[c] * marginals[k] * distance(c, k) for c in marginals for k in marginals) / (
        n * (n - 1))
    if expected == 0:
        return math.nan
    return 1.0 - observed / expected


def kappa_per_topic_and_pooled(labels: Mapping[tuple[str, str], tuple[int, int]]) -> tuple[float, float]:
    """(mean of the per-topic kappas where defined, kappa over all pairs) of ``labels``: (topic, item) ->
    (truth label, judge label). NaN where undefined."""
    def table(pairs: Sequence[tuple[int, int]]) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {}
        for truth, judge in pairs:
            row = out.setdefault(truth, {})
            row[judge] = row.get(judge, 0) + 1
        return out

    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, _item), pair in labels.items():
        by_topic.setdefault(topic, []).append(pair)
    per_topic = [k for k in (cohen_kappa(table(p)) for p in by_topic.values()) if not math.isnan(k)]
    mean = math.fsum(per_topic) / len(per_topic) if per_topic else math.nan
    return mean, cohen_kappa(table(list(labels.values())))
