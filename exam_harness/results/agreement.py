"""The agreement parts of the evaluation document: grade x judgment tables with Cohen's kappa
(computed by analysis/agreement.py). Declared here, with the document, so results/ needs no analysis code."""

from __future__ import annotations

from pydantic import BaseModel, Field


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


class MergedTable(BaseModel):
    """The 3-way table: grade groups x judgment groups (both best first); counts keyed by group
    position, 2 the best group, so ``counts[2][2]`` is "grade 4-5 and judged in the top group"."""

    grades: list[list[int]]
    judgments: list[list[int]]
    counts: dict[int, dict[int, int]]
    kappa: float | None  # Cohen's kappa of the 3x3 table
    row_kappas: list[float | None]  # each grade group against its judgment group, best first


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
