"""Grades against human judgments (docs/method.md, "Human oversight"): count tables and Cohen's kappa.

Tables are nested mappings ``counts[row][column]``: for :func:`grade_judgment_table` the row is the
passage's label from grades (e.g. the max grade) and the column the human judgment level; for
:func:`binarised` and :func:`one_vs_rest` both are 1 (positive) / 0 (negative), rows the grade side;
for :func:`merged` both are group positions, the best group highest.

Label rules: the max grade, or the m-th highest grade (:func:`mth_highest`, "min answers = m"); a
direct grade is a label by itself. Views of one table: binarised at a minimum grade, merged into
three groups (:data:`MERGED_GRADES` x :func:`merged_judgment_levels`), and one row against the rest
(:func:`row_kappas`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from exam_harness.core.errors import InputError
from exam_harness.measures._checks import check_min_grade

Table = dict[int, dict[int, int]]

LENIENT_MIN_GRADE = 1  # the method's lenient binarisation, grade >= 1
STRICT_MIN_GRADE = 4  # the method's strict binarisation, grade >= 4


def finite(value: float | None) -> float | None:
    """A kappa as a document holds it: None where it is undefined (NaN: a table with one category)."""
    return None if value is None or not math.isfinite(value) else float(value)


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
    """Cohen's kappa of a square contingency table (same categories for rows and columns).

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


# --- label rules, one-vs-rest tables and merged tables (issue 11) ------------------------------

# The merged 3-way view: grade groups, best first (grades 4-5, 1-3, 0).
MERGED_GRADES: tuple[frozenset[int], ...] = (frozenset({4, 5}), frozenset({1, 2, 3}), frozenset({0}))


def mth_highest(grades: Iterable[int], m: int) -> int:
    """The m-th highest of ``grades`` (m = 1: the maximum), 0 when fewer than m grades are given.

    A passage's m-th highest grade is >= tau exactly when at least m of its test points reach tau,
    so binarising this label at tau is the "at least m test points >= tau" rule at every tau at once.
    """
    check_min_answers(m)
    top = heapq.nlargest(m, grades)
    return int(top[-1]) if len(top) == m else 0


def check_min_answers(m: int) -> None:
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InputError("minimum number of answered test points must be a positive integer", field="min_answers",
                         value=m, expected="an integer >= 1")


def one_vs_rest(table: Mapping[int, Mapping[int, int]], rows: Collection[int], columns: Collection[int]) -> Table:
    """Collapse a label x judgment table to 2x2: row 1 iff the label is in ``rows``, column 1 iff the
    judgment level is in ``columns`` (``binarised`` is the case rows = {g >= tau}, columns = {j >= level})."""
    out: Table = {1: {1: 0, 0: 0}, 0: {1: 0, 0: 0}}
    for label, row in table.items():
        for level, count in row.items():
            out[int(label in rows)][int(level in columns)] += count
    return out


def reference_row_pairing(relevance_level: int, labels: Iterable[int]) -> dict[int, frozenset[int]]:
    """The judgment level each grade row of a 0..5 graded table is compared with by :func:`row_kappas`.

    Grades 4 and 5 pair with level ``relevance_level + 1`` (TREC DL: 3, "perfectly relevant"), grades
    1..3 with ``relevance_level`` (DL: 2), grade 0 with level 0: the pairing of the reference
    implementation's graded tables against judgments (issue 11), for relevance level 2 (DL) as for 1 (CAR).
    """
    pairing: dict[int, frozenset[int]] = {}
    for label in labels:
        if label >= 4:
            pairing[label] = frozenset({relevance_level + 1})
        elif label >= 1:
            pairing[label] = frozenset({relevance_level})
        else:
            pairing[label] = frozenset({0})
    return pairing


def row_kappas(table: Mapping[int, Mapping[int, int]], pairing: Mapping[int, Collection[int]]) -> dict[int, float]:
    """Per row g of a label x judgment table, Cohen's kappa of "label == g" against "judgment in
    pairing[g]" over every passage of the table (the row against the rest of the table)."""
    return {label: cohen_kappa(one_vs_rest(table, {label}, columns)) for label, columns in pairing.items()}


def merged_judgment_levels(relevance_level: int, levels: Iterable[int]) -> tuple[frozenset[int], ...]:
    """The judgment groups of the merged view, best first, over the observed ``levels``: levels above
    ``relevance_level``, the level itself, levels below it (DL, level 2: {3} / {2} / {0, 1}; CAR,
    level 1: {2, 3} / {1} / {0})."""
    seen = set(levels) | {relevance_level}
    return (frozenset(lvl for lvl in seen if lvl > relevance_level), frozenset({relevance_level}),
            frozenset(lvl for lvl in seen if lvl < relevance_level))


def merged(
    table: Mapping[int, Mapping[int, int]],
    row_groups: Sequence[Collection[int]],
    column_groups: Sequence[Collection[int]],
) -> Table:
    """Merge a label x judgment table into n x n counts (n groups on each side, best first), keyed by
    group position counted from the bottom (the best group has key n - 1), so that Cohen's kappa of the
    result pairs row group i with column group i. Labels or levels in no group are left out."""
    n = len(row_groups)
    if len(column_groups) != n:
        raise InputError("merged tables pair row and column groups one to one", field="column_groups",
                         value=len(column_groups), expected=f"{n} groups")
    out: Table = {n - 1 - i: dict.fromkeys(range(n - 1, -1, -1), 0) for i in range(n)}
    for label, row in table.items():
        r = next((i for i, group in enumerate(row_groups) if label in group), None)
        if r is None:
            continue
        for level, count in row.items():
            c = next((i for i, group in enumerate(column_groups) if level in group), None)
            if c is not None:
                out[n - 1 - r][n - 1 - c] += count
    return out
