"""The data model of an exam: queries, banks of test points, runs, passages and grades.

Everything here is a pydantic v2 model so that loaders validate what they read and reports
can publish a JSON schema. Models are frozen where they act as cache or dictionary keys.
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, field_validator

from exam_harness.core.ids import check_name, id_problem
from exam_harness.core.json_values import EMPTY, JSONObject

TestPointKind = Literal["question", "nugget"]

# a TREC RAG nugget's importance: the word nuggetizer's file holds ("vital", "okay", or any other word its
# scorer wrote, e.g. "failed"); only "vital" is vital (io/nuggetizer.py)
Importance = str

MIN_GRADE = 0
MAX_GRADE = 5


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def test_point_id(query_id: str, text: str, facet_id: str | None = None) -> str:
    """The method's id rule: ``query_id/md5(text)`` (``query_id/facet_id/md5(text)`` with facets)."""
    prefix = f"{query_id}/{facet_id}" if facet_id else query_id
    return f"{prefix}/{md5_hex(text)}"


def readable_id(point_id: str, query_id: str, text: str | None, facet_id: str | None = None) -> str:
    """The one id of a test point in every output (node ids, JUnit, JSON, markdown, HTML): an id written
    in the bank as it is; a generated id (``query/md5(text)``) as ``query/a-slug-of-its-text-3f2a9c``, so
    output speaks the question's words. ``text=None`` (a secret bank) keeps the generated id."""
    if text is None or point_id != test_point_id(query_id, text, facet_id):
        return point_id
    prefix, _, digest = point_id.rpartition("/")
    return f"{prefix}/{_slug(text)}-{digest[:6]}"


def readable_from_generated(point_id: str, text: str | None) -> str:
    """:func:`readable_id` of an id read from an older report, which kept generated ids as
    ``query[/facet]/md5(text)``: the digest matching ``text`` is all it needs (no facet to look up)."""
    prefix, _, digest = point_id.rpartition("/")
    if text is None or not prefix or digest != md5_hex(text):
        return point_id
    return f"{prefix}/{_slug(text)}-{digest[:6]}"


def _slug(text: str, limit: int = 48) -> str:
    words = "".join(ch.lower() if ch.isalnum() else " " for ch in text).split()
    joined = "-".join(words)
    return joined[:limit].rstrip("-") or "test-point"


def check_id(value: str, what: str) -> str:
    """Ids and run names obey the one id rule (exam_harness/core/ids.py): non-empty, bounded, without whitespace,
    control or format (zero-width, bidi) characters: they are printed and compared, and such characters make
    two ids look alike or rewrite the terminal. The message shows the value with those characters escaped
    (``ascii``)."""
    if (why := id_problem(value, what)) is not None:
        raise ValueError(f"{why}, got {value[:80]!a}")
    return value


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Query(_Frozen):
    """A query, optionally with facets (subtopics) keyed by facet id."""

    id: str
    text: str
    facets: dict[str, str] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        return check_id(v, "query id")


class TestPoint(_Frozen):
    """One exam question or nugget of a query's bank."""

    __test__ = False  # not a pytest test class despite the name

    id: str
    query_id: str
    kind: TestPointKind
    text: str = Field(min_length=1)
    facet_id: str | None = None
    gold_answers: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    weight: float = Field(default=1.0, ge=0.0)
    required: bool = False
    # the runs a required test point is required of, by name or fnmatch pattern (empty: every run)
    required_runs: tuple[str, ...] = ()
    importance: Importance | None = None
    # free-form fields the bank (or a converted record, autojudge-base's nugget kinds) carries: JSON only, frozen
    # (core/json_values.py), written back by every bank format; no grader, cache key or score reads them
    metadata: JSONObject = Field(default_factory=lambda: EMPTY)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        return check_id(v, "test point id")

    @field_validator("text")
    @classmethod
    def _text_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("test point text must not be blank")
        return v


class QueryBank(_Frozen):
    """The test points of one query (or one query facet), as read from one bank file."""

    query: Query
    facet_id: str | None = None
    test_points: tuple[TestPoint, ...]
    source: str = ""
    secret: bool = False
    # free-form fields of the bank's own record (who made it, a run's metadata, autojudge-base's per-bank fields):
    # JSON only, frozen (core/json_values.py), written back by every bank format; no grader, cache key or score
    # reads them. On the bank, not its Query: they describe one bank file's record (two files, or two facets, of a
    # query may carry different ones), and the Query reaches every grading request and prompt.
    metadata: JSONObject = Field(default_factory=lambda: EMPTY)

    @property
    def key(self) -> str:
        return f"{self.query.id}/{self.facet_id}" if self.facet_id else self.query.id


class Passage(_Frozen):
    """A retrievable or generated unit of text with a stable id."""

    id: str
    text: str

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        return check_id(v, "passage id")


class RankedPassage(NamedTuple):
    """One line of a ranking. A tuple rather than a model: a TREC-sized exam holds one per ranked
    passage (100 runs x 300 queries x 100 passages: 3M), at 64 bytes each instead of about 400; the
    run loaders check the fields as they read them."""

    passage_id: str
    rank: int
    score: float = 0.0


class Run(BaseModel):
    """A system's answer to every query it took: a ranked list of passage ids per query."""

    model_config = ConfigDict(extra="forbid")

    name: str
    # built by the run loaders, which check every field: validating again would rebuild each tuple
    rankings: SkipValidation[dict[str, list[RankedPassage]]] = Field(default_factory=dict)
    generated: bool = False
    source: str = ""

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        return check_name(check_id(v, "run name"), "run name")  # the writers name files after it

    def top_k(self, query_id: str, k: int) -> list[str]:
        """Passage ids of the top k by the rank column (ties in rank by descending score, then id)."""
        ranked = self.rankings.get(query_id, [])
        if not ranked:
            return []
        ids, ranks, _ = zip(*ranked)  # the columns, transposed in C
        if all(map(operator.lt, ranks, ranks[1:])):  # already in strictly increasing rank order
            return list(ids[:k])
        return [r.passage_id for r in sorted(ranked, key=lambda r: (r.rank, -r.score, r.passage_id))[:k]]

    def orders(self, query_id: str, *, scored: bool) -> tuple[list[str], list[str]]:
        """``(top_k(query_id, all), trec_order(query_id, scored=scored))`` from one transposition of the
        ranking: a ranking in rank order (and, scored, in strictly decreasing scores) is both orders as
        it is, the usual case; scoring reads both orders of every (run, query)."""
        ranked = self.rankings.get(query_id, [])
        if not ranked:
            return [], []
        ids, ranks, scores = zip(*ranked)
        in_order = all(map(operator.lt, ranks, ranks[1:]))
        order = list(ids) if in_order else self.top_k(query_id, len(ranked))
        if not scored:
            return order, order
        if all(map(operator.gt, scores, scores[1:])):
            return order, order if in_order else list(ids)
        return order, self.trec_order(query_id, scored=True)

    def has_scores(self) -> bool:
        """Whether the run's scores say anything: not all equal (generated answers carry none)."""
        first: float | None = None
        for ranked in self.rankings.values():
            for r in ranked:
                if first is None:
                    first = r.score
                elif r.score != first:
                    return True
        return False

    def trec_order(self, query_id: str, *, scored: bool | None = None) -> list[str]:
        """Passage ids the way trec_eval orders a run: by score descending, ties by passage id descending
        (trec_eval ignores the rank column). A run without scores (:meth:`has_scores`; pass ``scored`` when
        it is known) keeps the rank column's order instead."""
        ranked = self.rankings.get(query_id, [])
        if not (self.has_scores() if scored is None else scored):
            return self.top_k(query_id, len(ranked))
        if not ranked:
            return []
        ids, _, scores = zip(*ranked)
        if all(map(operator.gt, scores, scores[1:])):  # strictly decreasing scores: no tie to break
            return list(ids)
        by_id = sorted(ranked, key=lambda r: r.passage_id, reverse=True)
        return [r.passage_id for r in sorted(by_id, key=lambda r: -r.score)]  # stable: ties keep id order


class GraderSpec(_Frozen):
    """Everything about a grader that shapes a grade; its hash is part of every cache key."""

    name: str
    version: str
    model: str | None = None
    revision: str | None = None
    prompt_class: str | None = None
    prompt_text: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    max_grade: int = MAX_GRADE
    default_min_grade: int = 4

    def fingerprint(self) -> str:
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Grade(BaseModel):
    """One grade of one (passage, test point) pair, with its provenance.

    ``raw_response`` and ``extracted_answer`` keep at most :attr:`MAX_TEXT_CHARS` (4,096) characters:
    a longer text (a runaway model answer, a server's error page) is cut to its beginning when the
    grade is made, so a fresh grade and its cached copy are equal and the cache never holds a reply whole.
    """

    model_config = ConfigDict(extra="forbid")

    MAX_TEXT_CHARS: ClassVar[int] = 4096

    grade: int = Field(ge=MIN_GRADE, le=MAX_GRADE)
    grader: str
    raw_response: str | None = None
    extracted_answer: str | None = None
    probabilities: tuple[float, ...] | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    # the fallback rule that read this grade from an answer holding none (exam_harness.core.grade_parsing), e.g.
    # "other text -> 1"; None when the answer gave the grade
    fallback: str | None = None

    @field_validator("raw_response", "extracted_answer")
    @classmethod
    def _cut_long_text(cls, value: str | None) -> str | None:
        if value is not None and len(value) > cls.MAX_TEXT_CHARS:
            return value[: cls.MAX_TEXT_CHARS]
        return value

    @property
    def expected_grade(self) -> float | None:
        if not self.probabilities:
            return None
        return sum(i * p for i, p in enumerate(self.probabilities))


class RecordedGrade(_Frozen):
    """A grade published in a Workbench ``exam_grades`` entry, for replay by the ``recorded`` grader."""

    test_point_id: str
    grade: int
    answer: str | None = None
    llm: str | None = None
    prompt_class: str | None = None


class ExamData(BaseModel):
    """What the systems produced: runs, passages, optional human judgments and recorded grades."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    runs: dict[str, Run] = Field(default_factory=dict)
    passages: dict[str, Passage] = Field(default_factory=dict)
    # query id -> passage id -> human relevance level
    judgments: dict[str, dict[str, int]] = Field(default_factory=dict)
    # (passage id, test point id) -> recorded grades, possibly several grading runs
    recorded: dict[tuple[str, str], list[RecordedGrade]] = Field(default_factory=dict)


@dataclass(frozen=True)
class GradeFailure:
    """A pair the grader could not grade; ``message`` says why (shown as a test error)."""

    message: str


@dataclass(frozen=True)
class GradingRequest:
    """One (passage, test point) pair to grade, with its query for prompts that need it, and the test points
    of its bank in bank order (empty where none is known): a grader that asks about several test points of a
    passage in one prompt places each where its bank puts it (the TREC RAG track's windows of nuggets)."""

    query: Query
    test_point: TestPoint
    passage: Passage
    bank: tuple[TestPoint, ...] = dataclass_field(default=(), compare=False, repr=False)
