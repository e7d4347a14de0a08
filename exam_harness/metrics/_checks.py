"""Shared argument checks and the grade lookup rule of the metrics package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from exam_harness.errors import InputError

Missing = Literal["zero", "error"]
MISSING_CHOICES: tuple[str, ...] = ("zero", "error")

Grades = Mapping[tuple[str, str], int]


def check_missing(missing: str) -> None:
    if missing not in MISSING_CHOICES:
        raise InputError(
            "unknown missing-grade policy",
            field="missing",
            value=missing,
            expected=" or ".join(repr(c) for c in MISSING_CHOICES),
        )


def check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError("rank cut-off must be a positive integer", field="k", value=k, expected="an integer >= 1")


def check_min_grade(min_grade: int) -> None:
    # tau <= 0 would let ungraded (zero) pairs count as covered: always a mistake.
    if isinstance(min_grade, bool) or not isinstance(min_grade, int) or min_grade < 1:
        raise InputError(
            "minimum grade must be a positive integer", field="min_grade", value=min_grade, expected="an integer >= 1"
        )


def grade_of(grades: Grades, passage_id: str, test_point_id: str, query_id: str, missing: str) -> int:
    """The grade of a pair; a pair without a grade is 0 under ``missing="zero"``, an error otherwise."""
    grade = grades.get((passage_id, test_point_id))
    if grade is not None:
        return grade
    if missing == "zero":
        return 0
    raise InputError(
        f"no grade for passage {passage_id!r} on test point {test_point_id!r} of query {query_id!r}",
        field="grades",
        value=(passage_id, test_point_id),
        expected="a grade for every (passage, test point) pair scored; grade the pool first or pass missing='zero'",
    )
