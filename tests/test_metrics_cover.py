"""EXAM-Cover, n-EXAM and mean/stderr on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from exam_harness.errors import InputError
from exam_harness.metrics import (
    cover_scores,
    covered_test_points,
    exam_cover,
    mean_stderr,
    n_exam_cover,
    overall_cover,
    passage_coverage,
)

# q1 bank t1..t4, q2 bank u1,u2, q3 empty bank, q4 bank nobody covers.
TEST_POINTS = {"q1": ["t1", "t2", "t3", "t4"], "q2": ["u1", "u2"], "q3": [], "q4": ["v1"]}
SPARSE = {("p1", "t1"): 5, ("p1", "t2"): 3, ("p2", "t2"): 4, ("p2", "t3"): 1, ("p3", "t4"): 4, ("r1", "u1"): 4}
PASSAGES = {"q1": ["p1", "p2", "p3", "p4"], "q2": ["r1", "r2"], "q4": ["s1"]}


def complete(sparse: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """Every (passage, test point) pair of each query, ungraded pairs 0."""
    full = {}
    for qid, pids in PASSAGES.items():
        for pid in pids:
            for tp in TEST_POINTS[qid]:
                full[(pid, tp)] = sparse.get((pid, tp), 0)
    return full


GRADES = complete(SPARSE)
RUN_A = {"q1": ["p1", "p2", "p3"], "qX": ["zz"], "q4": ["s1"]}  # q2 unanswered, qX not in the bank
RUN_B = {"q1": ["p4", "p3"], "q2": ["r1", "r2"], "q4": ["s1"]}


def test_exam_cover_hand_values() -> None:
    assert exam_cover(RUN_A, TEST_POINTS, GRADES, k=2, min_grade=4) == {"q1": 0.5, "q2": 0.0, "q4": 0.0}
    assert exam_cover(RUN_A, TEST_POINTS, GRADES, k=3, min_grade=4)["q1"] == 0.75
    assert exam_cover(RUN_A, TEST_POINTS, GRADES, k=3, min_grade=5)["q1"] == 0.25
    assert exam_cover(RUN_A, TEST_POINTS, GRADES, k=1, min_grade=3)["q1"] == 0.5  # p1 covers t1 (5), t2 (3)
    assert exam_cover(RUN_B, TEST_POINTS, GRADES, k=2, min_grade=4) == {"q1": 0.25, "q2": 0.5, "q4": 0.0}


def test_covered_sets_and_ignored_queries() -> None:
    covered = covered_test_points(RUN_A, TEST_POINTS, GRADES, k=2, min_grade=4)
    assert covered == {"q1": {"t1", "t2"}, "q2": set(), "q4": set()}
    assert "qX" not in covered and "q3" not in covered  # outside the bank / empty bank


def test_duplicate_test_point_ids_count_once() -> None:
    bank = {"q1": ["t1", "t1", "t2"]}
    assert exam_cover({"q1": ["p1"]}, bank, GRADES, k=1, min_grade=5) == {"q1": 0.5}


def test_missing_grade_policy() -> None:
    with pytest.raises(InputError, match="no grade for passage 'p1' on test point 't3' of query 'q1'"):
        exam_cover(RUN_A, TEST_POINTS, SPARSE, k=2, min_grade=4)
    assert exam_cover(RUN_A, TEST_POINTS, SPARSE, k=2, min_grade=4, missing="zero") == {
        "q1": 0.5, "q2": 0.0, "q4": 0.0,
    }
    with pytest.raises(InputError, match="missing"):
        exam_cover(RUN_A, TEST_POINTS, GRADES, k=2, min_grade=4, missing="ignore")


@pytest.mark.parametrize(("k", "min_grade"), [(0, 4), (-1, 4), (2, 0), (2, True)])
def test_bad_parameters_are_input_errors(k: int, min_grade: int) -> None:
    with pytest.raises(InputError):
        exam_cover(RUN_A, TEST_POINTS, GRADES, k=k, min_grade=min_grade)


def test_overall_and_n_exam() -> None:
    rankings = {"A": RUN_A, "B": RUN_B}
    overall = overall_cover(rankings, TEST_POINTS, GRADES, k=2, min_grade=4)
    assert overall == {"q1": {"t1", "t2", "t4"}, "q2": {"u1"}, "q4": set()}
    # q4: nobody covers anything -> left out of n-EXAM (default) or 0 (the reference's choice)
    assert n_exam_cover(RUN_A, TEST_POINTS, GRADES, k=2, min_grade=4, overall=overall) == {"q1": 2 / 3, "q2": 0.0}
    assert n_exam_cover(RUN_B, TEST_POINTS, GRADES, k=2, min_grade=4, overall=overall) == {"q1": 1 / 3, "q2": 1.0}
    zero = n_exam_cover(RUN_B, TEST_POINTS, GRADES, k=2, min_grade=4, overall=overall, empty="zero")
    assert zero == {"q1": 1 / 3, "q2": 1.0, "q4": 0.0}


def test_overall_cover_extra_passages_join_the_pool() -> None:
    overall = overall_cover({"B": RUN_B}, TEST_POINTS, GRADES, k=2, min_grade=4, extra_passages={"q1": ["p1"]})
    assert overall["q1"] == {"t1", "t4"}  # p1 joins (t1: 5; its t2 grade 3 is below 4)
    assert overall_cover({"B": RUN_B}, TEST_POINTS, GRADES, k=2, min_grade=4)["q1"] == {"t4"}


def test_n_exam_rejects_an_overall_cover_without_the_run() -> None:
    overall = overall_cover({"B": RUN_B}, TEST_POINTS, GRADES, k=2, min_grade=4)
    with pytest.raises(InputError, match="outside the overall cover"):
        n_exam_cover(RUN_A, TEST_POINTS, GRADES, k=2, min_grade=4, overall=overall)


def test_cover_scores_means_and_stderr() -> None:
    scores = cover_scores({"A": RUN_A, "B": RUN_B}, TEST_POINTS, GRADES, k=2, min_grade=4)
    a = scores["A"]
    assert a.exam_per_query == {"q1": 0.5, "q2": 0.0, "q4": 0.0}
    # mean of (1/2, 0, 0) = 1/6; sample variance = (1/9 + 1/36 + 1/36) / 2 = 1/12; stderr = sqrt(1/12)/sqrt(3) = 1/6
    assert a.exam == pytest.approx(1 / 6)
    assert a.exam_stderr == pytest.approx(1 / 6)
    assert a.n_exam == pytest.approx(1 / 3)  # mean of (2/3, 0)
    assert a.n_exam_stderr == pytest.approx(1 / 3)  # stdev = sqrt(2/9) = 0.4714, / sqrt(2)
    assert scores["B"].n_exam == pytest.approx(2 / 3)


def test_passage_coverage() -> None:
    cov = passage_coverage("q1", ["p1", "p2", "p1"], TEST_POINTS["q1"], GRADES, min_grade=3)
    assert cov == {"p1": frozenset({"t1", "t2"}), "p2": frozenset({"t2"})}


def test_mean_stderr() -> None:
    assert mean_stderr([]) == (0.0, 0.0)
    assert mean_stderr([3.0]) == (3.0, 0.0)
    mean, se = mean_stderr([1, 2, 3, 4])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)  # sample variance 5/3 (n-1), n = 4
