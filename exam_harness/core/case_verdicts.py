"""How one run did on one test point: the rule a pytest case applies and the JSON report records.

A test point is *answered* when some passage of the run's top-k reaches the minimum grade tau,
*missed* otherwise (*required-missed* for a required test point), an *error* when a pair of the
top-k could not be graded and no graded passage answers it, and *skipped* when the grader cannot
grade the test point at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from exam_harness.core.display import shorten
from exam_harness.core.models import TestPoint

__all__ = ["Outcome", "Verdict", "describe", "shorten", "verdict"]

Outcome = Literal["answered", "missed", "required-missed", "error", "skipped"]


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    best_grade: int | None
    best_passage: str | None
    min_grade: int
    k: int
    retrieved: int
    errors: tuple[tuple[str, str], ...] = ()  # (passage id, why it could not be graded)
    reason: str = ""  # why the test point was skipped

    @property
    def answered(self) -> bool:
        return self.outcome == "answered"


def verdict(
    test_point: TestPoint,
    top_k: Sequence[str],
    grades: Mapping[tuple[str, str], int],
    failures: Mapping[tuple[str, str], str],
    unsupported: Mapping[str, str],
    *,
    min_grade: int,
    k: int,
    required: bool | None = None,
) -> Verdict:
    """The verdict of the run whose top-k passages are ``top_k`` on ``test_point``; ``required``: whether
    the test point is required of this run (default: as the bank marks it, for every run; see
    :class:`exam_harness.config.gates.RequiredScope`)."""
    if test_point.id in unsupported:
        return Verdict("skipped", None, None, min_grade, k, len(top_k), reason=unsupported[test_point.id])
    best_grade: int | None = None
    best_passage: str | None = None
    errors: list[tuple[str, str]] = []
    for pid in top_k:
        pair = (pid, test_point.id)
        grade = grades.get(pair)
        if grade is not None and (best_grade is None or grade > best_grade):
            best_grade, best_passage = grade, pid
        elif grade is None and pair in failures:
            errors.append((pid, failures[pair]))
    answered = best_grade is not None and best_grade >= min_grade
    outcome: Outcome
    if answered:
        outcome = "answered"
    elif errors:
        outcome = "error"  # an ungraded passage might have answered it: no verdict either way
    else:
        outcome = "required-missed" if (test_point.required if required is None else required) else "missed"
    return Verdict(outcome, best_grade, best_passage, min_grade, k, len(top_k), tuple(errors))


REASON_CHARS = 200  # a reason quotes a span (up to 100 characters) and its figures
PASSAGE_CHARS = 160  # the best passage's text beside its id


def describe(result: Verdict, *, text: str | None = None, reason: str | None = None,
             passage: str | None = None) -> str:
    """The one-line message of a verdict: what was missed, the best passage (its id and text, cut), its
    grade and the grade's reason (an LLM's raw answer, the default grader's best span quoted with its
    support, the answer key's finding), cut.

    ``text`` (the test point), ``reason`` and ``passage`` (the best passage's text) are left out by the
    caller for secret banks: an answering passage, or a reason quoting it, would tell the secret answer.
    """
    what = f" {shorten(text, 120)!r}" if text else ""
    if result.outcome == "skipped":
        return f"skipped{what}: the grader cannot grade this test point: {result.reason}"
    if result.outcome == "error":
        shown = "; ".join(f"{pid}: {why}" for pid, why in result.errors[:3])
        more = f"; and {len(result.errors) - 3} more" if len(result.errors) > 3 else ""
        return f"grading failed for {len(result.errors)} passage(s) of this run{what}: {shown}{more}"
    if result.retrieved == 0:
        return f"missed{what}: the run returned no passage for this query"
    if result.best_grade is None:
        # retrieved passages, none graded for this test point: the grading pass did not cover the pair
        return f"missed{what}: none of the run's {result.retrieved} passages has a grade for this test point"
    quoted = f" {shorten(passage, PASSAGE_CHARS)!r}" if passage is not None and passage.strip() else ""
    said = f", reason {shorten(reason, REASON_CHARS)!r}" if reason is not None and reason.strip() else ""
    best = f"best grade {result.best_grade} (passage {result.best_passage}{quoted}{said})"
    if result.answered:
        return f"answered{what}: {best} >= min grade {result.min_grade}"
    return f"missed{what}: {best} < min grade {result.min_grade} in the run's top {result.k}"
