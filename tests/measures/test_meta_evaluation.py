"""Meta-evaluation measures against their formulas and against the figures autojudge-evaluate's own tests
state for its tauap_b (trec-auto-judge/auto-judge-evaluate tests/test_tau_ap_correlations.py)."""

from __future__ import annotations

import math

import pytest

from exam_harness.measures.meta_evaluation import (
    kappa_per_topic_and_pooled,
    krippendorff_alpha,
    tau_ap,
    tau_ap_symmetric,
)

TEN = [float(i) for i in range(1, 11)]


@pytest.mark.parametrize(("candidate", "expected"), [
    ([10.0 * i for i in range(1, 11)], 1.0),
    ([10, 20, 30, 40, 50, 60, 70, 80, 100, 90], 7 / 9),  # the top two swapped: 0.7777...
    ([20, 10, 30, 40, 50, 60, 70, 80, 90, 100], 2 / 9 * (8 + 8 / 9) - 1),  # the bottom two: 0.9753...
    ([-10.0 * i for i in range(1, 11)], -1.0),
])
def test_tau_ap_equals_autojudge_evaluates_figures(candidate: list[float], expected: float) -> None:
    b = [float(x) for x in candidate]
    for value in (tau_ap(TEN, b), tau_ap(b, TEN), tau_ap_symmetric(TEN, b)):
        assert abs(value - expected) <= 1e-12


def test_tau_ap_weighs_the_top_and_is_one_sided() -> None:
    truth = [4.0, 3.0, 2.0, 1.0]
    top = [3.0, 4.0, 2.0, 1.0]  # first two swapped
    bottom = [4.0, 3.0, 1.0, 2.0]  # last two swapped: Kendall's tau is the same for both
    assert tau_ap(truth, top) < tau_ap(truth, bottom)
    # by hand: candidate order a2 a1 a3 a4 -> shares 0/1, 2/2, 3/3 -> 2/3 * 2 - 1
    assert tau_ap(truth, top) == pytest.approx(1 / 3, abs=1e-12)
    truth2, candidate2 = [3.0, 1.0, 2.0, 4.0], [4.0, 3.0, 2.0, 1.0]
    # candidate order r1 r2 r3 r4; truth order r4 r1 r3 r2
    # r2: above {r1}: truth r1 > r2 yes -> 1; r3: above {r1, r2}: r1 > r3 yes, r2 > r3 no -> 1/2;
    # r4: above {r1, r2, r3}: none above r4 in truth -> 0
    assert tau_ap(truth2, candidate2) == pytest.approx(2 / 3 * 1.5 - 1, abs=1e-12)
    assert tau_ap(candidate2, truth2) != tau_ap(truth2, candidate2)  # one-sided
    assert tau_ap_symmetric(truth2, candidate2) == pytest.approx(
        (tau_ap(truth2, candidate2) + tau_ap(candidate2, truth2)) / 2, abs=1e-15)


def test_ties_in_the_candidate_follow_tau_ap_b() -> None:
    truth = [4.0, 3.0, 2.0, 1.0]
    tied = [2.0, 2.0, 1.0, 0.0]  # the first two tied: the top group is skipped, 2 runs outside it
    # r3: above {r1, r2}, both above in truth -> 1; r4: above {r1, r2, r3} -> 1
    assert tau_ap(truth, tied) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="at least 3 runs"):
        tau_ap([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="aligned"):
        tau_ap([1.0, 2.0, 3.0], [1.0, 2.0])


def test_krippendorff_alpha_by_hand() -> None:
    pairs = [(1, 1), (1, 1), (0, 0), (0, 1), (1, 1), (0, 0)]
    # coincidences: (1,1) 6, (0,0) 4, (0,1) 1, (1,0) 1; n = 12; n_1 = 7, n_0 = 5
    d_o = 2 / 12
    d_e = (7 * 5 + 5 * 7) / (12 * 11)
    assert krippendorff_alpha(pairs) == pytest.approx(1 - d_o / d_e, abs=1e-12)
    interval = [(0, 1), (2, 2), (3, 1)]
    # values 0,1,2,2,3,1: n = 6; observed = 2 * (1 + 0 + 4) / 6
    values = [0, 1, 2, 2, 3, 1]
    d_e = sum((a - b) ** 2 for a in values for b in values) / (6 * 5)
    assert krippendorff_alpha(interval, "interval") == pytest.approx(1 - (10 / 6) / d_e, abs=1e-12)
    assert krippendorff_alpha([(1, 1), (2, 2), (3, 3)], "interval") == 1.0
    assert math.isnan(krippendorff_alpha([(1, 1), (1, 1)]))


def test_kappa_per_topic_and_pooled() -> None:
    labels = {("t1", "d1"): (1, 1), ("t1", "d2"): (0, 0), ("t1", "d3"): (1, 0),
              ("t2", "d1"): (1, 1), ("t2", "d2"): (0, 1)}
    mean, pooled = kappa_per_topic_and_pooled(labels)
    # t1: po 2/3, pe (2/3*1/3 + 1/3*2/3) = 4/9 -> (2/3 - 4/9) / (5/9) = 0.4; t2: po 1/2, pe 1/2*1 = 1/2 -> 0
    assert mean == pytest.approx((0.4 + 0.0) / 2, abs=1e-12)
    # pooled: truth 1,0,1,1,0 judge 1,0,0,1,1: po 3/5, pe (3/5*3/5 + 2/5*2/5) = 13/25
    assert pooled == pytest.approx((3 / 5 - 13 / 25) / (1 - 13 / 25), abs=1e-12)
