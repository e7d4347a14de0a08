"""Labels of judged passages read from their grades, shared by the grade x judgment
tables (a feature's) and ``calibrate``.

A judged passage's label is its maximum grade over its query's test points (the ``max-grade`` qrels label), or the
m-th highest one ("min answers = m": relevant at tau when at least m test points reach tau); the merged 3-way view
groups those labels and the judgment levels into three groups each (measures/kappa.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import cast

from pydantic import BaseModel

from exam_harness.measures.kappa import (
    MERGED_GRADES,
    Table,
    check_min_answers,
    cohen_kappa,
    finite,
    merged,
    merged_judgment_levels,
    mth_highest,
    one_vs_rest,
)

Judgments = Mapping[str, Mapping[str, int]]

Grades = Mapping[tuple[str, str], int]


class MergedTable(BaseModel):
    """The 3-way table: grade groups x judgment groups (both best first); counts keyed by group
    position, 2 the best group, so ``counts[2][2]`` is "grade 4-5 and judged in the top group"."""

    grades: list[list[int]]
    judgments: list[list[int]]
    counts: dict[int, dict[int, int]]
    kappa: float | None  # Cohen's kappa of the 3x3 table
    row_kappas: list[float | None]  # each grade group against its judgment group, best first


def max_grade_labels(
    grades: Grades, test_points: Mapping[str, Sequence[str]], judgments: Judgments
) -> dict[tuple[str, str], int]:
    """(query, passage) -> max grade over the query's test points, for judged passages with any grade."""
    return min_answers_labels(grades, test_points, judgments, 1)


def min_answers_labels(
    grades: Grades, test_points: Mapping[str, Sequence[str]], judgments: Judgments, m: int
) -> dict[tuple[str, str], int]:
    """(query, passage) -> the m-th highest grade over the query's test points (0 when fewer than m
    of them are graded), for judged passages with any grade."""
    check_min_answers(m)
    labels: dict[tuple[str, str], int] = {}
    grade = grades.get
    for qid, judged in judgments.items():
        tps = test_points.get(qid)
        if not tps:
            continue
        for pid in judged:  # ~10k judged passages x their query's test points on DL19: looked up in C
            row = list(map(grade, zip(repeat(pid), tps)))
            found = cast("list[int]", row) if None not in row else [g for g in row if g is not None]
            if found:
                labels[(qid, pid)] = int(max(found)) if m == 1 else mth_highest(found, m)
    return labels


def merged_table(table: Table, relevance_level: int) -> MergedTable:
    """The 3-way view: grades {4,5} / {1,2,3} / {0} against judgments above / at / below the relevance
    level (DL: {3} / {2} / {0,1}); Cohen's kappa of the 3x3 table (group i agrees with group i) and of
    each row group against its paired column group (the group against the rest)."""
    levels = {lvl for row in table.values() for lvl in row}
    columns = merged_judgment_levels(relevance_level, levels)
    counts = merged(table, MERGED_GRADES, columns)
    row_kappas = [finite(cohen_kappa(one_vs_rest(table, rows, cols))) for rows, cols in zip(MERGED_GRADES, columns)]
    return MergedTable(grades=[sorted(g, reverse=True) for g in MERGED_GRADES],
                       judgments=[sorted(c, reverse=True) for c in columns], counts=counts,
                       kappa=finite(cohen_kappa(counts)), row_kappas=row_kappas)
