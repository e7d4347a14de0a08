"""alpha-nDCG@k over test points (Clarke et al. 2008), hand-computed."""

from __future__ import annotations

import math

import pytest

from exam_harness.core.errors import InputError
from exam_harness.measures import AlphaNDCG, ScoringContext, ScoringInput
from exam_harness.measures.intent_aware import alpha_ndcg, ideal_dcg

COVERAGE = {"d1": {"t1", "t2"}, "d2": {"t1"}, "d3": {"t3"}, "d4": set()}
L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)


def test_hand_value_alpha_half() -> None:
    # ranking d2, d1, d3: gains 1; 0.5 (t1 seen once) + 1 (t2); 1 (t3)
    dcg = 1 / L2 + 1.5 / L3 + 1 / L4
    # greedy ideal: d1 (gain 2), d3 (gain 1 > d2's 0.5), d2 (0.5)
    idcg = 2 / L2 + 1 / L3 + 0.5 / L4
    assert alpha_ndcg(["d2", "d1", "d3"], COVERAGE, k=3, alpha=0.5) == pytest.approx(dcg / idcg)
    assert ideal_dcg(COVERAGE, COVERAGE, k=3, alpha=0.5) == pytest.approx(idcg)


def test_ideal_ranking_scores_one() -> None:
    assert alpha_ndcg(["d1", "d3", "d2"], COVERAGE, k=3, alpha=0.5) == pytest.approx(1.0)
    assert alpha_ndcg(["d1", "d3", "d2", "d4"], COVERAGE, k=20, alpha=0.5) == pytest.approx(1.0)


def test_redundancy_costs_with_alpha_one() -> None:
    # alpha = 1: a test point earns only the first time; d2 after d1 adds nothing
    dcg = 2 / L2 + 0 / L3 + 1 / L4
    idcg = 2 / L2 + 1 / L3
    assert alpha_ndcg(["d1", "d2", "d3"], COVERAGE, k=3, alpha=1.0) == pytest.approx(dcg / idcg)


def test_alpha_zero_counts_every_covered_test_point() -> None:
    dcg = 1 / L2 + 2 / L3
    idcg = 2 / L2 + 1 / L3 + 1 / L4
    assert alpha_ndcg(["d2", "d1"], COVERAGE, k=3, alpha=0.0) == pytest.approx(dcg / idcg)


def test_cut_off_and_pool() -> None:
    assert alpha_ndcg(["d4", "d1"], COVERAGE, k=1, alpha=0.5) == 0.0
    pool_cov = {**COVERAGE, "d5": {"t4", "t5", "t6"}}
    narrow = alpha_ndcg(["d1"], pool_cov, k=1, pool=["d1", "d2"], alpha=0.5)
    wide = alpha_ndcg(["d1"], pool_cov, k=1, alpha=0.5)  # pool defaults to every passage with coverage
    assert narrow == pytest.approx(1.0)
    assert wide == pytest.approx(2 / 3)
    assert alpha_ndcg(["d1"], {"d1": set()}, k=5, alpha=0.5) == 0.0  # nothing coverable: 0, not a division error


def test_bad_alpha() -> None:
    with pytest.raises(InputError, match="alpha"):
        alpha_ndcg(["d1"], COVERAGE, alpha=1.5, k=20)


def test_runs_from_grades() -> None:
    test_points = {"q1": ["t1", "t2", "t3"], "q2": ["u1"]}
    grades = {
        ("d1", "t1"): 5, ("d1", "t2"): 4, ("d2", "t1"): 4, ("d3", "t3"): 5, ("d2", "t2"): 3, ("d3", "t1"): 0,
        ("x1", "u1"): 4,
    }
    rankings = {"A": {"q1": ["d2", "d1", "d3"], "q2": ["x1"]}, "B": {"q1": ["d1", "d3"], "q9": ["zz"]}}
    ctx = ScoringContext(ScoringInput(queries=["q1", "q2"], test_points=test_points, rankings=rankings, grades=grades))
    result = AlphaNDCG(k=3, min_grade=4, alpha=0.5, pool="top-k").compute(ctx)
    assert result["A"]["q1"] == pytest.approx(alpha_ndcg(["d2", "d1", "d3"], COVERAGE, k=3, alpha=0.5))
    # B stops after d1, d3; the ideal adds d2 (gain 0.5) at rank 3
    assert result["B"]["q1"] == pytest.approx((2 / L2 + 1 / L3) / (2 / L2 + 1 / L3 + 0.5 / L4))
    assert result["A"]["q2"] == pytest.approx(1.0)
    assert result["B"]["q2"] == 0.0  # unanswered query of the bank
    assert set(result["B"]) == {"q1", "q2"}  # q9 (not in the bank) left out


def _full_scan_ideal(coverage: dict[str, set[str]], k: int, alpha: float) -> float:
    """The greedy by definition: every round, every passage's gain; the largest wins, ties to the smallest id."""
    keep, total = 1.0 - alpha, 0.0
    seen: dict[str, int] = {}
    left = sorted(p for p, ts in coverage.items() if ts)
    for j in range(1, k + 1):
        gains = [(math.fsum(keep ** seen.get(t, 0) for t in coverage[p]), p) for p in left]
        if not gains:
            break
        gain, best = min(gains, key=lambda g: (-g[0], g[1]))
        if gain <= 0.0:
            break
        total += gain / math.log2(1 + j)
        for t in coverage[best]:
            seen[t] = seen.get(t, 0) + 1
        left.remove(best)
    return total


def test_lazy_greedy_equals_the_full_scan() -> None:
    # the lazy greedy (heap of stale gains) must pick what the full scan picks, ties included: equal floats
    import random

    rng = random.Random(7)
    for _ in range(300):
        topics = [f"t{i}" for i in range(rng.randint(1, 6))]
        coverage = {f"p{i:02d}": {t for t in topics if rng.random() < rng.choice([0.2, 0.5])}
                    for i in range(rng.randint(0, 25))}
        alpha = rng.choice([0.0, 0.5, 1.0, rng.random()])
        k = rng.randint(1, 20)
        assert ideal_dcg(coverage, coverage, k=k, alpha=alpha) == _full_scan_ideal(coverage, k, alpha)


def test_lazy_greedy_over_shared_coverage_sets_equals_the_full_scan() -> None:
    # passages sharing one coverage set object (as the scoring context gives them) share a heap entry
    import random

    rng = random.Random(11)
    for _ in range(300):
        topics = [f"t{i}" for i in range(rng.randint(1, 6))]
        sets = [frozenset(t for t in topics if rng.random() < 0.4) for _ in range(rng.randint(1, 5))]
        coverage = {f"p{i:02d}": rng.choice(sets) for i in range(rng.randint(0, 30))}
        alpha = rng.choice([0.0, 0.5, 1.0, rng.random()])
        k = rng.randint(1, 25)
        plain = {p: set(ts) for p, ts in coverage.items()}
        assert ideal_dcg(coverage, coverage, k=k, alpha=alpha) == _full_scan_ideal(plain, k, alpha)
