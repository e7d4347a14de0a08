"""The answer-key grader: gold answers found in a passage span under the method's answer check."""

from __future__ import annotations

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.graders.answer_key import AnswerKeyGrader, best_span, gold_fingerprint
from exam_harness.graders.base import GraderConfig, GradingRequest


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


# -- issue 30: an answer key that reads the answer ---------------------------------------------------------

BEES = Query(id="bees", text="urban beekeeping")


def graded_pool(question: str, gold: str, passages: list[str]) -> list[Grade]:
    """Every passage of one query's pool graded against one question, the pass prepared as the grading pass
    prepares it (the pool is what makes a gold answer common)."""
    tp = TestPoint(id="bees/1", query_id="bees", kind="question", text=question, gold_answers=(gold,))
    requests = [GradingRequest(BEES, tp, Passage(id=f"p{i}", text=text)) for i, text in enumerate(passages)]
    grader = AnswerKeyGrader(GraderConfig())
    grader.prepare(requests)
    results = grader.grade_batch(requests)
    assert all(isinstance(r, Grade) for r in results)
    return [r for r in results if isinstance(r, Grade)]


def test_a_gold_answer_with_a_number_matches_only_that_number() -> None:
    assert grade("Leave about 30 kilograms of honey in the hive for the winter.", "20 kilograms")[0] == 0
    assert grade("Leave about 20 kilograms of honey in the hive for the winter.", "20 kilograms")[0] == 1
    assert grade("A colony needs 20 kilogram of stores.", "20 kilograms")[0] == 1  # the unit, stemmed
    assert grade("Leave about 20 pounds of honey in the hive.", "20 kilograms")[0] == 0


HONEY_POOL = [
    "Honey bees forage up to three kilometres from the hive in a city.",
    "Urban honey often tastes of lime trees and garden flowers.",
    "Extract the honey once most cells of the frame are capped.",
    "Our neighbours were given a jar of honey as a thank-you for putting up with the bees.",
    "Rooftop hives need a windbreak; honey yields fall on exposed roofs.",
    "A hive inspection every week in spring keeps the colony from swarming.",
]


def test_a_gold_answer_found_in_most_passages_of_the_pool_decides_nothing_alone() -> None:
    grades = graded_pool("What gift did the beekeeper give the neighbours?", "honey", HONEY_POOL)
    assert [g.grade for g in grades] == [0] * len(HONEY_POOL)
    assert all("common word of the pool" in (g.raw_response or "") for g in grades)
    # the same answer, in a pool where it is not common, is found where it stands
    rare = graded_pool("What gift did the beekeeper give the neighbours?", "honey",
                       [HONEY_POOL[3], *(f"The council collects garden waste on day {i}." for i in range(5))])
    assert [g.grade for g in rare] == [1, 0, 0, 0, 0, 0]


def test_a_one_word_season_common_in_the_pool_is_not_found_in_a_passage_about_something_else() -> None:
    pool = ["The spring blossom is over, so the bees now forage on clover.",
            "In spring the queen lays up to two thousand eggs a day.",
            "Feed sugar syrup in early spring if the stores run low.",
            "Swarms are most likely in late spring and early summer.",
            "Check the varroa count in autumn before winter feeding."]
    grades = graded_pool("In which season is honey from lime trees harvested?", "spring", pool)
    assert grades[0].grade == 0
