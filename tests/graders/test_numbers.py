"""Numbers (issue 35, item 6): a passage stating another number than the gold answer, in its unit, does not pass
the default grader by its support; the answer key does not count a gold answer whose number its sentence denies."""

from __future__ import annotations

import pytest

from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.graders.answer_key import AnswerKeyGrader
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.embedding import NUMBER_CAP, EmbeddingGrader
from exam_harness.graders.matching import denies_gold, number_mentions, other_number, unit_name


@pytest.mark.parametrize(("text", "gold", "question", "other"), [
    ("Panels are rated at 250 watts.", "400 watts", None, "250 watts"),
    ("A 10 kWh battery covers an evening.", "13.5 kWh", None, "10 kWh"),
    ("Panels lose 2% of their output in the first year.", "0.5%", None, "2%"),
    ("It lasts far fewer than 6,000 cycles.", "6,000 cycles", None, "6,000 cycles"),  # denied: not the gold's
    ("Rated at 250 W.", "400 watts", None, "250 W"),  # the unit's symbol is the unit
    ("Rated at 250 watts.", "400", "How many watts is a panel rated at?", "250 watts"),  # the question's unit
    ("Rated at 400 watts, not 250 watts.", "400 watts", None, None),  # states the gold's number too
    ("It takes about 10 minutes.", "5 to 10 minutes", None, None),  # within the gold's range
    ("It takes 5 to 10 minutes.", "5 to 10 minutes", None, None),
    ("The loft holds 250 litres.", "400 watts", None, None),  # another unit: not the question's number
    ("Rated at four hundred watts.", "400 watts", None, None),  # no number written with digits
    ("Rated at 250 watts.", "twice a day", None, None),  # a gold answer without a number
])
def test_another_number_in_the_gold_answers_unit(text: str, gold: str, question: str | None, other: str | None) -> None:
    found = other_number(text, [gold], question)
    assert (found.text if found is not None else None) == other


@pytest.mark.parametrize(("text", "gold", "denied"), [
    ("LFP cells last far fewer than 6,000 cycles.", "6,000 cycles", True),
    ("It is not 6,000 cycles but nearer 3,000.", "6,000 cycles", True),
    ("designed for 45 degrees rather than 70 degrees", "70 degrees", True),
    ("LFP cells last no more than 6,000 cycles.", "6,000 cycles", False),  # a bound, not a denial
    ("LFP cells last up to 6,000 cycles.", "6,000 cycles", False),
    ("Not quite. They last 6,000 cycles, far more than lead.", "6,000 cycles", False),  # the denial is elsewhere
    ("far fewer than 6,000 cycles, though some reach 6,000 cycles", "6,000 cycles", False),  # stated plainly once
    ("far fewer than 6,000 cycles", "twice a day", False),
])
def test_a_gold_number_its_sentence_denies(text: str, gold: str, denied: bool) -> None:
    assert denies_gold(text, gold) is denied


def test_units_are_named_alike_however_written() -> None:
    assert {unit_name(u) for u in ("kWh", "kilowatt-hours", "kilowatt-hour")} == {"kilowatt-hour"}
    assert {unit_name(u) for u in ("%", "per cent", "percent")} == {"percent"}
    assert {unit_name(u) for u in ("°C", "degrees", "Celsius")} == {"degree"}
    assert [m.numbers for m in number_mentions("between 5 and 10 minutes, then 3,500 kWh")] == [("5", "10"), ("3500",)]


def request(question: str, gold: str, passage: str, qid: str = "solar") -> GradingRequest:
    tp = TestPoint(id=f"{qid}/1", query_id=qid, kind="question", text=question, gold_answers=(gold,))
    return GradingRequest(Query(id=qid, text="home solar panels and batteries"), tp, Passage(id="p", text=passage))


# The issue's wrong-number passages, each beside the same passage stating the gold answer's number.
ISSUE_CASES = [
    ("What power is a typical new rooftop solar panel rated at?", "400 watts",
     "A typical new rooftop solar panel is rated at {} and measures about 1.7 by 1 metres.", "250 watts"),
    ("How much energy does a Powerwall home battery store?", "13.5 kWh",
     "The Powerwall is a {} battery that stores the surplus from the panels for the evening.", "10 kWh"),
    ("How much of their output do solar panels lose in the first year?", "0.5%",
     "Solar panels lose {} of their output in the first year, and a little less every year after that.", "2%"),
]


@pytest.fixture(scope="module")
def embedding() -> EmbeddingGrader:
    return EmbeddingGrader(GraderConfig())


@pytest.mark.parametrize(("question", "gold", "passage", "wrong"), ISSUE_CASES)
def test_the_issues_wrong_numbers_do_not_pass_the_default_grader(embedding: EmbeddingGrader, question: str,
                                                                  gold: str, passage: str, wrong: str) -> None:
    requests = [request(question, gold, passage.format(wrong)), request(question, gold, passage.format(gold))]
    embedding.prepare(requests)
    bad, good = embedding.grade_batch(requests)
    assert isinstance(bad, Grade) and isinstance(good, Grade)
    tau = embedding.spec().default_min_grade
    assert bad.grade == NUMBER_CAP < tau and good.grade >= tau
    assert bad.details["other_number"] == wrong and f"states {wrong!r}" in (bad.raw_response or "")
    # the support is the model's all the same: a cascade's filter still sends the pair to its decider
    assert bad.details["support"] == pytest.approx(good.details["support"], abs=0.2)


def test_the_answer_key_does_not_pass_a_gold_number_its_sentence_denies() -> None:
    question = "How many charge cycles do LFP home batteries last?"
    requests = [request(question, "6,000 cycles", "LFP home batteries last far fewer than 6,000 cycles in hot lofts."),
                request(question, "6,000 cycles", "LFP home batteries last about 6,000 cycles before they fade.")]
    denied, stated = AnswerKeyGrader(GraderConfig()).grade_batch(requests)
    assert isinstance(denied, Grade) and isinstance(stated, Grade)
    assert (denied.grade, stated.grade) == (0, 1)
    assert "only where its sentence denies it" in (denied.raw_response or "")
