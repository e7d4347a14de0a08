"""Table tests of the METHOD's parse rules (exam_harness.core.grade_parsing)."""

from __future__ import annotations

import pytest

from exam_harness.core.grade_parsing import (
    is_ill_formed_answer,
    is_unanswerable,
    parse_self_rating,
    parse_yes_no,
    single_digit_grade,
)

SELF_RATING_CASES = [
    # a single digit 0..5, punctuation and space around it allowed -> that grade
    ("0", 0),
    ("5", 5),
    (" 4 ", 4),
    ("3.", 3),
    ("(2)", 2),
    ('"1"', 1),
    ("**5**", 5),
    ("4\n", 4),
    ("- 3", 3),
    # unanswerability expressions -> 0, case and surrounding punctuation ignored
    ("unanswerable", 0),
    ("No", 0),
    ("no answer", 0),
    ("No answer.", 0),
    ("Not enough information", 0),
    ("unknown", 0),
    ("It is not possible to tell.", 0),
    ("it does not say", 0),
    ("no relevant information", 0),
    # anything else -> 1
    ("6", 1),
    ("9", 1),
    ("10", 1),
    ("4.5", 1),
    ("3 out of 5", 1),
    ("5 5", 1),
    ("yes", 1),
    ("The Eiffel Tower is in Paris.", 1),
    ("no, the context is about cats", 1),
    ("", 1),
    ("   ", 1),
]


@pytest.mark.parametrize(("response", "grade"), SELF_RATING_CASES)
def test_parse_self_rating(response: str, grade: int) -> None:
    assert parse_self_rating(response) == grade


@pytest.mark.parametrize(
    ("response", "max_grade", "expected"),
    [("2", 2, 2), ("3", 2, None), ("0", 2, 0), ("5", 5, 5), ("x", 5, None), ("12", 5, None)],
)
def test_single_digit_grade_respects_the_scale(response: str, max_grade: int, expected: int | None) -> None:
    assert single_digit_grade(response, max_grade) == expected


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("Yes", 1),
        ("yes.", 1),
        ("YES, it does", 1),
        ("No", 0),
        ("no.", 0),
        (" No, it does not", 0),
        ("Maybe", None),
        ("", None),
        ("Yesterday", None),
        ("3", None),
    ],
)
def test_parse_yes_no(response: str, expected: int | None) -> None:
    assert parse_yes_no(response) == expected


@pytest.mark.parametrize(
    ("answer", "unanswerable"),
    [("unknown", True), ("  Unanswerable. ", True), ("no", True), ("Paris", False), ("not known", False)],
)
def test_is_unanswerable(answer: str, unanswerable: bool) -> None:
    assert is_unanswerable(answer) is unanswerable


@pytest.mark.parametrize(
    ("answer", "ill_formed"),
    [("a. ", True), ("(iii)", True), ("b)", True), ("", True), ("   ", True), ("iv.", True), ("Paris", False), ("a cat", False)],
)
def test_is_ill_formed_answer(answer: str, ill_formed: bool) -> None:
    assert is_ill_formed_answer(answer) is ill_formed
