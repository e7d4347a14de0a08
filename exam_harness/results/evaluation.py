"""The document ``exam-harness evaluate --json`` writes: the result core (results/schema.py) in the
evaluation envelope (how it is computed: report/evaluation.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.core.models import GraderSpec
from exam_harness.io.textio import atomic_write_text
from exam_harness.measures.correlation import Correlation
from exam_harness.results.schema import (
    SCHEMA_VERSION,
    CacheSummary,
    MeasureInfo,
    PerQuery,
    Sections,
    Systems,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def system_order(
    systems: Sequence[str], official: Mapping[str, float] | None, scores: Mapping[str, float]
) -> list[str]:
    """The order the leaderboards list runs in: by the official leaderboard (runs it lacks last), else by score."""
    if official:
        return sorted(systems, key=lambda r: (r not in official, official.get(r, 0.0), -scores.get(r, 0.0), r))
    return sorted(systems, key=lambda r: (-scores.get(r, 0.0), r))


class MeasureStats(_Model):
    """What ``evaluate`` adds to one measure of the result core (``measure``: its name in ``measures[]``)."""

    measure: str
    key: str  # the short name --plot and the tables' lookups take (exam-cover@20, P@20)
    queries: int  # the queries some run has a value on
    # the queries of the exam the measure leaves out: n-EXAM where no passage of the pool covers a test
    # point at its tau (--n-exam-empty skip), nugget F where a query has no nuggets
    dropped: list[str] = Field(default_factory=list)
    relevance_level: int | None = None  # a trec measure's: the qrels label from which a passage is relevant
    ci: dict[str, tuple[float, float]] = Field(default_factory=dict)


@dataclass(frozen=True)
class Leaderboard:
    """One measure of an evaluation as a leaderboard: the tables, the plots and the tests read it; the
    document holds its parts (the measure, the runs' scores, the measure's statistics)."""

    info: MeasureInfo
    stats: MeasureStats
    systems: dict[str, float]  # run -> mean
    stderr: dict[str, float]
    per_query: dict[str, dict[str, float]] | None  # run -> query -> value (--per-query)

    @property
    def measure(self) -> str:
        return self.stats.key

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def title(self) -> str:
        return self.info.title

    @property
    def label(self) -> str | None:
        return self.info.label

    @property
    def min_grade(self) -> int:
        return self.info.min_grade or 0  # 0: a measure without a tau (the answers' length)

    @property
    def queries(self) -> int:
        return self.stats.queries

    @property
    def dropped(self) -> list[str]:
        return self.stats.dropped

    @property
    def relevance_level(self) -> int | None:
        return self.stats.relevance_level

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        return self.stats.ci



CORRELATIONS = "correlations"  # the section of the correlations with the official leaderboard


class MeasureCorrelation(_Model):
    """One leaderboard (``measure``: its name in the document's ``measures[]``) against the official one."""

    measure: str
    key: str  # the measure's short name (exam-cover@20), a row of the table with ``label``
    title: str
    label: str | None = None
    min_grade: int  # 0: a measure without a tau, shown in every tau's column
    correlation: Correlation


class Correlations(_Model):
    """The correlations section's content (sections/correlations.py)."""

    official: dict[str, float]  # run -> its official score or rank (--official)
    measures: list[MeasureCorrelation]

    def of(self, measure: str) -> Correlation | None:
        """The correlation of the leaderboard of ``measure`` (its name), if computed."""
        return next((m.correlation for m in self.measures if m.measure == measure), None)


def official_of(sections: Mapping[str, object]) -> dict[str, float] | None:
    """The official leaderboard a document holds (in its correlations section), else None."""
    content = sections.get(CORRELATIONS)
    return content.official if isinstance(content, Correlations) else None


def correlation_of(sections: Mapping[str, object], measure: str) -> Correlation | None:
    """The correlation of the leaderboard of ``measure`` with the official one, if the document holds it."""
    content = sections.get(CORRELATIONS)
    return content.of(measure) if isinstance(content, Correlations) else None


class CollectionSummary(_Model):
    queries: int
    passages: int
    distinct_passages: int
    runs: int
    test_points: int
    judged: int


class EvaluationGrading(CacheSummary):
    """How the grades of an evaluation were obtained: the report's cache summary of the grading pass
    (no cache for recorded grades: hits and misses 0), the source, and a few pairs without a grade."""

    source: Literal["recorded", "grader"]
    failure_examples: list[str] = Field(default_factory=list)


class EvaluationSettings(_Model):
    grader: GraderSpec  # the grader, or the recorded grading run (name "recorded", its model and prompt class)
    k: int
    min_grades: list[int]
    labels: list[str]
    measures: list[str]
    qrels_m: int
    pool: str
    judgment_level: int
    alpha_ndcg: bool
    redundancy_alpha: float
    nugget_f: bool
    beta: float
    bootstrap: int
    confidence: float
    seed: int
    baseline: str | None = None
    significance: str
    alpha: float
    resamples: int
    per_query: bool
    runs: list[str] = Field(default_factory=list)
    banks: list[str] = Field(default_factory=list)
    official: str | None = None


_OPTIONAL_STATS_KEYS = ("relevance_level",)
# what a pytest session tallies per run and evaluate has not: left out of evaluate's systems[]
_SESSION_ONLY = {"outcomes", "grade_counts", "fallbacks"}


class EvaluationReport(_Model):
    """``exam-harness evaluate --json``: the result core (measures, systems, per_query) in its envelope."""

    kind: Literal["evaluation"] = "evaluation"
    schema_version: str = SCHEMA_VERSION
    tool_version: str
    created: str
    settings: EvaluationSettings
    grading: EvaluationGrading
    collection: CollectionSummary
    measures: list[MeasureInfo]
    systems: Systems
    per_query: PerQuery = Field(default_factory=list)  # --per-query
    leaderboards: list[MeasureStats]  # one per measure, in the order of measures[]
    # the optional parts, by section name, computed as the pytest report's (results/sections.py): the
    # correlations with the official leaderboard, significance against a baseline, the grades against the
    # judgments, the external qrels' leaderboards, an LLM grader's cost, judge variance, a plugin's own
    sections: Sections = Field(default_factory=dict)

    def boards(self) -> list[Leaderboard]:
        """Every measure as a leaderboard, in the order of ``measures``."""
        stats = {s.measure: s for s in self.leaderboards}
        per_query: dict[str, dict[str, dict[str, float]]] | None = None
        if self.per_query:
            per_query = {}
            for row in self.per_query:
                for name, value in row.scores.items():
                    per_query.setdefault(name, {}).setdefault(row.run, {})[row.query_id] = value
        boards = []
        for info in self.measures:
            held = {s.run: s.scores[info.name] for s in self.systems if info.name in s.scores}
            boards.append(Leaderboard(
                info=info, stats=stats[info.name], systems={run: s.mean for run, s in held.items()},
                stderr={run: s.stderr for run, s in held.items()},
                per_query=per_query.get(info.name, {}) if per_query is not None else None,
            ))
        return boards

    def find(self, measure: str, min_grade: int, label: str | None = None) -> Leaderboard:
        """The leaderboard of the measure of short name ``measure`` (``exam-cover@20``) at ``min_grade``."""
        boards = self.boards()
        for board in boards:
            if board.measure == measure and board.min_grade == min_grade and board.label == label:
                return board
        have = sorted({(b.measure, b.label or "", b.min_grade) for b in boards})
        raise KeyError(f"no leaderboard {measure!r} label={label!r} min_grade={min_grade}; have {have[:12]}")

    def dropped(self) -> list[Leaderboard]:
        """The leaderboards of measures that leave some queries out."""
        return [board for board in self.boards() if board.dropped]

    def to_json(self) -> dict[str, Any]:
        """The JSON document: optional parts that are absent are left out rather than null."""
        doc = self.model_dump(mode="json", exclude={"systems": {"__all__": _SESSION_ONLY}})
        for stats in doc["leaderboards"]:
            for key in _OPTIONAL_STATS_KEYS:
                if stats.get(key) is None:
                    stats.pop(key, None)
        if not doc["per_query"]:
            doc.pop("per_query")
        return {key: value for key, value in doc.items() if value is not None}

    def write_json(self, path: str | Path) -> Path:
        """The document written to ``path`` by the JSON writer's rules (no NaN: results/json_writer.py)."""
        from exam_harness.results.json_writer import json_document, json_text

        path = Path(path)
        atomic_write_text(path, json_text(json_document(self.to_json(), path.name), path.name, indent=1) + "\n")
        return path
