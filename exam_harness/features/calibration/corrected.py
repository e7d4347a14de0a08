"""Corrected scores (docs/calibration.md, "Corrected scores"): each EXAM-Cover, n-EXAM and nugget F measure of
an exam corrected by the team's labels, by prediction-powered inference (ppi.py).

Each of the three is a function of per-(run, query, test point) answered indicators A (some passage of the
run's top-k answers the test point) and, for n-EXAM, of the pool's P (some passage of the pool does), through
per-(run, query) totals: EXAM-Cover the mean over queries of sum_t A / |bank|; n-EXAM of sum_t A / sum_t P
(a query with no P left out, or 0, as its ``empty`` says); nugget F of the recall sum_t w_t A / sum_t w_t and
the matched count sum_t A over the query's nuggets, against the response's length (measures/nuggets.py). The
judge's indicators give every total (the document's scores, checked to be reproduced); each labelled unit
moves its query's totals by (labels' indicator - judge's) times its weight N_h / n_h (Horvitz–Thompson), and
the corrected score is the measure's function of the corrected totals: for EXAM-Cover the raw score plus the
rectifier exactly, for the others a plug-in whose moves are linearised for the variance. Labelling every unit
gives the labels' own score.

A unit must fix every indicator it moves: a test point fixes every run's (and the pool's) on it, its whole pool
labelled; a pair fixes only the indicators that rest on it alone (a top-k holding that one passage, a pool of
it alone), so a sample of pairs corrects runs of one passage per query (generated answers of one segment, or
k = 1) and says why not otherwise (label with ``--unit test-point``). A unit's largest possible move (every pair
of it answering, or none) scales the variance's small-sample adjustment (estimators.Design.variances).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from exam_harness.features.calibration.estimators import Design, Estimate
from exam_harness.features.calibration.labelfile import Pair, Sample
from exam_harness.features.calibration.ppi import intervals
from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.nuggets import ALLOWANCE_PER_NUGGET
from exam_harness.measures.result import ExamResult

CORRECTED_FAMILIES = ("exam-cover", "n-exam-cover", "nugget-f")
TOLERANCE = 1e-9  # the judge's totals must give the document's scores to within this


@dataclass(frozen=True)
class CorrectedMeasure:
    """One measure's corrected score of every run (``runs``: run -> (raw, corrected)), or why there is none."""

    measure: Measure
    runs: Mapping[str, tuple[float, Estimate]]
    units: int  # labelled units the correction rests on
    missing: str | None = None


def corrected_measures(exam: ScoringInput, result: ExamResult, measures: Sequence[Measure], sample: Sample,
                       labels: Mapping[Pair, bool]) -> tuple[list[CorrectedMeasure], str | None]:
    """Every measure of the three families corrected over ``sample``; the second value says why none could be
    (the sample is of another population), else None."""
    wanted = [m for m in measures if m.family in CORRECTED_FAMILIES and m in result]
    if not wanted:
        return [], None
    pairs_of = unit_pairs(exam, sample.unit)
    problem = population_problem(sample, pairs_of, labels)
    if problem is not None:
        return [], problem
    ctx = ScoringContext(exam)
    units = list(sample.units)
    design = Design.of([sample.units[u][0] for u in units], sample.sizes)
    return [_correct(ctx, result, measure, units, pairs_of, labels, design, sample.unit) for measure in wanted], None


def unit_pairs(exam: ScoringInput, unit: str) -> dict[tuple[str, ...], list[Pair]]:
    """Each unit of the exam's population and its pairs: every pair the exam graded (or could not grade)."""
    points = {t for q in exam.queries for t in exam.test_points.get(q, ())}
    out: dict[tuple[str, ...], list[Pair]] = {}
    for pair in sorted({*exam.grades, *exam.failed}):
        if pair[1] in points:
            out.setdefault(pair if unit == "pair" else (pair[1],), []).append(pair)
    if unit != "pair":
        for t in sorted(points):
            out.setdefault((t,), [])
    return out


def population_problem(sample: Sample, pairs_of: Mapping[tuple[str, ...], Sequence[Pair]],
                       labels: Mapping[Pair, bool]) -> str | None:
    """Why ``sample`` is not a sample of this exam's units (None: it is)."""
    if sample.population != len(pairs_of):
        return (f"the sample {sample.id} was drawn from {sample.population} {sample.unit}s and this exam has "
                f"{len(pairs_of)}: it is a sample of another pool (other runs, banks, k or pool), so it corrects no "
                "score here")
    for unit in sample.units:
        if unit not in pairs_of:
            return (f"the sample {sample.id} holds {'/'.join(unit)}, which this exam does not: it is a sample of "
                    "another pool")
        unlabelled = [p for p in pairs_of[unit] if p not in labels]
        if unlabelled:
            return (f"test point {unit[0]} of the sample {sample.id} lacks the labels of {len(unlabelled)} pairs of "
                    f"its pool here (e.g. passage {unlabelled[0][0]}): the pool changed since it was labelled")
    return None


class _Totals:
    """The per-(run, query) totals of one measure: the covered test points (N), the covered nuggets' weight (R)
    and count (M), per query the pool's covered test points (D); rows: runs, columns: queries."""

    def __init__(self, ctx: ScoringContext, measure: Measure, runs: Sequence[str]) -> None:
        self.ctx, self.measure, self.runs = ctx, measure, list(runs)
        self.queries = list(ctx.queries)
        self.column = {q: i for i, q in enumerate(self.queries)}
        self.k, self.tau = int(getattr(measure, "k")), int(getattr(measure, "min_grade"))
        self.pool_policy = getattr(measure, "pool", None)
        self.weights = {q: ctx.exam.nuggets.get(q, {}) for q in self.queries}
        self.top = ctx.top_k(self.k)
        self.pools = ctx.pool(str(self.pool_policy), self.k) if self.pool_policy is not None else {}
        shape = (len(self.runs), len(self.queries))
        self.n, self.r, self.m = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        self.d = np.zeros(len(self.queries))
        for j, q in enumerate(self.queries):
            weights = self.weights[q]
            for i, run in enumerate(self.runs):
                covered = ctx.covered(run, q, self.k, self.tau)
                self.n[i, j] = len(covered)
                self.r[i, j] = math.fsum(weights[t] for t in covered if t in weights)
                self.m[i, j] = sum(1 for t in covered if t in weights)
            if self.pool_policy is not None:
                self.d[j] = len(ctx.overall(self.tau, str(self.pool_policy), self.k)[q])
        lengths = ctx.response_lengths(self.k) if measure.family == "nugget-f" else {}
        self.lengths = np.asarray([[lengths.get(run, {}).get(q, 0) for q in self.queries] for run in self.runs],
                                  dtype=float) if lengths else np.zeros(shape)

    def scores(self, n: np.ndarray, r: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Each run's mean over queries of the measure's per-query value at these totals."""
        family, out = self.measure.family, []
        sizes = np.asarray([len(self.ctx.bank(q)) for q in self.queries], dtype=float)
        for i in range(len(self.runs)):
            if family == "exam-cover":
                values = [n[i, j] / sizes[j] for j in range(len(self.queries)) if sizes[j]]
            elif family == "n-exam-cover":
                zero = getattr(self.measure, "empty", None) == "zero"
                values = [n[i, j] / d[j] if d[j] > TOLERANCE else 0.0 for j in range(len(self.queries))
                          if d[j] > TOLERANCE or zero]
            else:
                values = [self._nugget_f(j, r[i, j], m[i, j], self.lengths[i, j])
                          for j, q in enumerate(self.queries) if self.weights[q]]
            out.append(float(np.mean(values)) if values else 0.0)
        return np.asarray(out)

    def _nugget_f(self, j: int, weight: float, matched: float, length: float) -> float:
        total = math.fsum(self.weights[self.queries[j]].values())
        recall = weight / total if total > 0 else 0.0
        allowance = ALLOWANCE_PER_NUGGET * matched
        precision = 1.0 if length <= allowance else 1.0 - (length - allowance) / length
        b2 = float(getattr(self.measure, "beta")) ** 2
        denominator = b2 * precision + recall
        return (b2 + 1.0) * precision * recall / denominator if denominator > 0 else 0.0

    def moves(self, query: str, test_point: str, fixed: Callable[[str], bool | None]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """How the totals move when the indicators on ``test_point`` are read from ``fixed`` (a passage's label,
        None where the unit does not fix the pair) instead of the judge's grades, for the indicators the unit
        fixes whole."""
        j = self.column[query]
        shape = (len(self.runs), len(self.queries))
        dn, dr, dm, dd = np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(len(self.queries))
        weight = self.weights[query].get(test_point)
        passages = dict.fromkeys([*self.pools.get(query, ()), *(p for run in self.runs for p in self.top[run][query])])
        coverage = self.ctx.coverage(query, self.tau, list(passages))

        def indicator(passages: Sequence[str]) -> tuple[float, float] | None:
            labels = [fixed(p) for p in passages]
            if not passages or any(label is None for label in labels):
                return None  # an indicator the unit does not fix whole
            judged = any(test_point in coverage.get(p, frozenset()) for p in passages)
            return float(any(labels)), float(judged)

        for i, run in enumerate(self.runs):
            found = indicator(self.top[run][query])
            if found is not None:
                dn[i, j] = found[0] - found[1]
                if weight is not None:
                    dr[i, j], dm[i, j] = weight * dn[i, j], dn[i, j]
        if self.pool_policy is not None:
            found = indicator(self.pools.get(query, []))
            if found is not None:
                dd[j] = found[0] - found[1]
        return dn, dr, dm, dd


def _not_fixed(totals: _Totals) -> str | None:
    """Why a sample of pairs cannot correct this measure (an indicator rests on several passages), else None."""
    several = any(len(top[q]) > 1 for top in totals.top.values() for q in totals.queries)
    if not several and totals.pool_policy is not None:
        several = any(len(passages) > 1 for passages in totals.pools.values())
    if not several:
        return None
    return ("the labels are a sample of pairs, and a run's answered indicator here rests on several passages per test "
            f"point ({'the pool' if totals.pool_policy is not None else 'its top-k'}); label whole test points "
            "(exam-harness label --unit test-point) to correct it")


def _correct(ctx: ScoringContext, result: ExamResult, measure: Measure, units: Sequence[tuple[str, ...]],
             pairs_of: Mapping[tuple[str, ...], Sequence[Pair]], labels: Mapping[Pair, bool], design: Design,
             unit: str) -> CorrectedMeasure:
    found = result[measure]
    runs = list(found.scores)
    raw = np.asarray([found.scores[run].mean for run in runs])
    totals = _Totals(ctx, measure, runs)
    base = (totals.n, totals.r, totals.m, totals.d)
    judged = totals.scores(*base)
    if not np.allclose(judged, raw, atol=TOLERANCE, rtol=0):
        return CorrectedMeasure(measure, {}, len(units), "its raw scores could not be reproduced from the judge's "
                                "answered indicators (a measure of another definition?)")
    if unit == "pair":
        why = _not_fixed(totals)
        if why is not None:
            return CorrectedMeasure(measure, {}, len(units), why)
    query_of = {t: q for q in ctx.queries for t in ctx.bank(q)}
    weights = design.weights
    moves, extremes = [], []
    for unit_id in units:
        pairs = pairs_of[unit_id]
        test_point = pairs[0][1] if pairs else unit_id[-1]
        query = query_of[test_point]
        members = {p for p, _ in pairs}

        def fixed(value: Callable[[str], bool]) -> Callable[[str], bool | None]:
            return lambda passage: value(passage) if passage in members else None

        moves.append(totals.moves(query, test_point, fixed(lambda p, t=test_point: labels[(p, t)])))
        extremes.append((totals.moves(query, test_point, fixed(lambda _p: True)),
                         totals.moves(query, test_point, fixed(lambda _p: False))))
    corrected = [b + sum(w * move[c] for w, move in zip(weights, moves)) for c, b in enumerate(base)]
    values = totals.scores(*corrected)

    def influence(move: tuple[np.ndarray, ...]) -> np.ndarray:
        step = 1e-4
        up = totals.scores(*(c + step * d for c, d in zip(corrected, move)))
        down = totals.scores(*(c - step * d for c, d in zip(corrected, move)))
        return (up - down) / (2 * step)

    influences = np.asarray([influence(move) for move in moves]).reshape(len(units), len(runs))
    scale = np.asarray([np.maximum(np.abs(influence(up)), np.abs(influence(down))) for up, down in extremes]
                       ).reshape(len(units), len(runs))
    estimates = intervals(values, influences, scale, design)
    return CorrectedMeasure(measure, {run: (float(r), e) for run, r, e in zip(runs, raw, estimates)}, len(units))
