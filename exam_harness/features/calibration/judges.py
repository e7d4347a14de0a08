"""A judge's verdicts (grade >= its minimum grade) against a team's labels, estimated over the population the
labels were drawn from (docs/calibration.md, "The calibration report"). Pure numpy: no file, no grader.

Each labelled pair gives five values: the label y, the verdict v, y·v, (1-y)(1-v) and 1. A unit's values are
its pairs' sums (a pair is its own unit, a test point the sum of its pairs), and the figures are functions of
the weighted totals T (estimators.py):

- base rate  T_y / T_1           TPR (recall)  T_yv / T_y          TNR  T_nn / (T_1 - T_y)
- precision  T_yv / T_v          Cohen's kappa (p_o - p_e) / (1 - p_e), p_o = (T_yv + T_nn) / T_1 and
  p_e = p_y p_v + (1 - p_y)(1 - p_v) with p_y = T_y / T_1, p_v = T_v / T_1.

A domain (a ``kind``, a stratum) restricts every sum to its pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from exam_harness.features.calibration.estimators import (
    UNDEFINED,
    Design,
    Estimate,
    bounded,
    clopper_pearson,
    kish,
    linearised,
    proportion,
)


@dataclass(frozen=True)
class JudgeFigures:
    """A judge against the labels: over how many labelled pairs, and the five figures with their intervals."""

    pairs: int
    base_rate: Estimate
    tpr: Estimate
    tnr: Estimate
    precision: Estimate
    kappa: Estimate


def unit_sums(values: np.ndarray, unit_of_pair: np.ndarray, units: int) -> np.ndarray:
    """Per unit, the sum of its pairs' rows of ``values``."""
    out = np.zeros((units, values.shape[1]))
    np.add.at(out, unit_of_pair, values)
    return out


def _kappa(t: np.ndarray) -> float:
    t_y, t_v, t_yv, t_nn, t_1 = t
    if t_1 <= 0:
        return math.nan
    p_y, p_v = t_y / t_1, t_v / t_1
    expected = p_y * p_v + (1 - p_y) * (1 - p_v)
    if abs(1 - expected) < 1e-12:
        return math.nan
    return float(((t_yv + t_nn) / t_1 - expected) / (1 - expected))


def judge_figures(labels: np.ndarray, verdicts: np.ndarray, unit_of_pair: np.ndarray, design: Design,
                  domain: np.ndarray | None = None) -> JudgeFigures:
    """The figures of one judge: ``labels`` and ``verdicts`` per labelled pair (booleans), ``unit_of_pair`` the
    row of each pair's unit in ``design``; ``domain`` (a mask of pairs) restricts them to some pairs."""
    y = np.asarray(labels, dtype=float)
    v = np.asarray(verdicts, dtype=float)
    keep = np.ones(len(y)) if domain is None else np.asarray(domain, dtype=float)
    pairs = np.column_stack([y, v, y * v, (1 - y) * (1 - v), np.ones(len(y))]) * keep[:, None]
    unit_of = np.asarray(unit_of_pair, dtype=int)
    x = unit_sums(pairs, unit_of, design.n)
    pseudo = pseudo_pairs(v, keep, design.strata[unit_of] if len(unit_of) else unit_of)
    t_y, t_v, t_yv, t_nn, t_1 = (x[:, i] for i in range(5))

    def part(a: int, b: int | None) -> dict[int, np.ndarray]:
        """The pseudo pairs' (numerator, denominator) columns: b None is T_1 - T_y (TNR's denominator)."""
        return {h: np.column_stack([rows[:, a], rows[:, 4] - rows[:, 0] if b is None else rows[:, b]])
                for h, rows in pseudo.items()}

    return JudgeFigures(
        pairs=int(keep.sum()),
        base_rate=proportion(t_y, t_1, design, pseudo_rows=part(0, 4)),
        tpr=proportion(t_yv, t_y, design, pseudo_rows=part(2, 0)),
        tnr=proportion(t_nn, t_1 - t_y, design, pseudo_rows=part(3, None)),
        precision=proportion(t_yv, t_v, design, pseudo_rows=part(2, 1)),
        kappa=kappa(x, design, pseudo),
    )


def pseudo_pairs(verdicts: np.ndarray, keep: np.ndarray, stratum_of_pair: np.ndarray) -> dict[int, np.ndarray]:
    """Per stratum holding pairs of the domain, two pseudo pairs of its mean verdict, one answering and one not
    (their five values): the variances take them (Design.covariance), so that a stratum whose few labels are all
    alike is not read as one of no spread, in the manner of the Agresti–Coull interval's added successes and
    failures."""
    out: dict[int, np.ndarray] = {}
    for h in np.unique(stratum_of_pair[keep > 0]) if len(stratum_of_pair) else []:
        mine = (stratum_of_pair == h) & (keep > 0)
        v = float(np.mean(verdicts[mine]))
        out[int(h)] = np.asarray([[1.0, v, v, 0.0, 1.0], [0.0, v, 0.0, 1.0 - v, 1.0]])
    return out


def kappa(x: np.ndarray, design: Design, pseudo: dict[int, np.ndarray] | None = None) -> Estimate:
    """Cohen's kappa of the units' five sums ``x`` with its interval (estimators.bounded). Where the judge and the
    labels agree on every labelled pair the linearised error is 0; the interval is then read from the
    Clopper–Pearson interval of the observed agreement at Kish's effective size, p_e held at its estimate."""
    if not np.any(x[:, 4] > 0):
        return UNDEFINED
    value, se = linearised(_kappa, x, design, pseudo)
    found = bounded(value, se, design.df)
    if found.value is None or found.low is not None or design.exhausted(x[:, 4] > 0):
        return found if found.low is not None or found.value is None else Estimate(value, value, value, 0.0)
    t_y, t_v, t_yv, t_nn, t_1 = design.total(x)
    p_y, p_v = t_y / t_1, t_v / t_1
    expected = p_y * p_v + (1 - p_y) * (1 - p_v)
    size = kish(design.weights[x[:, 4] > 0] * x[x[:, 4] > 0, 4])
    low, high = clopper_pearson((t_yv + t_nn) / t_1 * size, size)
    return Estimate(value, max(-1.0, (low - expected) / (1 - expected)), min(1.0, (high - expected) / (1 - expected)),
                    se)


def verdict_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cohen's kappa of two judges' verdicts over the same pairs (every pair counted once: no sample)."""
    if not len(a):
        return None
    x = np.column_stack([a, b, a * b, (1 - a) * (1 - b), np.ones(len(a))]).astype(float)
    value = _kappa(x.sum(axis=0))
    return None if math.isnan(value) else value
