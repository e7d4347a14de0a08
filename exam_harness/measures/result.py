"""The one result model of scoring: every measure's per-query values and aggregate, per run.

The pytest report (``report/build.py``) and ``exam-harness evaluate``'s leaderboards
(``report/evaluation.py``) are views of an :class:`ExamResult`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from exam_harness.measures.base import Measure, Score


@dataclass(frozen=True)
class MeasureResult:
    """One measure over the exam: per run, the value on each query it scored, and the aggregate."""

    measure: Measure
    per_query: Mapping[str, Mapping[str, float]]  # run -> query -> value (exam query order)
    scores: Mapping[str, Score]  # run -> mean and standard error
    # run -> queries whose value rests on a pair that could not be graded (a lower bound, not a score)
    incomplete: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def means(self) -> dict[str, float]:
        return {run: score.mean for run, score in self.scores.items()}


@dataclass(frozen=True)
class ExamResult:
    """Every measure computed over one graded exam, in the order they were asked for."""

    runs: Sequence[str]
    queries: Sequence[str]
    test_points: Mapping[str, Sequence[str]]
    results: Mapping[str, MeasureResult] = field(default_factory=dict)  # str(measure) -> result

    def __iter__(self) -> Iterator[MeasureResult]:
        return iter(self.results.values())

    def __getitem__(self, measure: Measure | str) -> MeasureResult:
        try:
            return self.results[str(measure)]
        except KeyError:
            raise KeyError(f"measure {str(measure)!r} was not computed; computed: {', '.join(self.results)}") from None

    def __contains__(self, measure: object) -> bool:
        return str(measure) in self.results
