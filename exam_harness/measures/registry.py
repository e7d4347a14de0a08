"""The measure registry: family name -> measure class. trec_eval measures need no entry (any name
pytrec_eval knows parses to a TrecMeasure); plugins add families with ``pytest_exam_register_measures``."""

from __future__ import annotations

from exam_harness.measures.base import Measure
from exam_harness.registry import Registry

BUILTIN_MEASURES: dict[str, tuple[str, str]] = {
    "exam-cover": ("exam_harness.measures.exam:ExamCover", "EXAM-Cover@k: share of the test points the top-k covers"),
    "n-exam-cover": ("exam_harness.measures.exam:NExam", "n-EXAM@k: EXAM-Cover normalised by the pool's cover"),
    "n-exam": ("exam_harness.measures.exam:NExam", "alias of n-exam-cover"),
    "nugget-f": ("exam_harness.measures.exam:NuggetF", "nugget F-score with pyramid weights and a length allowance"),
    "alpha-ndcg": ("exam_harness.measures.exam:AlphaNDCG", "alpha-nDCG@k over test points"),
}


def builtin_measures() -> Registry[type[Measure]]:
    registry: Registry[type[Measure]] = Registry("measure")
    for name, (ref, description) in BUILTIN_MEASURES.items():
        registry.register(name, ref, description)
    return registry
