"""Calibrating a grader against human judgments, with cross-validation over queries.

A judged passage is *predicted relevant* when its label reaches a threshold and *is* relevant when its
judgment reaches the relevance level (2 for TREC DL, 1 for CAR); the fit is Cohen's kappa of that
2x2 table (:func:`exam_harness.measures.kappa.cohen_kappa`), as in the method's grade x judgment tables
(docs/method.md, "Human oversight"). What is calibrated:

- the minimum grade tau, per label rule: ``max-grade`` (the passage's highest grade over its query's
  test points) and ``at-least-m`` (the m-th highest grade, so "label >= tau" reads "at least m test points
  reach tau"; m = 1 is max-grade), the labels of :mod:`exam_harness.analysis.judged_labels`;
- for the embedding grader, the cosine where the grade ``min_grade`` begins (a passage's score is its best
  cosine over the query's test points, so "max grade >= min_grade" reads "score >= that cut point"); the
  other cut points keep a fixed spacing around it, as the shipped ones do (graders/embedding.py).

A threshold chosen by kappa on the passages it is then scored on overstates kappa. So the queries are
dealt into k folds (a seeded shuffle); for each fold the threshold is chosen on the other folds' passages
and kappa is measured on the fold's own: the *held-out* kappa, reported as the mean over folds with its
standard deviation, beside the in-sample kappa. Folds hold whole queries, never parts of one: a query's
passages share its test points, and splitting them would let training see the held-out test points.

The merged 3-way view (:func:`exam_harness.analysis.judged_labels.merged_table`: max grades {4,5} / {1,2,3} /
{0} against judgments above / at / below the relevance level) chooses nothing, so its kappa needs no
held-out estimate; its per-fold kappa shows its spread.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from exam_harness.analysis.judged_labels import MergedTable, max_grade_labels, merged_table, min_answers_labels
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.measures.kappa import cohen_kappa, finite, grade_judgment_table

Pair = tuple[str, str]  # (passage id, test point id)
Key = tuple[str, str]  # (query id, passage id)
Number = int | float

TIE_TOLERANCE = 1e-12  # kappas this close count as equal when choosing a threshold


# --- the judged passages and their scores ------------------------------------------------------------


def rule_name(m: int) -> str:
    return "max-grade" if m == 1 else f"at-least-{m}"


def passage_scores(
    keys: Iterable[Key], test_points: Mapping[str, Sequence[str]], pair_scores: Mapping[Pair, float]
) -> dict[Key, float]:
    """(query, passage) -> the best score of the passage over its query's test points (pairs without a
    score left out; a passage with none is left out)."""
    out: dict[Key, float] = {}
    for qid, pid in keys:
        found = [s for tid in test_points.get(qid, ()) if (s := pair_scores.get((pid, tid))) is not None]
        if found:
            out[(qid, pid)] = max(found)
    return out


def embedding_cosines(answers: Mapping[Pair, str | None]) -> dict[Pair, float]:
    """(passage, test point) -> the score the embedding grader's cut points apply to, read from its stored
    raw responses: the support in its reason (``... support 0.4804 (span ...)``). A grade the answer key
    decided is 5 whatever the cut points, so its score is +inf.

    The reason keeps 4 decimals (the cache returns no details), so a support within 0.00005 of a cut point
    may read as on its other side."""
    from exam_harness.graders.embedding import ANSWER_KEY_DECIDED
    from exam_harness.graders.support import signals_of_reason

    out: dict[Pair, float] = {}
    for pair, raw in answers.items():
        if raw is None:
            continue
        if raw.startswith(ANSWER_KEY_DECIDED):
            out[pair] = math.inf
            continue
        found = signals_of_reason(raw)
        if found is None:
            raise InputError(
                f"the stored answer of passage {pair[0]!r} on test point {pair[1]!r} is not an embedding "
                "grader's reason", field="raw_response", value=raw[:80],
                expected="a reason such as '“…” support 0.4804 (span 0.61, passage 0.52, words 0.50)'")
        out[pair] = found[0]
    return out


# --- folds and threshold search -------------------------------------------------------------------


def query_folds(queries: Iterable[str], k: int, seed: int) -> list[list[str]]:
    """The queries dealt into ``k`` folds after a shuffle seeded with ``seed`` (sizes differ by at most 1)."""
    ordered = sorted(set(queries))
    if k < 2:
        raise ConfigError(f"--folds must be at least 2 for cross-validation, got {k}")
    if k > len(ordered):
        raise ConfigError(f"--folds {k} needs at least {k} queries with judged and graded passages; "
                          f"there are {len(ordered)}")
    random.Random(seed).shuffle(ordered)
    return [sorted(ordered[i::k]) for i in range(k)]


@dataclass(frozen=True)
class Sample:
    """Judged passages as arrays: a value to threshold, whether the passage is relevant, its query."""

    values: np.ndarray
    relevant: np.ndarray
    queries: np.ndarray

    @classmethod
    def of(cls, keys: Sequence[Key], values: Sequence[float], relevant: Sequence[bool]) -> Sample:
        return cls(np.asarray(values, dtype=float), np.asarray(relevant, dtype=bool),
                   np.asarray([q for q, _ in keys], dtype=object))

    def where(self, mask: np.ndarray) -> Sample:
        return Sample(self.values[mask], self.relevant[mask], self.queries[mask])

    def in_queries(self, queries: Iterable[str]) -> np.ndarray:
        return np.isin(self.queries, list(queries))


def kappa_at(sample: Sample, threshold: float) -> float:
    """Cohen's kappa of "value >= threshold" against "judged relevant" (NaN when undefined)."""
    predicted = sample.values >= threshold
    rel = sample.relevant
    table = {1: {1: int(np.sum(predicted & rel)), 0: int(np.sum(predicted & ~rel))},
             0: {1: int(np.sum(~predicted & rel)), 0: int(np.sum(~predicted & ~rel))}}
    return cohen_kappa(table)


def choose_threshold(sample: Sample, candidates: Sequence[Number]) -> tuple[Number, float]:
    """The candidate of highest kappa on ``sample`` and that kappa (see :func:`pick`)."""
    if sample.relevant.all() or not sample.relevant.any():
        # kappa is 0 or undefined for every threshold: nothing to choose from
        raise ConfigError("no threshold can be chosen: the judged passages are all relevant or all not relevant "
                          "(try another --relevance-level, or fewer --folds)")
    return pick(candidates, [kappa_at(sample, c) for c in candidates])


def pick(candidates: Sequence[Number], kappas: Sequence[float]) -> tuple[Number, float]:
    """The candidate of highest kappa and that kappa. Candidates tying for the highest (a plateau between
    two observed values) give their middle one, so the choice does not lean to an end of the plateau."""
    defined = [k for k in kappas if math.isfinite(k)]
    if not defined:
        raise ConfigError("no threshold gives a defined Cohen's kappa (every candidate puts all judged passages "
                          "on one side)")
    best = max(defined)
    tied = [c for c, k in zip(candidates, kappas) if math.isfinite(k) and k >= best - TIE_TOLERANCE]
    return tied[(len(tied) - 1) // 2], best


class FoldResult(BaseModel):
    fold: int
    queries: list[str]
    passages: int
    chosen: Number  # chosen on the other folds
    train_kappa: float | None
    held_out_kappa: float | None


class Spread(BaseModel):
    """Mean and sample standard deviation of per-fold kappas (folds where kappa is undefined left out)."""

    mean: float | None
    sd: float | None
    low: float | None
    high: float | None
    undefined_folds: int = 0

    @classmethod
    def of(cls, kappas: Sequence[float | None]) -> Spread:
        values = [k for k in kappas if k is not None]
        return cls(
            mean=statistics.fmean(values) if values else None,
            sd=statistics.stdev(values) if len(values) > 1 else None,
            low=min(values, default=None), high=max(values, default=None),
            undefined_folds=len(kappas) - len(values),
        )


class ThresholdSearch(BaseModel):
    """One threshold chosen by kappa: on every passage (in-sample) and per fold (held-out)."""

    candidates: list[Number]
    in_sample_kappas: list[float | None]  # each candidate's kappa on every passage
    chosen: Number  # chosen on every passage: the calibrated value
    in_sample_kappa: float | None
    folds: list[FoldResult]
    held_out: Spread
    # one kappa over every passage, each predicted with the threshold its fold's training chose
    pooled_held_out_kappa: float | None


def cross_validate(sample: Sample, candidates: Sequence[Number], folds: Sequence[Sequence[str]]) -> ThresholdSearch:
    """Choose a threshold among ``candidates`` on all of ``sample`` and, per fold, on the other folds."""
    chosen, in_sample = choose_threshold(sample, candidates)
    kappas = [kappa_at(sample, c) for c in candidates]
    results: list[FoldResult] = []
    pooled = np.zeros(len(sample.values), dtype=bool)
    for i, fold in enumerate(folds):
        held = sample.in_queries(fold)
        train, test = sample.where(~held), sample.where(held)
        fold_choice, train_kappa = choose_threshold(train, candidates)
        pooled[held] = test.values >= fold_choice
        results.append(FoldResult(fold=i + 1, queries=list(fold), passages=int(held.sum()), chosen=fold_choice,
                                  train_kappa=finite(train_kappa), held_out_kappa=finite(kappa_at(test, fold_choice))))
    pooled_kappa = kappa_at(Sample(pooled.astype(float), sample.relevant, sample.queries), 1.0)
    return ThresholdSearch(
        candidates=list(candidates), in_sample_kappas=[finite(k) for k in kappas],
        chosen=chosen, in_sample_kappa=finite(in_sample), folds=results,
        held_out=Spread.of([r.held_out_kappa for r in results]), pooled_held_out_kappa=finite(pooled_kappa),
    )


# --- the report -----------------------------------------------------------------------------------


class RuleCalibration(BaseModel):
    """The minimum grade of one label rule."""

    rule: str
    m: int
    search: ThresholdSearch


class FixedView(BaseModel):
    """Kappa of a rule that chooses nothing: on every passage, and per fold for its spread."""

    kappa: float | None
    folds: list[float | None]
    spread: Spread


class MergedView(BaseModel):
    """The merged 3-way table of every passage, and its kappa per fold."""

    table: MergedTable
    folds: list[float | None]
    spread: Spread


class CutPointCalibration(BaseModel):
    """The embedding grader's cut points: the cosine where ``min_grade`` begins, the others ``spacing`` apart."""

    min_grade: int
    spacing: float
    current: list[float]
    current_view: FixedView  # the current cut point of min_grade, chosen elsewhere: no held-out estimate needed
    search: ThresholdSearch
    chosen: list[float]
    decided_by_answer_key: int  # passages a gold answer put at grade 5 whatever the cut points


class CalibrationReport(BaseModel):
    relevance_level: int
    k_folds: int
    seed: int
    queries: int
    passages: int
    relevant: int
    judged_without_grades: int
    folds: list[list[str]]
    rules: list[RuleCalibration]  # the first is max-grade: the rule the minimum grade option applies to
    merged: MergedView
    cut_points: CutPointCalibration | None = None
    grader: dict[str, object] = {}
    settings: dict[str, str | list[str]] = {}  # pytest ini key -> value(s), filled in by the command

    @property
    def max_grade_rule(self) -> RuleCalibration:
        return self.rules[0]

    def best_rule(self) -> RuleCalibration:
        """The rule of highest mean held-out kappa (the first on a tie)."""
        return max(self.rules, key=lambda r: -math.inf if r.search.held_out.mean is None else r.search.held_out.mean)


@dataclass(frozen=True)
class CalibrationSettings:
    relevance_level: int = 2
    k_folds: int = 5
    seed: int = 0
    min_grades: tuple[int, ...] = (1, 2, 3, 4, 5)  # the tau candidates
    min_answers: tuple[int, ...] = (1, 2, 5)  # m of the at-least-m rules (1: max-grade)
    # embedding cut points: the grade whose cut point is searched, the grid, the spacing of the others
    cut_min_grade: int = 4
    grid: tuple[float, ...] = tuple(round(0.02 + 0.01 * i, 2) for i in range(97))
    spacing: float = 0.1


def binary_view(keys: Sequence[Key], predicted: Sequence[bool], relevant: Sequence[bool],
                folds: Sequence[Sequence[str]]) -> FixedView:
    """Kappa of "predicted" against "relevant" over ``keys``, on all and per fold."""
    sample = Sample.of(keys, [float(p) for p in predicted], relevant)
    per_fold = [finite(kappa_at(sample.where(sample.in_queries(fold)), 1.0)) for fold in folds]
    return FixedView(kappa=finite(kappa_at(sample, 1.0)), folds=per_fold, spread=Spread.of(per_fold))


def merged_view(labels: Mapping[Key, int], judgments: Mapping[str, Mapping[str, int]], relevance_level: int,
                folds: Sequence[Sequence[str]]) -> MergedView:
    """The merged 3-way table of the max-grade ``labels``, and its kappa on each fold's passages."""

    def table_of(chosen: Mapping[Key, int]) -> MergedTable:
        return merged_table(grade_judgment_table(chosen, judgments), relevance_level)

    per_fold = []
    for fold in folds:
        wanted = set(fold)
        per_fold.append(table_of({k: v for k, v in labels.items() if k[0] in wanted}).kappa)
    return MergedView(table=table_of(labels), folds=per_fold, spread=Spread.of(per_fold))


def cut_points_around(threshold: float, min_grade: int, spacing: float, count: int = 5) -> list[float]:
    """Cut points where grades 1..count begin: ``threshold`` for ``min_grade``, the others ``spacing`` apart
    (rounded to 6 decimals, so that 0.3 prints as 0.3)."""
    return [round(threshold + (g - min_grade) * spacing, 6) for g in range(1, count + 1)]


def calibrate(
    grades: Mapping[Pair, int],
    test_points: Mapping[str, Sequence[str]],
    judgments: Mapping[str, Mapping[str, int]],
    settings: CalibrationSettings,
    *,
    cosines: Mapping[Pair, float] | None = None,
    current_cut_points: Sequence[float] | None = None,
) -> CalibrationReport:
    """The calibration report: tau per label rule, the merged view and, given ``cosines`` and
    ``current_cut_points`` (the embedding grader), the cut points."""
    labels = max_grade_labels(grades, test_points, judgments)
    if not labels:
        raise ConfigError("no judged passage has a grade: the judgments and the graded pool share no "
                          "(query, passage); check that both use the same query and passage ids")
    keys = sorted(labels)
    relevant = [judgments[q][p] >= settings.relevance_level for q, p in keys]
    folds = query_folds((q for q, _ in keys), settings.k_folds, settings.seed)
    rules = []
    for m in dict.fromkeys(settings.min_answers):
        rule_labels = labels if m == 1 else min_answers_labels(grades, test_points, judgments, m)
        sample = Sample.of(keys, [rule_labels[k] for k in keys], relevant)
        rules.append(RuleCalibration(rule=rule_name(m), m=m,
                                     search=cross_validate(sample, list(settings.min_grades), folds)))
    report = CalibrationReport(
        relevance_level=settings.relevance_level, k_folds=settings.k_folds, seed=settings.seed,
        queries=len({q for q, _ in keys}), passages=len(keys), relevant=sum(relevant),
        judged_without_grades=sum(len(j) for j in judgments.values()) - len(keys), folds=folds, rules=rules,
        merged=merged_view(labels, judgments, settings.relevance_level, folds),
    )
    if cosines is not None and current_cut_points is not None:
        report.cut_points = calibrate_cut_points(keys, relevant, test_points, cosines, current_cut_points, folds,
                                                 settings)
    return report


def calibrate_cut_points(
    keys: Sequence[Key], relevant: Sequence[bool], test_points: Mapping[str, Sequence[str]],
    cosines: Mapping[Pair, float], current: Sequence[float], folds: Sequence[Sequence[str]],
    settings: CalibrationSettings,
) -> CutPointCalibration:
    scores = passage_scores(keys, test_points, cosines)
    missing = [k for k in keys if k not in scores]
    if missing:
        q, p = missing[0]
        raise InputError(f"{len(missing)} judged passages have grades but no stored cosine (e.g. passage {p!r} of "
                         f"query {q!r})", field="raw_response", expected="grades of the embedding grader")
    tau = settings.cut_min_grade
    if not 1 <= tau <= len(current):
        raise ConfigError(f"cut points are searched for a minimum grade in 1..{len(current)}, got {tau}")
    sample = Sample.of(keys, [scores[k] for k in keys], relevant)
    now = current[tau - 1]
    return CutPointCalibration(
        min_grade=tau, spacing=settings.spacing, current=list(current),
        current_view=binary_view(keys, [s >= now for s in sample.values], relevant, folds),
        search=(search := cross_validate(sample, list(settings.grid), folds)),
        chosen=cut_points_around(float(search.chosen), tau, settings.spacing, len(current)),
        decided_by_answer_key=sum(1 for s in sample.values if math.isinf(s)),
    )
