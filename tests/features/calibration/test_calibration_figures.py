"""A judge's figures against labels drawn as a stratified sample (features/calibration/judges.py and
estimators.py): the weighted estimates, and their 95% intervals checked against the truth over seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from exam_harness.analysis.label_design import sample_order
from exam_harness.features.calibration.estimators import Design, clopper_pearson, proportion
from exam_harness.features.calibration.judges import judge_figures, verdict_kappa

FIGURES = ("base_rate", "tpr", "tnr", "precision", "kappa")


def _population(seed: int = 5, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A judge's 0..5 grades (most pairs low), labels whose share grows with the grade, verdicts grade >= 4."""
    rng = np.random.default_rng(seed)
    grade = rng.choice(6, n, p=[0.55, 0.15, 0.08, 0.07, 0.05, 0.10])
    labels = rng.random(n) < np.array([0.03, 0.08, 0.2, 0.45, 0.8, 0.9])[grade]
    return grade, labels, grade >= 4


def _truth(labels: np.ndarray, verdicts: np.ndarray) -> dict[str, float]:
    y, v = labels, verdicts
    observed = float(np.mean(y == v))
    expected = float(y.mean() * v.mean() + (1 - y.mean()) * (1 - v.mean()))
    return {"base_rate": float(y.mean()), "tpr": float((y & v).sum() / y.sum()),
            "tnr": float((~y & ~v).sum() / (~y).sum()), "precision": float((y & v).sum() / v.sum()),
            "kappa": (observed - expected) / (1 - expected)}


def _draw(grade: np.ndarray, size: int, seed: int) -> tuple[np.ndarray, Design]:
    strata: dict[tuple[str, ...], str] = {(str(i),): f"grade {g}" for i, g in enumerate(grade)}
    sizes = {name: int(np.sum(grade == int(name.split()[1]))) for name in set(strata.values())}
    order = sample_order(strata, seed)[:size]
    return np.asarray([int(u[0]) for u in order]), Design.of([strata[u] for u in order], sizes)


def test_a_census_of_the_population_gives_the_truth_with_no_spread() -> None:
    grade, labels, verdicts = _population(n=300)
    index, design = _draw(grade, 300, 0)
    found = judge_figures(labels[index], verdicts[index], np.arange(len(index)), design)
    for name, value in _truth(labels, verdicts).items():
        estimate = getattr(found, name)
        assert estimate.value == pytest.approx(value) and estimate.low == pytest.approx(value)


def test_the_weights_undo_the_oversampling_of_rare_grades() -> None:
    grade, labels, verdicts = _population()
    index, design = _draw(grade, 200, 1)
    found = judge_figures(labels[index], verdicts[index], np.arange(len(index)), design)
    truth = _truth(labels, verdicts)
    plain = float(labels[index].mean())  # the sample's own share: grade 4-5 pairs are oversampled
    assert abs(plain - truth["base_rate"]) > 0.1
    assert found.base_rate.low is not None and found.base_rate.high is not None
    assert found.base_rate.low <= truth["base_rate"] <= found.base_rate.high


@pytest.mark.slow
@pytest.mark.parametrize("size", [60, 200])
def test_the_intervals_cover_the_truth_at_least_93_percent_of_the_time(size: int) -> None:
    grade, labels, verdicts = _population()
    truth = _truth(labels, verdicts)
    covered = dict.fromkeys(FIGURES, 0)
    seeds = 300
    for seed in range(seeds):
        index, design = _draw(grade, size, seed)
        found = judge_figures(labels[index], verdicts[index], np.arange(len(index)), design)
        for name in FIGURES:
            estimate = getattr(found, name)
            assert estimate.low is not None and estimate.high is not None
            covered[name] += estimate.low - 1e-12 <= truth[name] <= estimate.high + 1e-12
    shares = {name: count / seeds for name, count in covered.items()}
    assert all(share >= 0.93 for share in shares.values()), shares


def test_a_share_of_one_reads_an_interval_not_a_point() -> None:
    design = Design.of(["a"] * 12, {"a": 100})
    found = proportion(np.ones(12), np.ones(12), design)
    assert found.value == 1.0 and found.high == 1.0
    assert found.low is not None and found.low == pytest.approx(clopper_pearson(12, 12)[0], abs=0.05)


def test_labels_that_are_no_sample_weigh_one_each() -> None:
    design = Design.of(["census"] * 4, None)
    found = judge_figures(np.array([True, False, True, False]), np.array([True, True, False, False]),
                          np.arange(4), design)
    assert found.precision.value == 0.5 and found.tpr.value == 0.5 and found.kappa.value == pytest.approx(0.0)
    assert found.precision.low is not None and found.precision.low < 0.5


def test_a_domain_restricts_every_figure_to_its_pairs() -> None:
    labels = np.array([True, True, False, False, True, False])
    verdicts = np.array([True, False, False, True, True, False])
    design = Design.of(["s"] * 6, {"s": 6})
    first = judge_figures(labels, verdicts, np.arange(6), design, domain=np.array([1, 1, 1, 1, 0, 0], bool))
    assert first.pairs == 4 and first.tpr.value == 0.5 and first.tnr.value == 0.5


def test_the_kappa_between_two_judges_counts_every_pair() -> None:
    a = np.array([1, 1, 0, 0])
    assert verdict_kappa(a, a) == pytest.approx(1.0)
    assert verdict_kappa(a, np.array([1, 0, 1, 0])) == pytest.approx(0.0)
    assert verdict_kappa(np.array([]), np.array([])) is None
    assert math.isclose(verdict_kappa(a, 1 - a) or 0.0, -1.0)
