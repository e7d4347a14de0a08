"""Citation precision, recall and F1 of cited answers, from support credits (features/citation_support gives them).

Per (run, query), over the answer's (sentence, cited document) pairs with credit c (full 1, partial 0.5,
no support 0):

- ``citation-precision`` = sum of c over the pairs / number of pairs (0 when the answer cites nothing);
- ``citation-recall`` = sum over the sentences of the sentence's best credit / number of sentences; an
  uncited sentence counts 0, and a sentence with several citations counts once, by its best-supported one;
- ``citation-f1`` = 2 P R / (P + R), 0 when both are 0.

A query of the exam that the run did not answer scores 0. A pair without a grade counts 0 (the session
reports it as a failure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from exam_harness.measures.base import Measure, PerQuery, family_of

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext


def citation_values(sentences: tuple[tuple[float | None, ...], ...]) -> dict[str, float]:
    credits = [c or 0.0 for cited in sentences for c in cited]
    precision = sum(credits) / len(credits) if credits else 0.0
    recall = sum(max((c or 0.0 for c in cited), default=0.0) for cited in sentences) / len(sentences) \
        if sentences else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"citation-precision": precision, "citation-recall": recall, "citation-f1": f1}


@dataclass(frozen=True)
class CitationMeasure(Measure):
    """Base of the three citation measures: ``family`` picks the value (one subclass each, by :func:`family_of`)."""

    at: ClassVar[str | None] = None
    bound_from: ClassVar[dict[str, str]] = {}

    @property
    def key(self) -> str:
        return self.family

    def requires(self) -> frozenset[str]:
        return frozenset({"support"})  # the graded support of each cited sentence, no test point grades

    def compute(self, ctx: ScoringContext) -> PerQuery:
        support = ctx.exam.support
        out: PerQuery = {}
        for run in ctx.runs:
            answers = support.get(run, {})
            out[run] = {q: citation_values(answers[q])[self.family] if q in answers else 0.0 for q in ctx.queries}
        return out


CitationPrecision = family_of(CitationMeasure, "CitationPrecision", "citation-precision",
                              "Weighted citation precision over the (sentence, cited document) pairs.")
CitationRecall = family_of(CitationMeasure, "CitationRecall", "citation-recall",
                           "Weighted citation recall over the sentences (each by its best citation; uncited: 0).")
CitationF1 = family_of(CitationMeasure, "CitationF1", "citation-f1", "Harmonic mean of citation precision and recall.")

CITATION_MEASURES: tuple[type[Measure], ...] = (CitationPrecision, CitationRecall, CitationF1)
