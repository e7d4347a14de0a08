"""Grade x judgment tables, binarisation and Cohen's kappa."""

from __future__ import annotations

import math

import pytest

from exam_harness.measures.kappa import binarised, cohen_kappa, grade_judgment_table

LABELS = {("q1", "a"): 5, ("q1", "b"): 0, ("q1", "c"): 3, ("q2", "x"): 4, ("q2", "unjudged"): 5}
JUDGMENTS = {"q1": {"a": 2, "b": 0, "c": 1, "d": 3}, "q2": {"x": 0}}


def test_table_counts_judged_and_labelled_passages() -> None:
    table = grade_judgment_table(LABELS, JUDGMENTS)
    assert table == {
        0: {0: 1, 1: 0, 2: 0},
        3: {0: 0, 1: 1, 2: 0},
        4: {0: 1, 1: 0, 2: 0},
        5: {0: 0, 1: 0, 2: 1},
    }  # d has no label, "unjudged" no judgment: both left out


def test_binarised() -> None:
    table = grade_judgment_table(LABELS, JUDGMENTS)
    assert binarised(table, 4, 2) == {1: {1: 1, 0: 1}, 0: {1: 0, 0: 2}}
    assert binarised(table, 1, 1) == {1: {1: 2, 0: 1}, 0: {1: 0, 0: 1}}


def test_kappa_hand_value() -> None:
    # p_o = 35/50 = 0.7, p_e = (25*30 + 25*20)/2500 = 0.5, kappa = 0.2/0.5
    assert cohen_kappa({1: {1: 20, 0: 5}, 0: {1: 10, 0: 15}}) == pytest.approx(0.4)
    assert cohen_kappa({1: {1: 10, 0: 0}, 0: {1: 0, 0: 10}}) == pytest.approx(1.0)
    assert cohen_kappa({1: {1: 0, 0: 10}, 0: {1: 10, 0: 0}}) == pytest.approx(-1.0)


def test_kappa_undefined_is_nan() -> None:
    assert math.isnan(cohen_kappa({}))
    assert math.isnan(cohen_kappa({1: {1: 7, 0: 0}, 0: {1: 0, 0: 0}}))


def test_kappa_matches_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    table = {1: {1: 13, 0: 4}, 0: {1: 9, 0: 21}}
    rows: list[int] = []
    cols: list[int] = []
    for g, row in table.items():
        for j, count in row.items():
            rows += [g] * count
            cols += [j] * count
    assert cohen_kappa(table) == pytest.approx(metrics.cohen_kappa_score(rows, cols))
    three = {0: {0: 5, 1: 2, 2: 1}, 1: {0: 1, 1: 6, 2: 2}, 2: {1: 1, 2: 7}}
    rows, cols = [], []
    for g, row in three.items():
        for j, count in row.items():
            rows += [g] * count
            cols += [j] * count
    assert cohen_kappa(three) == pytest.approx(metrics.cohen_kappa_score(rows, cols))
