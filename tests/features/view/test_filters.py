"""The search language of the viewer (filters.py): what each word selects."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exam_harness.features.view.filters import Filter, parse
from exam_harness.results.schema import TestPointOutcome

OUTCOMES = ("answered", "missed", "required-missed", "error", "skipped")


def outcome(run: str = "weak-ranker", query: str = "tides", point: str = "tides/why-the-moon", *,
            text: str | None = "Why does the moon pull?", result: str = "missed", required: bool = False
            ) -> TestPointOutcome:
    return TestPointOutcome(run=run, query_id=query, test_point_id=point, kind="question", required=required,
                            text=text, outcome=result)


def test_words_fields_and_flags() -> None:
    chosen = parse('run:Weak query:tid "the moon" missed not:required')
    assert chosen == Filter(runs=("weak",), queries=("tid",), words=("the moon",), flags=frozenset({"missed"}),
                            negated=frozenset({"required"}))
    assert chosen.matches(outcome())
    assert not chosen.matches(outcome(required=True, result="required-missed"))
    assert not chosen.matches(outcome(run="strong-ranker"))
    assert not chosen.matches(outcome(result="answered"))
    assert parse("id:MOON").matches(outcome()) and not parse("id:sun").matches(outcome())
    assert parse("-missed") == Filter(negated=frozenset({"missed"}))
    assert parse("").empty


def test_a_secret_test_point_matches_on_its_id_only() -> None:
    assert parse("moon").matches(outcome(text=None))  # the id holds it
    assert not parse("pull").matches(outcome(text=None))


def test_flaky_and_decided_by_read_what_they_are_given() -> None:
    case = outcome()
    assert parse("flaky").matches(case, flaky={("weak-ranker", "tides/why-the-moon")})
    assert not parse("flaky").matches(case, flaky=set())
    assert parse("by:answer").matches(case, decided_by=lambda o: "answer-key")
    assert not parse("decided-by:answer").matches(case, decided_by=lambda o: "embedding")
    assert not parse("by:answer").matches(case)  # nothing says who decided: no match
    assert parse("by:x").needs_decider and parse("not:flaky").needs_flaky


@pytest.mark.parametrize(("text", "says"), [("-tide", "only a flag can be negated"), ("run:", "needs a value"),
                                            ('"open', "cannot read the filter")])
def test_a_word_that_cannot_be_read_is_named(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse(text)


@given(st.lists(st.tuples(st.sampled_from(["weak-ranker", "strong-ranker", "gen"]), st.sampled_from(OUTCOMES),
                          st.booleans()), max_size=30),
       st.sampled_from(["missed", "answered", "required"]))
def test_a_flag_and_its_negation_split_the_outcomes(cases: list[tuple[str, str, bool]], flag: str) -> None:
    outcomes = [outcome(run, result=result, required=required) for run, result, required in cases]
    held = [o for o in outcomes if parse(flag).matches(o)]
    not_held = [o for o in outcomes if parse(f"not:{flag}").matches(o)]
    assert len(held) + len(not_held) == len(outcomes) and not set(map(id, held)) & set(map(id, not_held))
    assert all(o.run.startswith("weak") for o in outcomes if parse(f"run:weak {flag}").matches(o))
