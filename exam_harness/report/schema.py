"""The versioned JSON report (pydantic schema). ``exam-harness schema`` prints its JSON Schema.

Bump ``SCHEMA_VERSION`` on any change a reader could notice; readers check it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, with_config

from exam_harness.models import GraderSpec

SCHEMA_VERSION = "2.0"
# 2.0: settings.pool; qrels files named by the one scheme (exam-count-min4.qrels, exam-at-least-2-min4.qrels);
#      systems[].incomplete_queries and grade_counts, per_query[].incomplete, partial, outcomes, decided_by


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Score(_Model):
    """A mean over queries with its standard error (stdev / sqrt(n))."""

    mean: float
    stderr: float


class Outcomes(_Model):
    answered: int = 0
    missed: int = 0
    required_missed: int = 0
    errors: int = 0
    skipped: int = 0


class SystemScore(_Model):
    run: str
    generated: bool = False
    queries: int
    exam_cover: float
    exam_cover_stderr: float
    n_exam_cover: float
    n_exam_cover_stderr: float
    nugget_f: Score | None = None
    # label variant -> measure -> score
    qrels_measures: dict[str, dict[str, Score]] = Field(default_factory=dict)
    # every other measure of the plan by its key (the TREC RAG scores A ... W_strict, response-words)
    measures: dict[str, Score] = Field(default_factory=dict)
    outcomes: Outcomes = Field(default_factory=Outcomes)
    # queries where a score rests on a pair that could not be graded: those scores are lower bounds
    incomplete_queries: list[str] = Field(default_factory=list)
    # grade -> number of (top-k passage, test point) pairs with that grade; "failed" counts pairs not graded
    grade_counts: dict[str, int] = Field(default_factory=dict)


class QueryScore(_Model):
    run: str
    query_id: str
    exam_cover: float
    n_exam_cover: float | None
    covered: int
    test_points: int
    nugget_f: float | None = None
    qrels_measures: dict[str, dict[str, float]] = Field(default_factory=dict)
    measures: dict[str, float] = Field(default_factory=dict)
    incomplete: bool = False


class CacheSummary(_Model):
    path: str | None
    pairs: int
    unique_pairs: int
    hits: int
    misses: int
    graded: int
    failures: int
    grading_seconds: float

    @property
    def hit_rate(self) -> float:
        return self.hits / self.unique_pairs if self.unique_pairs else 1.0


class QrelsFile(_Model):
    """A qrels file written beside the report; ``relevance_level`` binarises its labels for trec_eval."""

    label: str
    file: str
    relevance_level: int


class Settings(_Model):
    grader: GraderSpec
    k: int
    min_grade: int
    qrels_m: int
    pool: str
    measures: list[str]
    label_variants: list[str]
    banks: list[str]
    runs: list[str]


# A slotted dataclass rather than a model: a report holds one per run and test point (a TREC-sized
# exam: 600,000), built in a tenth of a model's time at a third of its size. pydantic still validates
# it wherever a report is read (a field of ExamReport) and writes it into the JSON schema.
@with_config(ConfigDict(extra="forbid"))
@dataclass(slots=True, kw_only=True)
class TestPointOutcome:
    """How one run did on one test point (the verdict its pytest case reports)."""

    __test__ = False  # not a pytest test class despite the name

    run: str
    query_id: str
    test_point_id: str
    kind: str
    required: bool = False
    text: str | None = None  # None for secret banks
    outcome: str  # answered, missed, required-missed, error, skipped
    best_grade: int | None = None
    best_passage: str | None = None
    answer: str | None = None  # the best passage's extracted answer or raw response; None for secret banks


class NuggetAssignment(_Model):
    """One nugget's assignment to one answer (nuggetizer's assignment shape, plus the grade behind it)."""

    text: str | None  # None for secret banks
    importance: str
    assignment: str  # support, partial_support, not_support
    grade: int | None = None  # the best grade of the run's top-k on the nugget (None: not graded)


class RagAssignments(_Model):
    """A run's answer to one query with every nugget's assignment (TREC RAG nuggets only)."""

    run_id: str
    qid: str
    query: str
    answer_text: str
    response_length: int  # words (NFKC, split on whitespace)
    nuggets: list[NuggetAssignment]


class ExamReport(_Model):
    schema_version: str = SCHEMA_VERSION
    tool_version: str
    created: str
    settings: Settings
    cache: CacheSummary
    queries: int
    test_points: int
    systems: list[SystemScore]
    per_query: list[QueryScore]
    qrels: list[QrelsFile] = Field(default_factory=list)
    # why this report covers part of the exam only (e.g. '-k' deselected cases); None for a full exam
    partial: str | None = None
    outcomes: list[TestPointOutcome] = Field(default_factory=list)
    # a grader of several parts: graded pairs per deciding part (embedding grader: answer-key, embedding)
    decided_by: dict[str, int] = Field(default_factory=dict)
    # nugget assignments of each (run, query) whose nuggets carry an importance (TREC RAG nugget files)
    trec_rag: list[RagAssignments] = Field(default_factory=list)

    @property
    def incomplete_runs(self) -> list[str]:
        return [s.run for s in self.systems if s.incomplete_queries]
