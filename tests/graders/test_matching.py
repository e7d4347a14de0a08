"""Table tests of the METHOD's answer-key rule (exam_harness.graders.matching)."""

from __future__ import annotations

import pytest

from exam_harness.graders.matching import (
    STOP_WORDS,
    is_answer,
    matches,
    matching_gold_answer,
    normalise,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("It was built in 1889.", "built 1889"),
        ("Running quickly", "run quick"),
        ("the of and", ""),
        ("Photosynthesis's products", "photosynthesi product"),
        ("doesn't matter", "matter"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


MATCH_CASES = [
    # (extracted answer, gold answer, correct?)
    ("Paris", "Paris", True),
    ("paris.", "Paris", True),
    ("In Paris", "Paris", True),  # stop words go
    ("The Eiffel Tower", "Eiffel tower", True),
    ("photosynthesizing plants", "photosynthesising plant", True),  # stemmed, 1 edit in 22 chars
    ("1889", "in 1889", True),
    ("1890", "1889", False),  # 3 edits of 4 characters
    ("Berlin", "Paris", False),
    ("Gustave Eiffel", "Gustave Eifel", True),  # 1 edit of 14 (7%)
    ("abcde", "abcdx", False),  # 1 edit of 5 is exactly 20%: not below
    ("abcdefghij", "abcdefghix", True),  # 1 edit of 10 is 10%
    # ill-formed answers and unanswerability expressions are never correct
    ("a.", "a", False),
    ("(iii)", "iii", False),
    ("unknown", "unknown", False),
    ("No answer", "no answer", False),
    ("", "", False),
    ("the", "the", False),  # nothing left after stop-word removal
]


@pytest.mark.parametrize(("answer", "gold", "correct"), MATCH_CASES)
def test_matches(answer: str, gold: str, correct: bool) -> None:
    assert matches(answer, gold) is correct


def test_matching_gold_answer_returns_the_first_match() -> None:
    assert matching_gold_answer("Paris, France", ["London", "paris france", "Paris"]) == "paris france"
    assert matching_gold_answer("Rome", ["London", "Paris"]) is None
    assert matching_gold_answer("Rome", []) is None


def test_is_answer() -> None:
    assert is_answer("Paris")
    assert not is_answer("(b)")
    assert not is_answer("It does not say.")


def test_stop_word_list_is_nltk_english() -> None:
    assert len(STOP_WORDS) == 179
    assert {"the", "no", "not", "wouldn't", "ourselves"} <= STOP_WORDS
    assert "paris" not in STOP_WORDS


def test_numbers_must_agree_for_a_gold_answer_with_a_number() -> None:
    from exam_harness.graders.matching import numbers_agree, numbers_of

    assert numbers_of("1,000 bees and 2.5 kg") == ["1000", "2.5"]
    assert not numbers_agree("30 kilogram", "20 kilograms")
    assert numbers_agree("20 kilogram", "20 kilograms")
    assert numbers_agree("anything at all", "honey")  # no number in the gold answer: nothing to agree on
