"""Argument checks shared by the measures (a library caller's mistake is an InputError naming the field)."""

from __future__ import annotations

from collections.abc import Mapping

from exam_harness.core.errors import InputError

# (passage id, test point id) -> grade; a pair without a grade counts as grade 0 everywhere.
Grades = Mapping[tuple[str, str], int]


def check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError("rank cut-off must be a positive integer", field="k", value=k, expected="an integer >= 1")


def check_min_grade(min_grade: int) -> None:
    # tau <= 0 would let ungraded (zero) pairs count as covered: always a mistake.
    if isinstance(min_grade, bool) or not isinstance(min_grade, int) or min_grade < 1:
        raise InputError(
            "minimum grade must be a positive integer", field="min_grade", value=min_grade, expected="an integer >= 1"
        )
