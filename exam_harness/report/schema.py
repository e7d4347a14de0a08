"""The versioned JSON report (pydantic schema). ``exam-harness schema`` prints its JSON Schema.

Bump ``SCHEMA_VERSION`` on any change a reader could notice; readers check it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, with_config

from exam_harness.models import GraderSpec

SCHEMA_VERSION = "2.1"
# 2.0: settings.pool; qrels files named by the one scheme (exam-count-min4.qrels, exam-at-least-2-min4.qrels);
#      systems[].incomplete_queries and grade_counts, per_query[].incomplete, partial, outcomes, decided_by
# 2.1: outcomes[].test_point_id is the id the pytest case shows (models.readable_id: query/a-slug-3f2a9c for
#      a generated id, was query/md5); a 2.0 report is read with its ids migrated (io/report.py)
#      verdict (the session's gates and checks, pass or fail); systems[].fallbacks


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
    outcomes: Outcomes = Field(default_factory=Outcomes)
    # queries where a score rests on a pair that could not be graded: those scores are lower bounds
    incomplete_queries: list[str] = Field(default_factory=list)
    # grade -> number of (top-k passage, test point) pairs with that grade; "failed" counts pairs not graded
    grade_counts: dict[str, int] = Field(default_factory=dict)
    # graded pairs whose grade a fallback rule read (an answer without a grade digit), of those in grade_counts
    fallbacks: int = 0


class QueryScore(_Model):
    run: str
    query_id: str
    exam_cover: float
    n_exam_cover: float | None
    covered: int
    test_points: int
    nugget_f: float | None = None
    qrels_measures: dict[str, dict[str, float]] = Field(default_factory=dict)
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


class GateResult(_Model):
    """One check of the session's verdict: a gate asked for (a threshold, an allowed regression, the
    baseline) or a check always made (every pair graded, few grades read by a fallback rule)."""

    gate: str  # the option or check: exam-fail-under, exam-compare-fail, exam-baseline, incomplete-exam, ...
    run: str | None = None
    measure: str | None = None
    value: float | None = None
    limit: float | None = None
    passed: bool
    message: str

    @property
    def case(self) -> str:
        """The check's pytest case name, e.g. ``exam-fail-under[weak-ranker-exam-cover]``."""
        params = "-".join(p for p in (self.run, self.measure) if p)
        return f"{self.gate}[{params}]" if params else self.gate


class Verdict(_Model):
    """The session's verdict: failed when any check failed (the exit status says the same)."""

    passed: bool
    gates: list[GateResult] = Field(default_factory=list)


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
    # the pytest session's checks (None where no session decided, e.g. a report scored by a subcommand)
    verdict: Verdict | None = None

    @property
    def incomplete_cause(self) -> str:
        """Why some runs' scores are lower bounds: pairs that could not be graded, else (no failed pair)
        a declared system that failed on some queries (docs/live-systems.md)."""
        failed = self.cache.failures
        return f"{failed} pairs could not be graded" if failed else "systems failed on some queries"

    @property
    def incomplete_runs(self) -> list[str]:
        return [s.run for s in self.systems if s.incomplete_queries]
