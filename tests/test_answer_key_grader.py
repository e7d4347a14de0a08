"""The answer-key grader: gold answers found in a passage span under the method's answer check."""

from __future__ import annotations

import pytest

from exam_harness.errors import ConfigError
from exam_harness.graders.answer_key import AnswerKeyGrader, best_span, gold_fingerprint
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.models import Grade, Passage, Query, TestPoint


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


def test_best_span_is_found() -> None:
    assert best_span(["sky", "blue", "rayleigh", "scatter"], "rayleigh scatter") == ("rayleigh scatter", 0.0)


def test_no_gold_answer_is_kept_in_clear() -> None:
    """Grades go to the grade cache: the matched gold answer is a fingerprint, and the matching span
    (a near copy of it) is not kept."""
    tp = TestPoint(id="q/1", query_id="q", kind="question", text="Which gas makes up most of the air?",
                   gold_answers=("argon", "nitrogen gas"))
    passage = Passage(id="p", text="Most of the air we breathe is nitrogen gas, with some oxygen.")
    result = AnswerKeyGrader(GraderConfig()).grade_batch([GradingRequest(Query(id="q", text="q"), tp, passage)])[0]
    assert isinstance(result, Grade) and result.grade == 1
    assert result.extracted_answer is None
    assert result.raw_response == "gold answer found in the passage (relative edit distance 0.00 < 0.2)"
    assert result.details == {"gold_fingerprint": gold_fingerprint(tp.text, "nitrogen gas"), "relative_distance": 0.0}
    stored = result.model_dump_json().lower()
    assert "nitrogen" not in stored and "argon" not in stored
    # Anyone holding the bank can tell which answer matched; the fingerprint depends on the question.
    assert gold_fingerprint(tp.text, "nitrogen gas") != gold_fingerprint(tp.text, "argon")
    assert gold_fingerprint("another question", "nitrogen gas") != gold_fingerprint(tp.text, "nitrogen gas")


@pytest.mark.parametrize(
    ("passage", "answers", "reason"),
    [
        ("Most coasts see two high tides each day.", ("two",),
         "gold answer found in the passage (relative edit distance 0.00 < 0.2)"),
        ("The Eiffel Tower is in Pisa.", ("Paris",),
         "no gold answer in the passage (closest span at relative edit distance 0.75 >= 0.2)"),
        ("", ("oxygen",), "no gold answer checked: the passage or the gold answers hold no words after normalising"),
    ],
)
def test_every_grade_says_why_without_quoting_a_gold_answer(passage: str, answers: tuple[str, ...],
                                                             reason: str) -> None:
    tp = TestPoint(id="q/1", query_id="q", kind="question", text="question?", gold_answers=answers)
    [result] = AnswerKeyGrader(GraderConfig()).grade_batch(
        [GradingRequest(Query(id="q", text="q"), tp, Passage(id="p", text=passage))])
    assert isinstance(result, Grade) and result.raw_response == reason
    assert all(gold.lower() not in reason.lower() for gold in answers)


def test_test_points_without_gold_answers_are_not_supported() -> None:
    grader = AnswerKeyGrader(GraderConfig())
    assert grader.supports(TestPoint(id="q/1", query_id="q", kind="question", text="why?")) == "it has no gold answers"
    assert grader.spec().max_grade == 1 and grader.spec().default_min_grade == 1


def test_options_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"grader 'answer-key': unknown option 'x'. Available: \(none\)"):
        AnswerKeyGrader(GraderConfig(options={"x": "1"}))
