"""Fitting the default grader's support model on human judgments, held out over folds of queries.

The embedding grader stores, per (passage, test point), the signals it read (span, passage, word and
query signals, :mod:`exam_harness.graders.support`) in its reason. A judgment is per (query, passage), and a
passage's label is its best grade over the query's test points, so the model is fit as a
multiple-instance problem: each judged passage is represented by its best-supported test point
(first by span cosine, then by the model of the previous round), a logistic regression is fit on those
against "judged >= relevance level", and the choice is made again, for ``ROUNDS`` rounds. The cut point
of the minimum grade is then the support of highest Cohen's kappa on the same passages; the other cut
points lie one logit apart around it.

Held out: the queries are dealt into folds (:func:`~exam_harness.analysis.calibration.query_folds`); per
fold, model and cut point are fit on the other folds and kappa is measured on the fold (mean ± sd over
folds), as ``exam-harness calibrate`` does for thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from exam_harness.analysis.calibration import Key, Pair, Sample, Spread, choose_threshold, kappa_at
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.graders.embedding import ANSWER_KEY_DECIDED
from exam_harness.graders.support import QUESTION_SIGNALS, Signals, SupportModel, fit_logistic, signals_of_reason

ROUNDS = 3
LOGIT_SPACING = 1.0  # between successive cut points, on the logit scale
SUPPORT_GRID = tuple(round(0.02 + 0.01 * i, 2) for i in range(97))  # 0.02..0.98


def stored_signals(answers: Mapping[Pair, str | None]) -> dict[Pair, Signals]:
    """(passage, test point) -> the signals read back from the embedding grader's stored reasons. A grade
    the answer key decided keeps its signals too (they are in its reason)."""
    out: dict[Pair, Signals] = {}
    for pair, raw in answers.items():
        if raw is None:
            continue
        found = signals_of_reason(raw)
        if found is None:
            raise InputError(
                f"the stored answer of passage {pair[0]!r} on test point {pair[1]!r} holds no support signals",
                field="raw_response", value=raw[:80],
                expected="a reason of the embedding grader, version 4 ('support 0.41 (span 0.52, ...)')")
        out[pair] = found[1]
    return out


def answer_key_pairs(answers: Mapping[Pair, str | None]) -> set[Pair]:
    return {pair for pair, raw in answers.items() if raw is not None and raw.startswith(ANSWER_KEY_DECIDED)}


@dataclass(frozen=True)
class Instances:
    """Judged passages, each with the signal matrix of its test points."""

    keys: list[Key]
    matrices: list[np.ndarray]  # one (test points x signals) matrix per key
    relevant: np.ndarray
    names: tuple[str, ...] = QUESTION_SIGNALS  # the signals, the matrices' columns

    @classmethod
    def of(cls, signals: Mapping[Pair, Signals], test_points: Mapping[str, Sequence[str]],
           judgments: Mapping[str, Mapping[str, int]], relevance_level: int,
           names: Sequence[str] = QUESTION_SIGNALS) -> Instances:
        keys, matrices, relevant = [], [], []
        for qid in sorted(judgments):
            for pid, level in sorted(judgments[qid].items()):
                rows = [signals[(pid, t)].vector(names) for t in test_points.get(qid, ()) if (pid, t) in signals]
                if rows:
                    keys.append((qid, pid))
                    matrices.append(np.asarray(rows, dtype=float))
                    relevant.append(level >= relevance_level)
        if not keys:
            raise ConfigError("no judged passage has support signals: the judgments and the graded pool share no "
                              "(query, passage)")
        return cls(keys, matrices, np.asarray(relevant, dtype=bool), tuple(names))

    def subset(self, mask: np.ndarray) -> Instances:
        idx = np.flatnonzero(mask)
        return Instances([self.keys[i] for i in idx], [self.matrices[i] for i in idx], self.relevant[idx], self.names)

    def queries(self) -> np.ndarray:
        return np.asarray([q for q, _ in self.keys], dtype=object)


def fit_weights(data: Instances) -> tuple[list[float], float]:
    """The multiple-instance logistic regression of the module docstring: (weights, intercept)."""
    if data.relevant.all() or not data.relevant.any():
        raise ConfigError("the support model cannot be fit: the judged passages are all relevant or all not relevant")
    chosen = [m[int(np.argmax(m[:, 0]))] for m in data.matrices]
    weights, intercept = fit_logistic(chosen, data.relevant.tolist())
    for _ in range(ROUNDS - 1):
        w = np.asarray(weights)
        chosen = [m[int(np.argmax(m @ w))] for m in data.matrices]
        weights, intercept = fit_logistic(chosen, data.relevant.tolist())
    return weights, intercept


def supports(data: Instances, weights: Sequence[float], intercept: float) -> np.ndarray:
    """Each passage's best support over its test points."""
    w = np.asarray(weights)
    z = np.asarray([float(np.max(m @ w)) for m in data.matrices]) + intercept
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))))


def cut_points_around(threshold: float, min_grade: int) -> list[float]:
    """Cut points of grades 1..5: ``threshold`` for ``min_grade``, the others ``LOGIT_SPACING`` apart in logits."""
    logit = math.log(threshold / (1 - threshold))
    return [round(1 / (1 + math.exp(-(logit + (g - min_grade) * LOGIT_SPACING))), 6) for g in range(1, 6)]


@dataclass(frozen=True)
class SupportFit:
    """A fitted support model with its in-sample and held-out kappa."""

    weights: list[float]
    intercept: float
    threshold: float
    in_sample_kappa: float
    held_out: Spread
    fold_kappas: list[float | None]
    passages: int
    queries: int
    names: tuple[str, ...] = QUESTION_SIGNALS

    def model(self, fitted_on: str, min_grade: int, answer_key_floor: float) -> SupportModel:
        held = self.held_out
        return SupportModel(
            signals=self.names, weights=tuple(round(w, 6) for w in self.weights), intercept=round(self.intercept, 6),
            cut_points=tuple(cut_points_around(self.threshold, min_grade)), fitted_on=fitted_on,
            answer_key_floor=answer_key_floor,
            notes={"passages": self.passages, "queries": self.queries, "min_grade": min_grade,
                   "in_sample_kappa": round(self.in_sample_kappa, 4),
                   "held_out_kappa": None if held.mean is None else round(held.mean, 4),
                   "held_out_kappa_sd": None if held.sd is None else round(held.sd, 4)})


def fit_threshold(data: Instances) -> tuple[list[float], float, float, float]:
    """(weights, intercept, support threshold, in-sample kappa) fit on ``data``."""
    weights, intercept = fit_weights(data)
    sample = Sample(supports(data, weights, intercept), data.relevant, data.queries())
    threshold, kappa = choose_threshold(sample, SUPPORT_GRID)
    return weights, intercept, float(threshold), kappa


def fit_support(data: Instances, folds: Sequence[Sequence[str]]) -> SupportFit:
    """The support model fit on every passage, and its kappa held out over ``folds``."""
    weights, intercept, threshold, kappa = fit_threshold(data)
    queries = data.queries()
    per_fold: list[float | None] = []
    for fold in folds:
        held = np.isin(queries, list(fold))
        w, b, t, _ = fit_threshold(data.subset(~held))
        test = data.subset(held)
        k = kappa_at(Sample(supports(test, w, b), test.relevant, test.queries()), t)
        per_fold.append(k if math.isfinite(k) else None)
    return SupportFit(weights, intercept, threshold, kappa, Spread.of(per_fold), per_fold, len(data.keys),
                      len(set(queries.tolist())), data.names)
