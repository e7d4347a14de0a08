"""Agreement of grades with human judgments (the method's phase 3) as one result object.

A judged passage's label is its maximum grade over its query's test points (the ``max-grade``
qrels label). The tables: label (0..5) x judgment level counts; the same binarised lenient
(grade >= 1) and strict (grade >= 4) against a judgment relevance level (2 for TREC DL, 1 for CAR),
plus one binarisation per extra minimum grade asked for; Cohen's kappa of each 2x2 table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from exam_harness.measures.agreement import (
    LENIENT_MIN_GRADE,
    STRICT_MIN_GRADE,
    binarised,
    cohen_kappa,
    grade_judgment_table,
)

Grades = Mapping[tuple[str, str], int]


def finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


class BinarisedTable(BaseModel):
    name: str
    min_grade: int
    relevance_level: int
    # counts[grade side 1/0][judgment side 1/0], keys as strings in JSON
    counts: dict[int, dict[int, int]]
    kappa: float | None


class AgreementResult(BaseModel):
    """Grade x judgment counts over judged passages (label = the passage's max grade)."""

    label: str = "max-grade"
    relevance_level: int
    passages: int
    table: dict[int, dict[int, int]]
    binarised: list[BinarisedTable]




def max_grade_labels(
    grades: Grades, test_points: Mapping[str, Sequence[str]], judgments: Mapping[str, Mapping[str, int]]
) -> dict[tuple[str, str], int]:
    """(query, passage) -> max grade over the query's test points, for judged passages with any grade."""
    labels: dict[tuple[str, str], int] = {}
    for qid, judged in judgments.items():
        tps = test_points.get(qid)
        if not tps:
            continue
        for pid in judged:
            found = [g for tid in tps if (g := grades.get((pid, tid))) is not None]
            if found:
                labels[(qid, pid)] = max(found)
    return labels


def agreement_tables(
    grades: Grades,
    test_points: Mapping[str, Sequence[str]],
    judgments: Mapping[str, Mapping[str, int]],
    *,
    relevance_level: int = 2,
    min_grades: Iterable[int] = (),
) -> AgreementResult:
    """The grade x judgment table, its lenient / strict (and per extra minimum grade) binarisations
    at ``relevance_level``, and Cohen's kappa of each."""
    labels = max_grade_labels(grades, test_points, judgments)
    table = grade_judgment_table(labels, judgments)
    cuts: list[tuple[str, int]] = [("lenient", LENIENT_MIN_GRADE), ("strict", STRICT_MIN_GRADE)]
    for tau in min_grades:
        if tau not in (LENIENT_MIN_GRADE, STRICT_MIN_GRADE) and all(t != tau for _, t in cuts):
            cuts.append((f"min-grade-{tau}", tau))
    tables = []
    for name, tau in cuts:
        counts = binarised(table, tau, relevance_level)
        tables.append(
            BinarisedTable(
                name=name, min_grade=tau, relevance_level=relevance_level, counts=counts,
                kappa=finite(cohen_kappa(counts)),
            )
        )
    return AgreementResult(relevance_level=relevance_level, passages=len(labels), table=table, binarised=tables)
