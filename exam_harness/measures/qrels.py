"""EXAM-Qrels: passage-level relevance labels from grades, and the names of their qrels files.

Label variants of the method, for passage p of query q with bank R_q and minimum grade tau:
- ``max-grade``: max over r in R_q of grade(p, r) (multi-graded; trec_eval's relevance level = tau);
- ``count``: |{r : grade(p, r) >= tau}| (relevance level 1);
- ``at-least-m``: 1 if that count >= m else 0 (relevance level 1).

A pair without a grade counts as grade 0. The labels are of the collection's passages: a generated
answer's segment is no passage a ranking can retrieve, so it has none (as a relevant passage it would
lower every ranked run's recall). The one qrels builder is
:meth:`exam_harness.measures.context.ScoringContext.qrels`, which labels with :func:`label_of`; the pytest
reports, ``exam-harness evaluate`` and the bank edit impact all take their qrels from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exam_harness.core.errors import InputError
from exam_harness.core.registry import unknown_name_message
from exam_harness.io.qrels import Qrels as Qrels  # the one type, defined with its file format
from exam_harness.measures._checks import check_min_grade

VARIANTS: tuple[str, ...] = ("max-grade", "count", "at-least-m")


def check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise InputError(unknown_name_message("qrels label variant", variant, list(VARIANTS)), field="variant",
                         value=variant, expected=", ".join(VARIANTS))


def check_m(m: int) -> None:
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InputError("at-least-m needs a positive m", field="m", value=m, expected="an integer >= 1")


def relevance_level(variant: str, min_grade: int) -> int:
    """The trec_eval relevance level that binarises a variant's labels: tau for max-grade, else 1."""
    check_variant(variant)
    check_min_grade(min_grade)
    return min_grade if variant == "max-grade" else 1


def label_of(grades_of_passage: Sequence[int], variant: str, min_grade: int, m: int) -> int:
    """One passage's label from its grades on every test point of its query's bank."""
    if variant == "max-grade":
        return max(grades_of_passage, default=0)
    return count_label(sum(1 for g in grades_of_passage if g >= min_grade), variant, m)


def count_label(count: int, variant: str, m: int) -> int:
    """The ``count`` or ``at-least-m`` label of a passage covering ``count`` test points."""
    return count if variant == "count" else int(count >= m)


@dataclass(frozen=True)
class QrelsCut:
    """Which EXAM-Qrels a value reads: the label variant, tau, m, the pool and the depth k its runs are cut
    at. The five travel together from a trec measure (or a report's qrels file) to the scoring context,
    which keys its qrels and its pytrec_eval passes by them. ``m`` shapes only at-least-m labels: it is
    kept as 0 for the other variants, so that cuts differing only there are equal."""

    variant: str
    min_grade: int
    m: int
    pool: str
    k: int

    def __post_init__(self) -> None:
        check_variant(self.variant)
        if self.variant == "at-least-m":
            check_m(self.m)
        elif self.m != 0:
            object.__setattr__(self, "m", 0)

    @property
    def labels(self) -> QrelsCut:
        """The cut with the same labels: max-grade labels do not depend on tau (only their binarisation
        does), so one qrels serves every tau."""
        return replace(self, min_grade=0) if self.variant == "max-grade" else self

    @property
    def relevance_level(self) -> int:
        return relevance_level(self.variant, self.min_grade)


def qrels_file_name(variant: str, min_grade: int, m: int) -> str:
    """The one naming scheme of qrels files: ``exam-max-grade.qrels`` (labels 0..5, independent of tau;
    binarise with trec_eval -l TAU), ``exam-count-min{TAU}.qrels``, ``exam-at-least-{M}-min{TAU}.qrels``."""
    check_variant(variant)
    if variant == "max-grade":
        return "exam-max-grade.qrels"
    if variant == "count":
        return f"exam-count-min{min_grade}.qrels"
    return f"exam-at-least-{m}-min{min_grade}.qrels"
