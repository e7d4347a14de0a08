"""A reranker grader's cut points fitted on a team's labels (issue 30; graders/reranker_cuts.py): the
probability where the minimum grade begins is chosen by Cohen's kappa of "probability >= it" against the
labels, cross-validated by test point as the support model's refit is (analysis/labels.py): on each fold
of test points the threshold is chosen on the other folds' labelled pairs and kappa measured on the fold's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

from exam_harness.analysis.calibration import Sample, Spread, cross_validate, query_folds
from exam_harness.analysis.labels import Pair
from exam_harness.analysis.support_fit import cut_points_around
from exam_harness.core.errors import ConfigError

MAX_CANDIDATES = 400  # thresholds tried: midpoints between observed probabilities, thinned evenly beyond this
EDGE = 1e-6  # a threshold stays inside (0, 1): the other cut points are spaced around it in logits


@dataclass(frozen=True)
class CutFit:
    threshold: float  # where the minimum grade begins
    cut_points: tuple[float, ...]
    in_sample_kappa: float | None
    held_out: Spread
    pairs: int
    test_points: int


def candidates(values: list[float]) -> list[float]:
    """Midpoints between successive distinct observed values (a reason states 4 decimals: a threshold on an
    observed value could fall on either side of the probability it was read from), and one below them all."""
    distinct = sorted(set(values))
    points = [distinct[0] / 2] + [(a + b) / 2 for a, b in pairwise(distinct)]
    if len(points) > MAX_CANDIDATES:
        step = len(points) / MAX_CANDIDATES
        points = [points[int(i * step)] for i in range(MAX_CANDIDATES)]
    return [min(max(p, EDGE), 1 - EDGE) for p in points]


def fit_cut_points(probabilities: Mapping[Pair, float], labels: Mapping[Pair, bool], *, min_grade: int, folds: int,
                   seed: int) -> CutFit:
    """The cut points fitted on the labelled pairs that have a probability; a ConfigError when they are too
    few test points for ``folds`` or all of one kind."""
    keys = [(tp_id, passage_id) for (passage_id, tp_id) in sorted(labels) if (passage_id, tp_id) in probabilities]
    if not keys:
        raise ConfigError("no labelled pair has a grade of the session's grader: label pairs of this pool")
    values = [probabilities[(passage_id, tp_id)] for tp_id, passage_id in keys]
    relevant = [labels[(passage_id, tp_id)] for tp_id, passage_id in keys]
    if all(relevant) or not any(relevant):
        raise ConfigError(f"the {len(keys)} labelled pairs are all {'yes' if relevant[0] else 'no'}: cut points "
                          "need labels of both kinds")
    sample = Sample.of(keys, values, relevant)  # its "queries" are test points: folds deal whole test points
    points = sorted({tp_id for tp_id, _ in keys})
    search = cross_validate(sample, candidates(values), query_folds(points, folds, seed))
    threshold = float(search.chosen)
    return CutFit(threshold, tuple(cut_points_around(threshold, min_grade)), search.in_sample_kappa,
                  search.held_out, len(keys), len(points))
