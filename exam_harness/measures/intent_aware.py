"""alpha-nDCG@k over test points (Clarke et al., SIGIR 2008), the intent-aware measure the method
suggests: each test point is a "nugget"; a passage covers it when its grade >= tau.

Gain of the passage at rank j: G[j] = sum over test points t it covers of (1 - alpha)^{r_t}, where
r_t counts the passages above rank j that already cover t (redundancy is discounted).
DCG@k = sum_{j=1..k} G[j] / log2(1 + j); alpha-nDCG@k = DCG@k / ideal DCG@k, the ideal ranking
built by the standard greedy approximation (at each rank, the pool passage with the largest gain;
ties go to the smallest passage id) over the pool plus the run's own top-k. 0 when nothing in the
pool covers anything.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from exam_harness.core.errors import InputError
from exam_harness.measures._checks import check_k


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0.0 <= alpha <= 1.0):
        raise InputError("alpha must lie in [0, 1]", field="alpha", value=alpha, expected="e.g. 0.5")


def _gain(covers: AbstractSet[str], seen: dict[str, int], keep: float) -> float:
    if seen.keys().isdisjoint(covers):  # each term is keep ** 0 = 1.0, and their fsum the count
        return float(len(covers))
    return math.fsum([keep ** seen.get(t, 0) for t in covers])  # fsum: exact, so any order gives one value


@functools.lru_cache(maxsize=16)
def _discounts(k: int) -> tuple[float, ...]:
    """log2(1 + j) for ranks j = 1..k, at index j - 1."""
    return tuple(math.log2(1 + j) for j in range(1, k + 1))


def dcg(ranked: Sequence[str], coverage: Mapping[str, AbstractSet[str]], k: int, keep: float) -> float:
    seen: dict[str, int] = {}
    total = 0.0
    discounts = _discounts(k)
    for j, pid in enumerate(ranked[:k]):
        covers = coverage.get(pid)
        if not covers:  # no gain (adding 0.0 would change nothing)
            continue
        # _gain, inlined: this loop runs for every run, query and covering passage
        if seen.keys().isdisjoint(covers):
            total += len(covers) / discounts[j]
        else:
            total += math.fsum([keep ** seen.get(t, 0) for t in covers]) / discounts[j]
        for t in covers:
            seen[t] = seen.get(t, 0) + 1
    return total


def ideal_dcg(
    pool: Iterable[str], coverage: Mapping[str, AbstractSet[str]], *, k: int, alpha: float
) -> float:
    """Greedy approximation of the ideal DCG@k over the pool's passages.

    Lazy greedy: a passage's gain never grows as passages are chosen (``keep ** n`` falls with n),
    so a gain computed in an earlier round bounds its gain now. The heap holds (-gain, passage id,
    round computed); the top entry, once recomputed in this round, beats every other entry's bound,
    or ties it with a smaller id: the choice of the full scan (the largest gain, ties to the smallest
    id) with the same gains, computed only for the passages near the top.

    Passages whose coverage is one and the same set object (the scoring context keeps one per distinct
    coverage of a query) have equal gains in every round: they share one heap entry, standing for the
    smallest id among them not chosen yet, whose gain is computed once for all of them.
    """
    check_k(k)
    _check_alpha(alpha)
    keep = 1.0 - alpha
    # passages covering nothing add no gain; nothing is seen yet, so each gain is the count covered
    by_set: dict[int, tuple[AbstractSet[str], list[str]]] = {}
    for p in set(pool):
        covers = coverage.get(p)
        if covers:
            group = by_set.get(id(covers))
            if group is None:
                by_set[id(covers)] = (covers, [p])
            else:
                group[1].append(p)
    groups = list(by_set.values())
    for _, ids in groups:
        ids.sort(reverse=True)  # the smallest id last, chosen first
    heap = [(-float(len(covers)), ids[-1], 0, g) for g, (covers, ids) in enumerate(groups)]
    heapq.heapify(heap)
    seen: dict[str, int] = {}
    total = 0.0
    discounts = _discounts(k)
    for j in range(1, k + 1):
        while heap:
            neg, best, computed, g = heap[0]
            if computed == j:
                break
            heapq.heapreplace(heap, (-_gain(groups[g][0], seen, keep), best, j, g))
        if not heap or -heap[0][0] <= 0.0:
            break
        neg, best, _, g = heap[0]
        covers, ids = groups[g]
        ids.pop()
        if ids:  # the group's next id, its last gain a bound (computed in this round: recomputed in the next)
            heapq.heapreplace(heap, (neg, ids[-1], j, g))
        else:
            heapq.heappop(heap)
        total += -neg / discounts[j - 1]
        for t in covers:
            seen[t] = seen.get(t, 0) + 1
    return total


def alpha_ndcg(
    ranking_for_query: Sequence[str],
    coverage: Mapping[str, AbstractSet[str]],
    *,
    k: int,
    alpha: float,
    pool: Iterable[str] | None = None,
) -> float:
    """alpha-nDCG@k of one ranked list; ``coverage``: passage -> test points it covers.

    ``pool`` defaults to the passages of ``coverage`` (pass every graded passage of the query).
    """
    check_k(k)
    _check_alpha(alpha)
    ranked = list(ranking_for_query)
    candidates = set(coverage if pool is None else pool) | set(ranked[:k])
    ideal = ideal_dcg(candidates, coverage, k=k, alpha=alpha)
    if ideal == 0.0:
        return 0.0
    return dcg(ranked, coverage, k, 1.0 - alpha) / ideal
