"""The one result model of scoring: every measure's per-query values and aggregate, per run, and what
the document's builder reads beside them (:class:`Needs`: EXAM-Qrels, each run's top-k with its grades,
a pool), each made by the scoring pipeline only when asked.

The pytest report (``report/build.py``) and ``exam-harness evaluate``'s document (``report/evaluation.py``)
are views of an :class:`ExamResult`; neither reads the scoring context (measures/context.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from exam_harness.measures.base import Measure, Score
from exam_harness.measures.qrels import Qrels, QrelsCut


@dataclass(frozen=True)
class Needs:
    """What a caller of the scoring pipeline reads beside the measures' values (nothing by default)."""

    qrels: Sequence[QrelsCut] = ()  # EXAM-Qrels of each cut (ExamResult.qrels, by qrels file name)
    top_k: int | None = None  # each run's top-k per query with the grade rows of its passages (ExamResult.tops)
    pool: tuple[str, int] | None = None  # a pool policy and k: its passages per query (ExamResult.pool)


@dataclass(frozen=True)
class TopK:
    """Each run's top-k per query as scoring cut it, the distinct passages among them per query (runs in
    order, each its top-k in rank order) and each such passage's grades on the query's bank (bank order,
    None: no grade), read once however many runs rank it."""

    k: int
    runs: Sequence[str]
    top: Mapping[str, Mapping[str, Sequence[str]]]  # run -> query -> passage ids
    pooled: Mapping[str, Sequence[str]]  # query -> distinct passage ids of every run's top-k
    banks: Mapping[str, Sequence[str]]  # query -> the test point ids the rows' positions name
    rows: Mapping[str, Mapping[str, tuple[int | None, ...]]]  # query -> passage -> grades on the bank
    grades: Mapping[tuple[str, str], int]  # the grades the rows were read from


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
    # what Needs asked for: qrels file name -> EXAM-Qrels; the runs' top-k with grades; query -> pool passages
    qrels: Mapping[str, Qrels] = field(default_factory=dict)
    tops: TopK | None = None
    pool: Mapping[str, Sequence[str]] | None = None

    def __iter__(self) -> Iterator[MeasureResult]:
        return iter(self.results.values())

    def __getitem__(self, measure: Measure | str) -> MeasureResult:
        try:
            return self.results[str(measure)]
        except KeyError:
            raise KeyError(f"measure {str(measure)!r} was not computed; computed: {', '.join(self.results)}") from None

    def __contains__(self, measure: object) -> bool:
        return str(measure) in self.results
