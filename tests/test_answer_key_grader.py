"""The answer-key grader: gold answers found in a passage span under the method's answer check."""

from __future__ import annotations

import pytest

from exam_harness.errors import ConfigError
from exam_harness.graders.answer_key import AnswerKeyGrader, best_span
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.models import Passage, Query, TestPoint


def grade(passage: str, *answers: str) -> tuple[int, str | None]:
    tp = TestPoint(id="q/1", query_id="q", kind="question", text="question?", gold_answers=answers)
    result = AnswerKeyGrader(GraderConfig()).grade_batch([GradingRequest(Query(id="q", text="q"), tp, Passage(id="p", text=passage))])[0]
    return result.grade, result.extracted_answer  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("passage", "answers", "expected"),
    [
        ("Most coasts see two high tides each day.", ("two",), 1),
        ("The sky is blue because of Rayleigh scatterings of light.", ("Rayleigh scattering",), 1),  # stemming
        ("It was the Rayleigh-Jeans law.", ("Rayleigh scattering",), 0),
        ("B cells become plasma cells that make antibodies.", ("plasma cells", "B cells"), 1),
        ("Plants release oxygen gas.", ("oxygen",), 1),
        ("Plants release carbon dioxide at night.", ("oxygen",), 0),
        ("Rayleigh scattering makes it blue.", ("Rayleigh scatering",), 1),  # a typo: 1 edit in 16 characters
        ("The Eiffel Tower is in Pisa.", ("Paris",), 0),  # 2 edits in 5 characters: 40%
        ("", ("oxygen",), 0),
    ],
)
def test_answer_check_table(passage: str, answers: tuple[str, ...], expected: int) -> None:
    assert grade(passage, *answers)[0] == expected


def test_best_span_is_reported_for_verification() -> None:
    assert grade("Most coasts see two high tides each day.", "two")[1] == "two"
    assert best_span(["sky", "blue", "rayleigh", "scatter"], "rayleigh scatter") == ("rayleigh scatter", 0.0)


def test_test_points_without_gold_answers_are_not_supported() -> None:
    grader = AnswerKeyGrader(GraderConfig())
    assert grader.supports(TestPoint(id="q/1", query_id="q", kind="question", text="why?")) == "it has no gold answers"
    assert grader.spec().max_grade == 1 and grader.spec().default_min_grade == 1


def test_options_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"grader 'answer-key': unknown option 'x'. Available: \(none\)"):
        AnswerKeyGrader(GraderConfig(options={"x": "1"}))
