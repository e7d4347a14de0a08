"""The external qrels section's model: every run's leaderboards over given qrels files and the per-query
correlations with the official qrels (``sections["external-qrels"]`` of evaluate's document)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from exam_harness.measures.correlation import Correlation

EXTERNAL_QRELS = "external-qrels"  # the section's name
OFFICIAL_QRELS_SOURCE = "official qrels"  # its name of the official qrels (the judgments of the run files)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


Rankings = Mapping[str, Mapping[str, Sequence[str]]]  # run -> query -> passage ids, best first
QrelsMap = Mapping[str, Mapping[str, int]]


class ExternalLeaderboard(_Model):
    """One trec_eval measure of every run over one given qrels file at one relevance level."""

    qrels: str  # the file, or OFFICIAL_QRELS_SOURCE for the judgments of the run files
    measure: str
    relevance_level: int
    queries: int
    systems: dict[str, float]
    stderr: dict[str, float] = Field(default_factory=dict)
    correlation: Correlation | None = None
    per_query: dict[str, dict[str, float]] | None = None

    @model_serializer(mode="wrap")
    def _absent_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No correlation (no --official) or per-query values (no --per-query): the keys are left out."""
        doc: dict[str, Any] = handler(self)
        return {key: value for key, value in doc.items()
                if value is not None or key not in ("correlation", "per_query")}


class PerQueryCorrelation(_Model):
    """A leaderboard's per-query values against the official qrels' values of ``official_measure``:
    per query, Spearman's rho and Kendall's tau over the runs (null where undefined, e.g. every run
    scores 0 on the query); their means over the queries where defined; ``pooled``: the coefficients
    over every (run, query) point, the points of the scatter plot."""

    source: str  # a qrels file (with ``relevance_level``), or an EXAM leaderboard such as "exam-cover@20"
    measure: str
    min_grade: int | None = None  # of an EXAM leaderboard
    relevance_level: int | None = None  # of a qrels file
    official_measure: str
    queries: dict[str, Correlation]
    mean_spearman: float | None
    mean_kendall: float | None
    undefined: int
    pooled: Correlation
    # (run, query, official value, this leaderboard's value): drawn by ``--plot``, not written to JSON
    points: list[tuple[str, str, float, float]] = Field(default_factory=list, exclude=True)


class ExternalQrelsResult(_Model):
    """``--qrels``: every run scored over given qrels files; the official qrels' leaderboards come first."""

    official_qrels: str | None
    official_relevance_level: int
    relevance_levels: list[int]
    measures: list[str]
    leaderboards: list[ExternalLeaderboard]
    per_query: list[PerQueryCorrelation] = Field(default_factory=list)
    # --official, which the leaderboards are correlated with: their tables list the runs in its order
    official: dict[str, float] | None = None


