"""The measure registry: family name -> measure class. trec_eval measures need no entry (any name
pytrec_eval knows parses to a TrecMeasure); plugins add families with ``pytest_exam_register_measures``."""

from __future__ import annotations

from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure, measure_class_problem

BUILTIN_MEASURES: dict[str, tuple[str, str]] = {
    "exam-cover": ("exam_harness.measures.exam:ExamCover", "EXAM-Cover@k: share of the test points the top-k covers"),
    "n-exam-cover": ("exam_harness.measures.exam:NExam", "n-EXAM@k: EXAM-Cover normalised by the pool's cover"),
    "n-exam": ("exam_harness.measures.exam:NExam", "alias of n-exam-cover"),
    "nugget-f": ("exam_harness.measures.exam:NuggetF", "nugget F-score with pyramid weights and a length allowance"),
    "alpha-ndcg": ("exam_harness.measures.exam:AlphaNDCG", "alpha-nDCG@k over test points"),
    "a": ("exam_harness.measures.trec_rag:All", "TREC RAG all score: nugget credit (support 1, partial 0.5) / nuggets"),
    "a_strict": ("exam_harness.measures.trec_rag:AllStrict", "TREC RAG strict all score (support only)"),
    "v": ("exam_harness.measures.trec_rag:Vital", "TREC RAG vital score: credit over the vital nuggets"),
    "v_strict": ("exam_harness.measures.trec_rag:VitalStrict", "TREC RAG strict vital score"),
    "w": ("exam_harness.measures.trec_rag:Weighted", "TREC RAG weighted score: vital 1, okay 0.5"),
    "w_strict": ("exam_harness.measures.trec_rag:WeightedStrict", "TREC RAG strict weighted score"),
    "citation-precision": ("exam_harness.measures.citations:CitationPrecision",
                           "weighted citation precision over (sentence, cited document) pairs"),
    "citation-recall": ("exam_harness.measures.citations:CitationRecall",
                        "weighted citation recall over answer sentences (uncited: 0)"),
    "citation-f1": ("exam_harness.measures.citations:CitationF1", "F1 of citation precision and recall"),
    "response-words": ("exam_harness.measures.trec_rag:ResponseWords", "words per answer (NFKC, whitespace split)"),
}


def builtin_measures() -> Registry[type[Measure]]:
    registry: Registry[type[Measure]] = Registry("measure", problem=measure_class_problem)
    for name, (ref, description) in BUILTIN_MEASURES.items():
        registry.register(name, ref, description)
    return registry
