"""Agreement between two graders, or two runs of one grader (``exam-harness analyze agreement --grades A
--grades B``): over the units both graded, the grade x grade confusion table, Cohen's kappa on the grades
and on the verdicts at tau, and per label its one-vs-rest table and kappa.

A unit is a (passage, test point) pair where both files hold per-pair grades (Workbench files with
``exam_grades``: ``evaluate --export-workbench``, the published RUBRIC files), or a case (a run on a test
point, its best grade) where both are JSON reports of pytest sessions.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

from pydantic import BaseModel, Field

from exam_harness.measures.kappa import cohen_kappa, one_vs_rest

Unit = TypeVar("Unit", bound=Hashable)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


class LabelConcordance(BaseModel):
    """One label against the rest: units both give it, only A, only B, neither; and the 2x2 table's kappa."""

    label: int
    both: int
    only_a: int
    only_b: int
    neither: int
    kappa: float | None


class GraderAgreement(BaseModel):
    a: str
    b: str
    unit: str  # "pair" (passage, test point) or "case" (run, test point: the best grade of the run's top-k)
    common: int  # units both graded
    only_a: int  # units graded by A alone (left out)
    only_b: int
    labels: list[int]
    confusion: dict[int, dict[int, int]] = Field(default_factory=dict)  # A's grade -> B's grade -> units
    observed: float | None  # share of units given the same grade
    kappa: float | None  # Cohen's kappa over the grades
    min_grade: int
    verdicts: dict[int, dict[int, int]] = Field(default_factory=dict)  # grade >= tau by A (1/0) x by B (1/0)
    verdict_kappa: float | None
    per_label: list[LabelConcordance] = Field(default_factory=list)


def grader_agreement(a: Mapping[Unit, int], b: Mapping[Unit, int], *, name_a: str, name_b: str,
                     unit: str, min_grade: int) -> GraderAgreement:
    """The agreement of grades ``a`` and ``b`` (unit -> grade) over the units both hold."""
    common = [u for u in a if u in b]
    labels = sorted({a[u] for u in common} | {b[u] for u in common})
    confusion: dict[int, dict[int, int]] = {x: dict.fromkeys(labels, 0) for x in labels}
    for u in common:
        confusion[a[u]][b[u]] += 1
    same = sum(confusion[x][x] for x in labels)
    passing = [x for x in labels if x >= min_grade]
    verdicts = one_vs_rest(confusion, passing, passing)
    per_label = []
    for label in labels:
        table = one_vs_rest(confusion, [label], [label])
        per_label.append(LabelConcordance(label=label, both=table[1][1], only_a=table[1][0], only_b=table[0][1],
                                        neither=table[0][0], kappa=_finite(cohen_kappa(table))))
    return GraderAgreement(
        a=name_a, b=name_b, unit=unit, common=len(common), only_a=len(a) - len(common),
        only_b=sum(1 for u in b if u not in a), labels=labels, confusion=confusion,
        observed=same / len(common) if common else None, kappa=_finite(cohen_kappa(confusion)),
        min_grade=min_grade, verdicts={1: dict(verdicts[1]), 0: dict(verdicts[0])},
        verdict_kappa=_finite(cohen_kappa(verdicts)), per_label=per_label)
