"""Agreement of grades with human judgments (docs/method.md, "Human oversight"): count tables and Cohen's kappa.

Tables are nested mappings ``counts[row][column]``: for :func:`grade_judgment_table` the row is the
passage's label from grades (e.g. the max grade) and the column the human judgment level; for
:func:`binarised` both are 1 (positive) / 0 (negative), rows the grade side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from exam_harness.measures._checks import check_min_grade

Table = dict[int, dict[int, int]]

LENIENT_MIN_GRADE = 1  # the method's lenient binarisation, grade >= 1
STRICT_MIN_GRADE = 4  # the method's strict binarisation, grade >= 4


def grade_judgment_table(
    labels: Mapping[tuple[str, str], int], judgments: Mapping[str, Mapping[str, int]]
) -> Table:
    """Counts of (label, judgment level) over judged passages that have a label.

    The table is dense over the observed labels x observed levels (absent combinations are 0).
    """
    pairs: list[tuple[int, int]] = []
    for qid, judged in judgments.items():
        for pid, level in judged.items():
            label = labels.get((qid, pid))
            if label is not None:
                pairs.append((int(label), int(level)))
    rows = sorted({g for g, _ in pairs})
    cols = sorted({j for _, j in pairs})
    table: Table = {g: dict.fromkeys(cols, 0) for g in rows}
    for g, j in pairs:
        table[g][j] += 1
    return table


def binarised(table: Mapping[int, Mapping[int, int]], min_grade: int, relevance_level: int) -> Table:
    """Collapse a grade x judgment table to 2x2: row 1 iff grade >= min_grade, column 1 iff level >= relevance_level."""
    check_min_grade(min_grade)
    out: Table = {1: {1: 0, 0: 0}, 0: {1: 0, 0: 0}}
    for grade, row in table.items():
        for level, count in row.items():
            out[int(grade >= min_grade)][int(level >= relevance_level)] += count
    return out


def cohen_kappa(table: Mapping[int, Mapping[int, int]]) -> float:
    """Cohen's kappa of a square agreement table (same categories for rows and columns).

    kappa = (p_o - p_e) / (1 - p_e); NaN when undefined (empty table, or p_e = 1).
    """
    cats = sorted(set(table) | {c for row in table.values() for c in row})
    n = sum(count for row in table.values() for count in row.values())
    if n == 0:
        return math.nan
    observed = sum(table.get(c, {}).get(c, 0) for c in cats) / n
    row_tot = {c: sum(table.get(c, {}).values()) for c in cats}
    col_tot = {c: sum(row.get(c, 0) for row in table.values()) for c in cats}
    expected = sum(row_tot[c] * col_tot[c] for c in cats) / (n * n)
    if expected == 1.0:
        return math.nan
    return (observed - expected) / (1.0 - expected)
