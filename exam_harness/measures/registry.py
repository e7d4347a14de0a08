"""The measure registry: family name -> measure class. trec_eval measures need no entry (any name
pytrec_eval knows parses to a TrecMeasure); features and plugins add families with ``pytest_exam_register_measures``
(the TREC RAG track's scores are the TREC RAG feature's)."""

from __future__ import annotations

from typing import Any

from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure, measure_class_problem

BUILTIN_MEASURES: dict[str, tuple[str, str]] = {
    "exam-cover": ("exam_harness.measures.exam:ExamCover", "EXAM-Cover@k: share of the test points the top-k covers"),
    "n-exam-cover": ("exam_harness.measures.exam:NExam", "n-EXAM@k: EXAM-Cover normalised by the pool's cover"),
    "n-exam": ("exam_harness.measures.exam:NExam", "alias of n-exam-cover"),
    "nugget-f": ("exam_harness.measures.exam:NuggetF", "nugget F-score with pyramid weights and a length allowance"),
    "alpha-ndcg": ("exam_harness.measures.exam:AlphaNDCG", "alpha-nDCG@k over test points"),
    "citation-precision": ("exam_harness.measures.citations:CitationPrecision",
                           "weighted citation precision over (sentence, cited document) pairs"),
    "citation-recall": ("exam_harness.measures.citations:CitationRecall",
                        "weighted citation recall over answer sentences (uncited: 0)"),
    "citation-f1": ("exam_harness.measures.citations:CitationF1", "F1 of citation precision and recall"),
}


def builtin_measures() -> Registry[type[Measure]]:
    registry: Registry[type[Measure]] = Registry("measure", problem=measure_class_problem)
    for name, (ref, description) in BUILTIN_MEASURES.items():
        registry.register(name, ref, description)
    return registry


_default: list[tuple[Any, Registry[type[Measure]]]] = []


def use_measures(hook: Any, registry: Registry[type[Measure]]) -> None:
    """Make ``registry`` (filled through ``hook`` by a front end) the default of callers given none while ``hook``
    is the active one: the session's registry, not a second one filled the same way."""
    _default[:] = [(hook, registry)]


def default_measures() -> Registry[type[Measure]]:
    """The built-in families and those the active front end's features and plugins register (core/host.py: the
    in-tree features' with no front end), for a caller given no registry (a document read back names its
    measures). Filled once per hook relay."""
    from exam_harness.core.host import active_hook

    hook = active_hook()
    if not _default or _default[0][0] is not hook:
        registry = builtin_measures()
        hook.pytest_exam_register_measures(registry=registry)
        _default[:] = [(hook, registry)]
    return _default[0][1]
