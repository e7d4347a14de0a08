"""The versioned JSON report (pydantic schema). ``exam-harness schema`` prints its JSON Schema.

The result core (``measures``, ``systems[].scores``, ``per_query[].scores``) is shared with the document
``exam-harness evaluate --json`` writes (report/evaluation.py); ``kind`` tells the two envelopes apart and
results/document.py joins them into the one schema. ``SCHEMA_VERSION`` versions both.
Bump it on any change a reader could notice; readers check it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator, with_config

from exam_harness.config.gates import GateResult as GateResult  # the verdict's checks, made by the gates
from exam_harness.core.models import GraderSpec
from exam_harness.results.sections import typed_sections

if TYPE_CHECKING:
    from exam_harness.core.registry import Registry
    from exam_harness.measures.base import Measure

SCHEMA_VERSION = "4.2"
# 2.0: settings.pool; qrels files named by the one scheme (exam-count-min4.qrels, exam-at-least-2-min4.qrels);
#      systems[].incomplete_queries and grade_counts, per_query[].incomplete, partial, outcomes, decided_by
# 3.0: scores keyed by measure: measures[] (name, title, label); systems[].scores and per_query[].scores
#      replace exam_cover(_stderr), n_exam_cover(_stderr), nugget_f and qrels_measures (2.x reports are
#      migrated on read, results/migrate.py); outcomes[].test_point_id is the id the pytest case shows
#      (models.readable_id: query/a-slug-3f2a9c for a generated id, was query/md5 in 2.0; results/read.py);
#      verdict (the session's gates and checks, pass or fail); systems[].fallbacks
# 3.1: the TREC RAG assignments field (each run's nugget assignments where nuggets carry a TREC RAG importance;
#      3.0 reads as 3.1)
# 3.2: kind ("exam-report"; "evaluation" for evaluate's document, which now shares the result core and this
#      version); measures[].min_grade and measures[].k (the measure's tau and cut-off; 3.0 and 3.1 reports
#      read as 3.2, results/migrate.py); cost (an LLM grader's tokens and cost,
#      this session's, the cached grades' and per run; docs/cost.md; none in older reports)
# 3.3: the judge-variance figures (a judge asked K times per pair: each case's spread, flaky cases, the judge's share of
#      each run's variance; None without repeats; 3.2 reads as 3.3)
# 3.4: outcomes[].reason (the best grade's reason) replaces outcomes[].answer, which held the same text (3.0
#      to 3.3 read as 3.4, results/migrate.py); outcomes[].best_passage_text (the best passage's text, cut)
# 3.5: the evaluation envelope (evaluate --json) gains the judge-variance figures (one per tau of --min-grade; None
#      without repeats) and fills grading.cost.runs (each run's tokens and cost); the exam report is unchanged
#      (3.4 reads as 3.5)
# 4.0: sections (name -> content: the document's optional parts, each a registered section,
#      results/sections.py) replace the fixed fields decided_by and the TREC RAG assignments (the exam report's;
#      the TREC RAG feature's section migrates its own), cost and judge
#      variance of both envelopes and the
#      evaluation's grading.cost; judge variance is held per tau in both ({"per_tau": [...]}). Every 2.x
#      and 3.x report reads as 4.0 (results/migrate.py).
# 4.1: the evaluation envelope's remaining optional parts are sections too: official and each leaderboard's
#      correlation -> sections.correlations, each leaderboard's significance -> sections.significance,
#      agreement, min_answers and direct_agreement -> sections.agreement, external_qrels ->
#      sections["external-qrels"], the TREC RAG assignment agreement -> sections["trec-rag-agreement"] (a 4.0 evaluation
#      document reads as 4.1, results/migrate.py); the exam report is unchanged (4.0 reads as 4.1). Also
#      since 4.1 a run of generated answers holds no value of a trec_eval measure over EXAM-Qrels (absent
#      from its scores, not 0), and the EXAM-Qrels hold no generated answer's segment, so a mixed exam's
#      ranked runs score higher MAP, nDCG and R-prec than a 4.0 document of the same inputs says
# 4.2: the judge-notes section's cascade entries state a 95% lower bound of the kept share of the decider's passes
#      (pairs, found, lost_at_most, kept_lower_bound, target, reached, the filter's and decider's seconds,
#      warnings) in place of the audit's estimated miss rate (kept, audited, audit_passes, miss_rate, interval);
#      both envelopes. A 4.0 or 4.1 entry reads as 4.2 with the figures it did not record None and its own
#      figures under miss_estimate (results/migrate.py: it has no lower bound, so cascade-kept fails on it)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# name -> content of each optional part (results/sections.py), typed by the registered section of that name
Sections = Annotated[dict[str, Any], AfterValidator(typed_sections)]


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


class MeasureInfo(_Model):
    """A measure of the report: ``name`` is its printed form with every parameter (``exam-cover(tau=4)@20``,
    ``P(label=count,tau=4,pool=judged,k=20)@20``), which parses back with the measure registry and keys its
    scores; ``title`` heads its column (the measure class's, a plugin's too); ``label`` is a trec measure's
    qrels label variant (views group by it); ``min_grade`` (tau) and ``k`` the measure's own, None for a
    measure without one (the answers' length has no tau)."""

    name: str
    title: str
    label: str | None = None
    min_grade: int | None = None
    k: int | None = None

    @classmethod
    def of(cls, measure: Measure) -> MeasureInfo:
        """How the report names a (bound) measure: its printed form, title, label variant, tau and k."""
        label = getattr(measure, "label", None)  # a trec measure's qrels label variant
        return cls(name=str(measure), title=measure.title, label=label if isinstance(label, str) else None,
                   min_grade=_int_or_none(getattr(measure, "min_grade", None)),
                   k=_int_or_none(getattr(measure, "k", None)))


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class SystemScore(_Model):
    run: str
    generated: bool = False
    queries: int
    scores: dict[str, Score] = Field(default_factory=dict)  # measure name -> mean and standard error
    outcomes: Outcomes = Field(default_factory=Outcomes)
    # queries where a score rests on a pair that could not be graded: those scores are lower bounds
    incomplete_queries: list[str] = Field(default_factory=list)
    # grade -> number of (top-k passage, test point) pairs with that grade; "failed" counts pairs not graded
    grade_counts: dict[str, int] = Field(default_factory=dict)
    # graded pairs whose grade a fallback rule read (an answer without a grade digit), of those in grade_counts
    fallbacks: int = 0

    @model_validator(mode="after")
    def _fallbacks_are_grades(self) -> SystemScore:
        """Fallback grades are some of the run's grades: more of them than it holds is no share to gate on."""
        graded = sum(n for grade, n in self.grade_counts.items() if grade != "failed")
        if self.fallbacks > graded:
            raise ValueError(f"run {self.run!r} counts {self.fallbacks} grades read by a fallback rule, more than the "
                             f"{graded} grades it holds (grade_counts)")
        return self


class QueryScore(_Model):
    run: str
    query_id: str
    covered: int
    test_points: int
    # measure name -> value; a measure that leaves the query out (n-EXAM where the pool covers nothing) has none
    scores: dict[str, float] = Field(default_factory=dict)
    incomplete: bool = False


def _one_row_per_run(systems: list[SystemScore]) -> list[SystemScore]:
    """A document holds one row per run: a run listed twice would have one of its scores read and the other
    dropped in silence (issue 39, finding 6)."""
    seen: set[str] = set()
    for i, system in enumerate(systems):
        if system.run in seen:
            raise ValueError(f"run {system.run!r} is listed twice (again at systems.{i}); a document holds one row "
                             "per run")
        seen.add(system.run)
    return systems


def _one_row_per_query(rows: list[QueryScore]) -> list[QueryScore]:
    """One per-query row per run and query, as :func:`_one_row_per_run`."""
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(rows):
        key = (row.run, row.query_id)
        if key in seen:
            raise ValueError(f"query {row.query_id!r} of run {row.run!r} is listed twice (again at per_query.{i}); a "
                             "document holds one row per run and query")
        seen.add(key)
    return rows


# the result core's lists, in either envelope (results/evaluation.py too)
Systems = Annotated[list[SystemScore], AfterValidator(_one_row_per_run)]
PerQuery = Annotated[list[QueryScore], AfterValidator(_one_row_per_query)]


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
    # --- why (schema 3.2): None for secret banks -------------------------------------------------------
    # the best grade's reason, cut: the default grader's best span quoted with its support, an LLM's answer,
    # the answer key's finding, a recorded grade's answer (was ``answer`` until 3.1)
    reason: str | None = None
    best_passage_text: str | None = None  # the best passage's text, cut (verdicts.PASSAGE_CHARS)


class Verdict(_Model):
    """The session's verdict: failed when any check failed (the exit status says the same)."""

    passed: bool
    gates: list[GateResult] = Field(default_factory=list)


FALLBACK_CAUSE = "more grades than --exam-max-fallbacks allows were read by a fallback rule"

class ExamReport(_Model):
    kind: Literal["exam-report"] = "exam-report"  # the pytest session's envelope (see results/document.py)
    schema_version: str = SCHEMA_VERSION
    tool_version: str
    created: str
    settings: Settings
    cache: CacheSummary
    queries: int
    test_points: int
    # every measure scored, in the order computed; the first (EXAM-Cover) orders the leaderboard
    measures: list[MeasureInfo] = Field(default_factory=list)
    systems: Systems
    per_query: PerQuery
    qrels: list[QrelsFile] = Field(default_factory=list)
    # why this report covers part of the exam only (e.g. '-k' deselected cases); None for a full exam
    partial: str | None = None
    outcomes: list[TestPointOutcome] = Field(default_factory=list)
    # the pytest session's checks (None where no session decided, e.g. a report scored by a subcommand)
    verdict: Verdict | None = None
    # the optional parts, by section name (an LLM grader's cost, judge variance, a plugin's table, ...)
    sections: Sections = Field(default_factory=dict)

    @property
    def incomplete_cause(self) -> str:
        """Why some runs' scores are lower bounds: pairs that could not be graded, else (no failed pair) too
        many grades read by a fallback rule when every incomplete run has them (--exam-max-fallbacks), else
        a declared system that failed on some queries (docs/live-systems.md)."""
        failed = self.cache.failures
        if failed:
            return f"{failed} pairs could not be graded"
        incomplete = [s for s in self.systems if s.incomplete_queries]
        if incomplete and all(s.fallbacks for s in incomplete):
            return FALLBACK_CAUSE
        return "systems failed on some queries"

    @property
    def incomplete_runs(self) -> list[str]:
        return [s.run for s in self.systems if s.incomplete_queries]

    @property
    def leading(self) -> MeasureInfo:
        """The measure the leaderboard is ordered by (EXAM-Cover at the report's k and tau)."""
        if not self.measures:
            raise ValueError("the report holds no measure")
        return self.measures[0]

    def exam_measures(self) -> list[MeasureInfo]:
        """The measures of the EXAM table: every measure that is not a trec measure of a label variant."""
        return [m for m in self.measures if m.label is None]

    def label_measures(self, label: str) -> list[MeasureInfo]:
        """The trec measures over the EXAM-Qrels of ``label``, in the order computed."""
        return [m for m in self.measures if m.label == label]

    def measure(self, name: str, registry: Registry[type[Measure]] | None = None) -> MeasureInfo:
        """The report's measure ``name`` names: its full name, or as ``--exam-measures`` takes it (``exam-cover``,
        ``ndcg@10``: the first label variant's; see measures/lookup.py). KeyError lists the measures held."""
        from exam_harness.measures.lookup import find_measure

        found = find_measure(self.measures, name, registry)
        if found is None:
            held = ", ".join(m.name for m in self.measures)
            raise KeyError(f"measure {name!r} is not in the report; it holds {held}")
        return found

    def means(self, measure: str = "exam-cover", registry: Registry[type[Measure]] | None = None) -> dict[str, float]:
        """run -> its mean of ``measure`` (``report.means("ndcg@10")``; runs without a value left out)."""
        name = self.measure(measure, registry).name
        return {s.run: s.scores[name].mean for s in self.systems if name in s.scores}

    def values(self, measure: str = "exam-cover",
               registry: Registry[type[Measure]] | None = None) -> dict[tuple[str, str], float | None]:
        """(run, query) -> the per-query value of ``measure`` (None where the measure leaves the query out)."""
        name = self.measure(measure, registry).name
        return {(r.run, r.query_id): r.scores.get(name) for r in self.per_query}

    def labels(self) -> list[str]:
        """The label variants the report's trec measures use, in the order computed."""
        return list(dict.fromkeys(m.label for m in self.measures if m.label is not None))
