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
k = 1) and says why not otherwise (label with ``--unit test-point``). The most a unit could move a run's
score (each answered indicator it fixes flipped, to first order) scales the variance's small-sample adjustment
(estimators.Design.variances).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from exam_harness.analysis.label_file import Pair, Sample
from exam_harness.features.calibration.estimators import Design, Estimate
from exam_harness.features.calibration.ppi import intervals
from exam_harness.measures.base import Measure, bound
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.nuggets import ALLOWANCE_PER_NUGGET
from exam_harness.measures.result import ExamResult

CORRECTED_FAMILIES = ("exam-cover", "n-exam-cover", "nugget-f")
Moves = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # of N, R, M (runs x queries) and D (queries)
TOLERANCE = 1e-9  # the judge's totals must give the document's scores to within this
FLOOR_UNITS = 400  # units of the population whose largest moves floor the variance's adjustment (at most)


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
    if sample.unreached:
        return (f"{sample.unreached} of the {sample.population} {sample.unit}s of sample {sample.id} are in strata no "
                "labelled unit is in yet, so their errors could not be corrected: label more (the sample reaches "
                "every stratum within its first few units)")
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
        self.k, self.tau = int(bound(measure, "k")), int(bound(measure, "min_grade"))
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
        family = self.measure.family
        if family == "exam-cover":
            sizes = np.asarray([len(self.ctx.bank(q)) for q in self.queries], dtype=float)
            kept = sizes > 0
            values = n[:, kept] / sizes[kept]
        elif family == "n-exam-cover":
            covered = d > TOLERANCE
            kept = covered | (getattr(self.measure, "empty", None) == "zero")
            values = np.where(covered, n / np.where(covered, d, 1.0), 0.0)[:, kept]
        else:
            kept = np.asarray([bool(self.weights[q]) for q in self.queries])
            totals = np.asarray([math.fsum(self.weights[q].values()) for q in self.queries])
            recall = np.where(totals > 0, r / np.where(totals > 0, totals, 1.0), 0.0)
            allowance = ALLOWANCE_PER_NUGGET * m
            length = self.lengths
            precision = np.where(length <= allowance, 1.0, 1.0 - (length - allowance) / np.where(length > 0, length, 1))
            b2 = float(bound(self.measure, "beta")) ** 2
            denominator = b2 * precision + recall
            f = np.where(denominator > 0, (b2 + 1.0) * precision * recall / np.where(denominator > 0, denominator, 1),
                         0.0)
            values = f[:, kept]
        if values.shape[1] == 0:
            return np.zeros(len(self.runs))
        return np.asarray(values.mean(axis=1), dtype=float)

    def moves(self, query: str, test_point: str, fixed: Callable[[str], bool | None]) -> tuple[Moves, Moves]:
        """How the totals move when the indicators on ``test_point`` are read from ``fixed`` (a passage's label,
        None where the unit does not fix the pair) instead of the judge's grades, for the indicators the unit
        fixes whole; and the most each total could move (1 per indicator fixed, a nugget's weight for R)."""
        j = self.column[query]
        shape = (len(self.runs), len(self.queries))
        move: Moves = (np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(len(self.queries)))
        most: Moves = (np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(len(self.queries)))
        weight = self.weights[query].get(test_point)
        passages = dict.fromkeys([*self.pools.get(query, ()), *(p for run in self.runs for p in self.top[run][query])])
        coverage = self.ctx.coverage(query, self.tau, list(passages))

        def indicator(ranked: Sequence[str]) -> tuple[float, float] | None:
            labels = [fixed(p) for p in ranked]
            if not ranked or any(label is None for label in labels):
                return None  # an indicator the unit does not fix whole
            judged = any(test_point in coverage.get(p, frozenset()) for p in ranked)
            return float(any(labels)), float(judged)

        for i, run in enumerate(self.runs):
            found = indicator(self.top[run][query])
            if found is not None:
                move[0][i, j], most[0][i, j] = found[0] - found[1], 1.0
                if weight is not None:
                    move[1][i, j], move[2][i, j] = weight * move[0][i, j], move[0][i, j]
                    most[1][i, j], most[2][i, j] = weight, 1.0
        if self.pool_policy is not None:
            found = indicator(self.pools.get(query, []))
            if found is not None:
                move[3][j], most[3][j] = found[0] - found[1], 1.0
        return move, most


def _labelled(labels: Mapping[Pair, bool], pairs: Sequence[Pair], test_point: str) -> Callable[[str], bool | None]:
    """A passage's label on ``test_point`` where the unit holds the pair, else None."""
    members = {p for p, _ in pairs}
    return lambda passage: labels[(passage, test_point)] if passage in members else None


def _fixing(totals: _Totals, pairs: Sequence[Pair], unit: tuple[str, ...], query_of: Mapping[str, str]) -> Moves:
    """The most a unit (labelled or not: no label is read) could move each total."""
    test_point = pairs[0][1] if pairs else unit[-1]
    members = {p for p, _ in pairs}
    return totals.moves(query_of[test_point], test_point, lambda p: False if p in members else None)[1]


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
    moves, bounds = [], []
    for unit_id in units:
        pairs = pairs_of[unit_id]
        test_point = pairs[0][1] if pairs else unit_id[-1]
        move, most = totals.moves(query_of[test_point], test_point, _labelled(labels, pairs, test_point))
        moves.append(move)
        bounds.append(most)
    corrected = [b + sum(w * move[c] for w, move in zip(design.weights, moves)) for c, b in enumerate(base)]
    values = totals.scores(*corrected)

    def influence(move: Sequence[np.ndarray]) -> np.ndarray:
        """The first-order move of every run's corrected score along ``move`` (exact for a linear score)."""
        step = 1e-4
        up = totals.scores(*(c + step * d for c, d in zip(corrected, move)))
        down = totals.scores(*(c - step * d for c, d in zip(corrected, move)))
        return np.asarray((up - down) / (2 * step), dtype=float)

    def largest(most: Moves) -> np.ndarray:
        """The most a unit could move each run's score: each total it fixes moved by its most, apart."""
        zero = [np.zeros_like(c) for c in corrected]
        out = np.zeros(len(runs))
        for c in range(4):
            out += np.abs(influence([most[c] if k == c else zero[k] for k in range(4)]))
        return out

    influences = np.asarray([influence(move) for move in moves]).reshape(len(units), len(runs))
    scale = np.asarray([largest(most) for most in bounds]).reshape(len(units), len(runs))
    population = list(pairs_of)[:: math.ceil(len(pairs_of) / FLOOR_UNITS) or 1]  # an even spread of the units
    floor = np.mean([largest(_fixing(totals, pairs_of[u], u, query_of)) for u in population], axis=0)
    estimates = intervals(values, influences, scale, design, floor=floor)
    return CorrectedMeasure(measure, {run: (float(r), e) for run, r, e in zip(runs, raw, estimates)}, len(units))
