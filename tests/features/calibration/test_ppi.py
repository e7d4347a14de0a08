"""Prediction-powered correction of a score (features/calibration/ppi.py) over stratified samples of labelled
test points, checked against the truth over many seeds: the 95% interval covers it at least 93% of the time,
and a biased judge's raw score misses it where the corrected interval covers it."""

from __future__ import annotations

import numpy as np
import pytest

from exam_harness.analysis.label_design import sample_order
from exam_harness.features.calibration.estimators import Design
from exam_harness.features.calibration.ppi import rectified

RUNS = 8


def _exam(seed: int, *, test_points: int = 40, queries: int = 7, misses: float = 0.3,
          false_passes: float = 0.08) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Answered indicators of 8 runs on each test point, by the truth and by a judge that misses ``misses`` of
    the answers and passes ``false_passes`` of the others; each test point's weight in EXAM-Cover."""
    rng = np.random.default_rng(seed)
    query_of = np.sort(np.concatenate([np.arange(queries), rng.integers(0, queries, test_points - queries)]))
    truth = rng.random((test_points, RUNS)) < np.linspace(0.2, 0.8, RUNS)
    flips = np.where(truth, rng.random(truth.shape) < misses, rng.random(truth.shape) < false_passes)
    judge = truth ^ flips
    weight = 1.0 / (np.bincount(query_of)[query_of] * queries)  # the mean over queries of covered shares
    return truth.astype(float), judge.astype(float), weight


def _strata(judge: np.ndarray) -> dict[tuple[str, ...], str]:
    """A test point's stratum: how many runs the judge says answer it."""
    names = {0: "none", 1: "few", 2: "few", 3: "some", 4: "some", 5: "some"}
    return {(str(t),): names.get(int(row.sum()), "most") for t, row in enumerate(judge)}


def _corrected(truth: np.ndarray, judge: np.ndarray, weight: np.ndarray, labelled: int, seed: int,
               pseudo: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    strata = _strata(judge)
    sizes = {name: sum(1 for s in strata.values() if s == name) for name in set(strata.values())}
    order = sample_order(strata, seed)[:labelled]
    index = np.asarray([int(u[0]) for u in order])
    design = Design.of([strata[u] for u in order], sizes)
    deltas = (truth[index] - judge[index]) * weight[index, None]
    scale = np.repeat(weight[index, None], RUNS, axis=1)  # a test point moves a run's score by its weight at most
    raw = judge.T @ weight
    if pseudo is not None:  # the variance without (pseudo=0) or with another small-sample adjustment
        variance = design.variances(deltas, scale, pseudo)
        from exam_harness.features.calibration.estimators import t_quantile

        value = raw + design.total(deltas)
        half = t_quantile(design.df) * np.sqrt(variance)
        return value, value - half, value + half
    found = rectified(raw, deltas, scale, design)
    return (np.asarray([e.value for e in found]), np.asarray([e.low for e in found]),
            np.asarray([e.high for e in found]))


def _coverage(labelled: int, seeds: int, pseudo: float | None = None, *, misses: float = 0.3,
              false_passes: float = 0.08) -> float:
    covered = total = 0
    for exam in range(6):
        truth, answers, weight = _exam(100 + exam, misses=misses, false_passes=false_passes)
        target = truth.T @ weight
        for seed in range(seeds):
            _, low, high = _corrected(truth, answers, weight, labelled, seed, pseudo)
            covered += int(np.sum((low - 1e-12 <= target) & (target <= high + 1e-12)))
            total += RUNS
    return covered / total


@pytest.mark.parametrize("labelled", [8, 20, 30])
def test_the_corrected_interval_covers_the_truth_at_least_93_percent_of_the_time(labelled: int) -> None:
    assert _coverage(labelled, 60) >= 0.93
    assert _coverage(labelled, 60, misses=0.1, false_passes=0.02) >= 0.93  # a judge of rare errors


def test_without_the_small_sample_adjustment_the_interval_covers_too_rarely() -> None:
    # why the variance takes a pseudo-unit, half at each end (estimators.Design.variances)
    assert _coverage(20, 60, pseudo=0.0, misses=0.1, false_passes=0.02) < 0.85


def test_labelling_every_test_point_gives_the_truth() -> None:
    truth, judge, weight = _exam(7)
    value, low, high = _corrected(truth, judge, weight, 40, 0)
    assert value == pytest.approx(truth.T @ weight) and low == pytest.approx(value) and high == pytest.approx(value)


def test_a_biased_judge_misses_the_truth_where_the_corrected_interval_covers_it() -> None:
    truth, judge, weight = _exam(11, misses=0.45, false_passes=0.0)  # misses almost half of the answers
    target, raw = truth.T @ weight, judge.T @ weight
    assert np.all(target - raw > 0.05)  # every run's raw score is far below its truth
    caught = covers = 0
    for seed in range(200):
        _value, low, high = _corrected(truth, judge, weight, 20, seed)
        covers += int(np.sum((low <= target) & (target <= high)))
        caught += int(np.sum(raw < low))  # the interval also says the raw score is too low
    assert covers / (200 * RUNS) >= 0.93 and caught / (200 * RUNS) >= 0.6
