"""Measures of the exam method as value objects, and the one pipeline that computes them.

- :mod:`.base`: the :class:`Measure` protocol (parameters, printed form, parsing, aggregation);
- :mod:`.exam`: EXAM-Cover, n-EXAM, nugget F, alpha-nDCG; :mod:`.trec`: trec_eval measures over EXAM-Qrels;
- :mod:`.context` and :mod:`.pipeline`: the graded exam and the computation -> :mod:`.result`;
- pure functions: :mod:`.cover`, :mod:`.qrels` (labels), :mod:`.nuggets`, :mod:`.intent_aware`,
  :mod:`.kappa`, :mod:`.correlation`, :mod:`.significance`, :mod:`.stats`.
"""

from __future__ import annotations

from exam_harness.measures.base import Bindings, Measure, Score
from exam_harness.measures.context import ScoringContext, ScoringInput
from exam_harness.measures.exam import AlphaNDCG, ExamCover, NExam, NuggetF
from exam_harness.measures.parsing import parse_measure
from exam_harness.measures.pipeline import score
from exam_harness.measures.result import ExamResult, MeasureResult
from exam_harness.measures.trec import TrecMeasure

__all__ = [
    "AlphaNDCG",
    "Bindings",
    "ExamCover",
    "ExamResult",
    "Measure",
    "MeasureResult",
    "NExam",
    "NuggetF",
    "Score",
    "ScoringContext",
    "ScoringInput",
    "TrecMeasure",
    "parse_measure",
    "score",
]
