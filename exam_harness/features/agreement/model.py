"""The agreement feature's parts of a document: grade x judgment tables with Cohen's kappa (computed by
compute.py; the merged 3-way table is the core's, analysis/judged_labels.py, which ``calibrate`` shows too)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from exam_harness.analysis.judged_labels import MergedTable as MergedTable


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


class RowKappa(BaseModel):
    """One grade row of a graded table against the rest: "label == label" x "judgment in judgments"."""

    label: int
    judgments: list[int]
    counts: dict[int, dict[int, int]]  # [row side 1/0][judgment side 1/0]
    kappa: float | None


class MinAnswersAgreement(AgreementResult):
    """Agreement of the "min answers = m" label (the m-th highest grade) with the judgments."""

    min_answers: int
    row_kappas: list[RowKappa] = Field(default_factory=list)
    merged: MergedTable | None = None


class DirectAgreement(AgreementResult):
    """Agreement of one recorded direct grading run (grades for the query, no test points)."""

    label: str = "direct"
    llm: str | None = None
    prompt_class: str | None = None
