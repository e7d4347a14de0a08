"""Nugget pyramid weights and nugget F on hand-computed cases."""

from __future__ import annotations

import pytest

from exam_harness.core.errors import InputError
from exam_harness.measures import NuggetF, ScoringContext, ScoringInput
from exam_harness.measures.nuggets import nugget_f, pyramid_weights, response_length

WEIGHTS = {"a": 1.0, "b": 0.5, "c": 0.5}


def text_of(chars: int) -> str:
    """A response with exactly ``chars`` non-whitespace characters (and whitespace besides)."""
    words = ["x" * 10] * (chars // 10) + (["y" * (chars % 10)] if chars % 10 else [])
    return " \n".join(words) + "\t "


def test_pyramid_weights() -> None:
    assert pyramid_weights({"a": 3, "b": 1, "c": 0}) == {"a": 1.0, "b": pytest.approx(1 / 3), "c": 0.0}
    assert pyramid_weights({"vital": 1, "okay": 0}) == {"vital": 1.0, "okay": 0.0}  # TREC vital/okay
    assert pyramid_weights({"a": 0, "b": 0}) == {"a": 0.0, "b": 0.0}
    assert pyramid_weights({}) == {}
    with pytest.raises(InputError, match="vital count of nugget 'b'"):
        pyramid_weights({"a": 1, "b": -1})


def test_response_length_ignores_whitespace() -> None:
    assert response_length(" ab\tc\n d ") == 4
    assert response_length(text_of(257)) == 257


def test_precision_penalised_beyond_allowance() -> None:
    score = nugget_f(text_of(250), WEIGHTS, ["a", "b"], beta=3.0)
    assert score.allowance == 200 and score.length == 250
    assert score.recall == pytest.approx(1.5 / 2.0)
    assert score.precision == pytest.approx(1 - 50 / 250)
    assert score.f == pytest.approx(10 * 0.8 * 0.75 / (9 * 0.8 + 0.75))


def test_precision_is_one_within_allowance() -> None:
    score = nugget_f(text_of(150), WEIGHTS, ["a", "b", "b"], beta=3.0)  # a nugget matched twice counts once
    assert score.precision == 1.0
    assert score.f == pytest.approx(10 * 0.75 / (9 + 0.75))
    five = nugget_f(text_of(150), WEIGHTS, {"a", "b"}, beta=5.0)
    assert five.f == pytest.approx(26 * 0.75 / (25 + 0.75))


def test_allowance_counts_nuggets_not_weight() -> None:
    light = nugget_f(text_of(150), {"a": 1.0, "z": 0.0}, ["z"], beta=3.0)
    assert light.allowance == 100 and light.recall == 0.0
    assert light.precision == pytest.approx(1 - 50 / 150)
    assert light.f == 0.0


def test_nothing_matched() -> None:
    assert nugget_f(text_of(40), WEIGHTS, [], beta=3.0).f == 0.0
    empty = nugget_f("", WEIGHTS, [], beta=3.0)
    assert (empty.recall, empty.precision, empty.f) == (0.0, 1.0, 0.0)
    zero_bank = nugget_f("abc", {"a": 0.0}, ["a"], beta=3.0)
    assert zero_bank.recall == 0.0 and zero_bank.f == 0.0


def test_nugget_f_errors() -> None:
    with pytest.raises(InputError, match="not in the weights"):
        nugget_f("text", WEIGHTS, ["a", "zz"], beta=3.0)
    with pytest.raises(InputError, match="beta"):
        nugget_f("text", WEIGHTS, ["a"], beta=0)


def test_nugget_f_measure_matches_the_covered_nuggets() -> None:
    grades = {("p1", "a"): 5, ("p2", "b"): 4}
    exam = ScoringInput(queries=["q"], test_points={"q": ["a", "b", "c"]}, rankings={"R": {"q": ["p1", "p2"]}},
                        grades=grades, nuggets={"q": {"a": 1.0, "b": 1.0}}, responses={"R": {"q": "x" * 150}})
    ctx = ScoringContext(exam)
    both = NuggetF(k=2, min_grade=4, beta=3.0).compute(ctx)["R"]["q"]
    assert both == pytest.approx(nugget_f("x" * 150, {"a": 1.0, "b": 1.0}, {"a", "b"}, beta=3.0).f)
    only_a = NuggetF(k=2, min_grade=5, beta=3.0).compute(ctx)["R"]["q"]
    assert only_a == pytest.approx(nugget_f("x" * 150, {"a": 1.0, "b": 1.0}, {"a"}, beta=3.0).f)
    assert NuggetF(k=1, min_grade=4, beta=3.0).compute(ctx)["R"]["q"] == only_a  # p2 is below the cut-off
