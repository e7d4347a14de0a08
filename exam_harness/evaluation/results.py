"""The JSON result of ``exam-harness evaluate`` as pydantic models.

Shape (``--json``), more fields than the minimum the issue asks for::

    {"leaderboards": [{"measure": "exam-cover@20", "min_grade": 3, "systems": {"runA": 0.71},
                       "stderr": {"runA": 0.03}, "ci": {"runA": [0.65, 0.77]},
                       "correlation": {"spearman": 0.72, "kendall": 0.54, ...}},
                      {"measure": "P@20", "label": "max-grade", "min_grade": 3, ...}, ...],
     "agreement": {...}, "settings": {...}, "grading": {...}, "collection": {...}}

Undefined numbers (a correlation over tied scores) are ``null``, never NaN, so the file is strict
JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.evaluation.grades import GradingSummary
from exam_harness.io.textio import atomic_write_text


def finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


class CorrelationResult(BaseModel):
    spearman: float | None
    kendall: float | None
    n: int
    spearman_p: float | None = None
    kendall_p: float | None = None
    missing: list[str] = Field(default_factory=list)
    extra: list[str] = Field(default_factory=list)


class ComparisonResult(BaseModel):
    diff: float
    ci: tuple[float, float]
    p: float
    significantly_worse: bool
    significantly_better: bool


class SignificanceResult(BaseModel):
    baseline: str
    method: str
    alpha: float
    resamples: int
    runs: dict[str, ComparisonResult]


class Leaderboard(BaseModel):
    """One measure at one minimum grade: every system's mean over queries."""

    model_config = ConfigDict(extra="forbid")

    measure: str
    label: str | None = None
    min_grade: int
    relevance_level: int | None = None
    queries: int = 0
    systems: dict[str, float]
    stderr: dict[str, float] = Field(default_factory=dict)
    ci: dict[str, tuple[float, float]] = Field(default_factory=dict)
    correlation: CorrelationResult | None = None
    significance: SignificanceResult | None = None
    per_query: dict[str, dict[str, float]] | None = None

    @property
    def key(self) -> str:
        return f"{self.measure}[{self.label}]" if self.label else self.measure


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


class CollectionSummary(BaseModel):
    queries: int
    passages: int
    distinct_passages: int
    runs: int
    test_points: int
    judged: int


_OPTIONAL_BOARD_KEYS = ("label", "relevance_level", "correlation", "significance", "per_query")


class EvaluationResult(BaseModel):
    leaderboards: list[Leaderboard]
    agreement: AgreementResult | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    grading: GradingSummary | None = None
    collection: CollectionSummary | None = None
    official: dict[str, float] | None = None

    def find(self, measure: str, min_grade: int, label: str | None = None) -> Leaderboard:
        for board in self.leaderboards:
            if board.measure == measure and board.min_grade == min_grade and board.label == label:
                return board
        have = sorted({(b.measure, b.label or "", b.min_grade) for b in self.leaderboards})
        raise KeyError(f"no leaderboard {measure!r} label={label!r} min_grade={min_grade}; have {have[:12]}")

    def to_json(self) -> dict[str, Any]:
        """The JSON document: optional parts that are absent are left out rather than null."""
        doc = self.model_dump(mode="json")
        for board in doc["leaderboards"]:
            for key in _OPTIONAL_BOARD_KEYS:
                if board.get(key) is None:
                    board.pop(key, None)
        return {key: value for key, value in doc.items() if value is not None}

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        text = json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n"
        atomic_write_text(path, text)
        return path
