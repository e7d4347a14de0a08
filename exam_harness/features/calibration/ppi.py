"""Prediction-powered inference of a score (docs/calibration.md, "Corrected scores"): the judge's score over
every pair, plus a rectifier estimated from the labelled units (Angelopoulos et al. 2023, with the sample's
weights). Pure numpy: no file, no grader.

For each labelled unit u, ``delta[u, r]`` is how much run r's score moves when the judge's answered indicators
on u are replaced by the labels'. The rectifier of run r is the Horvitz–Thompson total of those moves, sum over
labelled u of (N_h / n_h) delta[u, r], an unbiased estimate of the move over every unit where the score is
linear in the indicators (EXAM-Cover: a mean of per-(run, query, test point) answered indicators). The corrected
score is the raw score plus the rectifier (:func:`rectified`); a score that is a smooth function of per-query
totals (n-EXAM's ratio, nugget F) is that function of the corrected totals, its moves linearised
(:func:`intervals`; corrected.py). The interval is estimate ± t(df) standard errors of the stratified variance
of the moves (estimators.py), cut to the score's range. Each stratum's variance is taken
with one pseudo-unit, half at each end of the moves a unit could make (Design.variances): moves are mostly 0
(the judge agrees with the labels) and a stratum whose few labelled units show none would otherwise read as
certain. A simulation (tests/features/calibration/test_ppi.py: 40 test points, 8 runs, a judge missing 30% or
10% of the answers) shows coverage of 24-91% without it and 96-100% with it at 8-30 labelled test points; on the
heat pump bank's EXAM-Cover@1 (benchmarks/calibration.py) half a pseudo-unit left 100 labelled pairs at 91%,
one gives 94%.
"""

from __future__ import annotations

import math

import numpy as np

from exam_harness.features.calibration.estimators import CONFIDENCE, Design, Estimate, t_quantile


def rectified(raw: np.ndarray, deltas: np.ndarray, scale: np.ndarray, design: Design, *,
              bounds: tuple[float, float] = (0.0, 1.0), confidence: float = CONFIDENCE) -> list[Estimate]:
    """Per run (the columns of ``deltas``, one row per labelled unit of ``design``): the corrected score
    ``raw`` + the weighted total of the moves, and its interval; ``raw`` the judge's scores, ``scale`` the
    largest move each labelled unit could make on each run's score (the variance's small-sample adjustment:
    Design.variances)."""
    raw = np.asarray(raw, dtype=float)
    deltas = np.asarray(deltas, dtype=float).reshape(design.n, len(raw))
    return intervals(raw + design.total(deltas), deltas, scale, design, bounds=bounds, confidence=confidence)


def intervals(values: np.ndarray, influences: np.ndarray, scale: np.ndarray, design: Design, *,
              bounds: tuple[float, float] = (0.0, 1.0), confidence: float = CONFIDENCE,
              floor: np.ndarray | None = None) -> list[Estimate]:
    """Per column: ``values`` (the corrected scores) ± t(df) standard errors of the weighted total of the
    labelled units' ``influences`` (their linearised moves; the moves themselves for a linear score); ``floor``
    the mean of ``scale`` over the population (Design.variances)."""
    values = np.asarray(values, dtype=float)
    influences = np.asarray(influences, dtype=float).reshape(design.n, len(values))
    variances = design.variances(influences, np.asarray(scale, dtype=float).reshape(influences.shape), floor=floor)
    ses = np.sqrt(np.maximum(variances, 0.0))
    half = t_quantile(design.df, confidence) * ses
    out = []
    for value, se, width in zip(values, ses, half):
        if not math.isfinite(value):
            out.append(Estimate(None))
            continue
        point = min(max(float(value), bounds[0]), bounds[1])
        out.append(Estimate(point, max(bounds[0], float(value - width)), min(bounds[1], float(value + width)),
                            float(se)))
    return out
