"""EXAM-Cover, n-EXAM and mean/stderr on hand-computed cases, through the measure objects."""

from __future__ import annotations

import math

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.measures import ExamCover, NExam, ScoringContext, ScoringInput, parse_measure, score
from exam_harness.measures.cover import covered_by, passage_coverage
from exam_harness.measures.stats import mean_stderr

# q1 bank t1..t4, q2 bank u1,u2, q4 bank nobody covers (an empty bank is not an exam query).
TEST_POINTS = {"q1": ["t1", "t2", "t3", "t4"], "q2": ["u1", "u2"], "q4": ["v1"]}
GRADES = {("p1", "t1"): 5, ("p1", "t2"): 3, ("p2", "t2"): 4, ("p2", "t3"): 1, ("p3", "t4"): 4, ("r1", "u1"): 4}
RUN_A = {"q1": ["p1", "p2", "p3"], "qX": ["zz"], "q4": ["s1"]}  # q2 unanswered, qX not in the bank
RUN_B = {"q1": ["p4", "p3"], "q2": ["r1", "r2"], "q4": ["s1"]}


def context(rankings: dict[str, dict[str, list[str]]], judged: dict[str, list[str]] | None = None,
            test_points: dict[str, list[str]] | None = None) -> ScoringContext:
    tps = test_points or TEST_POINTS
    return ScoringContext(ScoringInput(queries=list(tps), test_points=tps, rankings=rankings, grades=GRADES,
                                       judged=judged or {}))


def cover(rankings: dict[str, dict[str, list[str]]], run: str, k: int, tau: int, **kw: object) -> dict[str, float]:
    return dict(ExamCover(k=k, min_grade=tau).compute(context(rankings, **kw))[run])  # type: ignore[arg-type]


def test_exam_cover_hand_values() -> None:
    runs = {"A": RUN_A, "B": RUN_B}
    assert cover(runs, "A", 2, 4) == {"q1": 0.5, "q2": 0.0, "q4": 0.0}
    assert cover(runs, "A", 3, 4)["q1"] == 0.75
    assert cover(runs, "A", 3, 5)["q1"] == 0.25
    assert cover(runs, "A", 1, 3)["q1"] == 0.5  # p1 covers t1 (5), t2 (3)
    assert cover(runs, "B", 2, 4) == {"q1": 0.25, "q2": 0.5, "q4": 0.0}


def test_covered_sets_and_ignored_queries() -> None:
    ctx = context({"A": RUN_A})
    assert {q: ctx.covered("A", q, 2, 4) for q in ctx.queries} == {"q1": {"t1", "t2"}, "q2": set(), "q4": set()}
    assert "qX" not in ExamCover(k=2, min_grade=4).compute(ctx)["A"]  # outside the bank


def test_duplicate_test_point_ids_count_once() -> None:
    assert cover({"A": {"q1": ["p1"]}}, "A", 1, 5, test_points={"q1": ["t1", "t1", "t2"]}) == {"q1": 0.5}


def test_a_pair_without_a_grade_counts_zero() -> None:
    assert cover({"A": {"q1": ["p9"]}}, "A", 1, 1) == {"q1": 0.0, "q2": 0.0, "q4": 0.0}


@pytest.mark.parametrize("text", ["exam-cover(tau=0)@20", "exam-cover@0", "exam-cover(tau=x)@2"])
def test_bad_parameters_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_measure(text)


def test_overall_and_n_exam() -> None:
    ctx = context({"A": RUN_A, "B": RUN_B})
    assert ctx.overall(4, "top-k", 2) == {"q1": {"t1", "t2", "t4"}, "q2": {"u1"}, "q4": frozenset()}
    # q4: nobody covers anything -> left out of n-EXAM (empty=skip) or 0 (empty=zero, the reference's choice)
    skip = NExam(k=2, min_grade=4, pool="top-k", empty="skip").compute(ctx)
    assert skip["A"] == {"q1": 2 / 3, "q2": 0.0} and skip["B"] == {"q1": 1 / 3, "q2": 1.0}
    zero = NExam(k=2, min_grade=4, pool="top-k", empty="zero").compute(ctx)
    assert zero["B"] == {"q1": 1 / 3, "q2": 1.0, "q4": 0.0}


def test_judged_passages_join_the_pool() -> None:
    ctx = context({"B": RUN_B}, judged={"q1": ["p1"]})
    assert ctx.overall(4, "judged", 2)["q1"] == {"t1", "t4"}  # p1 joins (t1: 5; its t2 grade 3 is below 4)
    assert ctx.overall(4, "top-k", 2)["q1"] == {"t4"}


def test_means_and_stderr_through_the_pipeline() -> None:
    cover_m, n_exam = ExamCover(k=2, min_grade=4), NExam(k=2, min_grade=4, pool="top-k", empty="skip")
    result = score(context({"A": RUN_A, "B": RUN_B}), [cover_m, n_exam])
    a = result[cover_m].scores["A"]
    assert result[cover_m].per_query["A"] == {"q1": 0.5, "q2": 0.0, "q4": 0.0}
    # mean of (1/2, 0, 0) = 1/6; sample variance = (1/9 + 1/36 + 1/36) / 2 = 1/12; stderr = sqrt(1/12)/sqrt(3) = 1/6
    assert a.mean == pytest.approx(1 / 6) and a.stderr == pytest.approx(1 / 6)
    n = result[n_exam].scores["A"]
    assert n.mean == pytest.approx(1 / 3)  # mean of (2/3, 0)
    assert n.stderr == pytest.approx(1 / 3)  # stdev = sqrt(2/9) = 0.4714, / sqrt(2)
    assert result["n-exam-cover(tau=4,pool=top-k,empty=skip)@2"].scores["B"].mean == pytest.approx(2 / 3)


def test_passage_coverage() -> None:
    cov = passage_coverage(GRADES, TEST_POINTS["q1"], ["p1", "p2", "p1"], min_grade=3)
    assert cov == {"p1": frozenset({"t1", "t2"}), "p2": frozenset({"t2"})}
    assert covered_by(cov, ["p1", "p2"]) == {"t1", "t2"}


def test_mean_stderr() -> None:
    assert mean_stderr([]) == (0.0, 0.0)
    assert mean_stderr([3.0]) == (3.0, 0.0)
    mean, se = mean_stderr([1, 2, 3, 4])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)  # sample variance 5/3 (n-1), n = 4


def test_measures_print_and_parse_back() -> None:
    for m in (ExamCover(k=20, min_grade=4), NExam(k=10, min_grade=3, pool="judged", empty="zero")):
        assert parse_measure(str(m)) == m
    assert str(ExamCover(k=20, min_grade=4)) == "exam-cover(tau=4)@20"
