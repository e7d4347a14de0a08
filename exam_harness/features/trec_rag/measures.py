"""The TREC RAG track's nugget scores: A and V as castorini/nuggetizer's ``calculate_nugget_scores``
(``core/metrics.py``) computes them; W, the weighted score, from the track's papers (nuggetizer does not
compute it). docs/trec-rag.md names the sources.

Each nugget of a query is assigned to a run's answer as *support*, *partial support* or *not support*,
worth s = 1 / 0.5 / 0 (strict: ss = 1 for support only; any other label 0). Per (run, query), with N
the nuggets (whatever their importance word), V those whose importance is ``vital`` and O those whose
importance is ``okay``:

- ``A`` = sum_N s / |N|;  ``A_strict`` = sum_N ss / |N|
- ``V`` = sum_V s / |V| (0 when the query has no vital nugget);  ``V_strict`` likewise with ss
- ``W`` = (sum_V s + 0.5 sum_O s) / (|V| + 0.5 |O|);  ``W_strict`` likewise with ss

and a run's score is the mean over the queries (with its standard error, as every measure).

Labels from grades. The label of a nugget is read from the best grade any of the run's top-k passages
got on it (a TREC RAG answer is one passage: its sentences joined). Two cuts map a grader's scale to the
three labels: grade >= ``tau`` is support; ``partial`` <= grade < tau is partial support; lower is not
support. ``tau`` is the plan's minimum grade; ``partial`` defaults to ceil(tau / 2), so the
nugget-assignment prompts' 0..2 scale (default tau 2) reads 2 / 1 / 0 as support / partial / not, a
0..5 grader at tau 4 reads 4-5 / 2-3 / 0-1. With ``partial`` = tau there is no partial label.

Scored queries: those whose nuggets carry an importance (a nuggetizer nugget file); a nugget of such a
query without importance counts as vital. A pair that could not be graded counts as not support, and
the value is marked incomplete.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, replace
from itertools import repeat
from typing import TYPE_CHECKING, ClassVar

from exam_harness.core.answers import word_count
from exam_harness.core.grade_kinds import GradesNeeded, grade_kind
from exam_harness.measures.base import Bindings, Measure, PerQuery, bound, family_of

if TYPE_CHECKING:
    from exam_harness.core.models import GraderSpec
    from exam_harness.measures.context import ScoringContext

OKAY_WEIGHT = 0.5  # W's weight of an okay nugget (a vital one weighs 1)
SUPPORT, PARTIAL, NOT_SUPPORT = "support", "partial_support", "not_support"
VITAL, OKAY = "vital", "okay"
CREDIT = {SUPPORT: 1.0, PARTIAL: 0.5, NOT_SUPPORT: 0.0}
STRICT_CREDIT = {SUPPORT: 1.0, PARTIAL: 0.0, NOT_SUPPORT: 0.0}


def default_partial(tau: int) -> int:
    return max(1, math.ceil(tau / 2))


def assignment_label(grade: int, tau: int, partial: int) -> str:
    """support / partial_support / not_support of a grade, by the two cuts."""
    if grade >= tau:
        return SUPPORT
    return PARTIAL if grade >= partial else NOT_SUPPORT


def nugget_scores(labels: list[tuple[str, str]]) -> dict[str, float]:
    """The six scores of one answer from its (importance, label) per nugget (the module docstring's
    formulas); keys ``A``, ``A_strict``, ``V``, ``V_strict``, ``W``, ``W_strict``."""
    out: dict[str, float] = {}
    vital = [label for imp, label in labels if imp == VITAL]
    okay = [label for imp, label in labels if imp == OKAY]
    for suffix, credit in (("", CREDIT), ("_strict", STRICT_CREDIT)):
        # nuggetizer's semantics: a label other than the three earns nothing; A counts every nugget,
        # whatever its importance word; only "vital" is vital, and W's okay weight goes to "okay" only
        every = math.fsum(credit.get(label, 0.0) for _imp, label in labels)
        v = math.fsum(credit.get(label, 0.0) for label in vital)
        o = math.fsum(credit.get(label, 0.0) for label in okay)
        out["A" + suffix] = every / len(labels) if labels else 0.0
        out["V" + suffix] = v / len(vital) if vital else 0.0
        weight = len(vital) + OKAY_WEIGHT * len(okay)
        out["W" + suffix] = (v + OKAY_WEIGHT * o) / weight if weight else 0.0
    return out


# the track computes its scores from nugget assignments only (core/grade_kinds.py): over a relevance grade or a
# self-rating, A ... W would name a value the track never computes
TRACK_GRADES = GradesNeeded("assignment", "a TREC RAG track score, computed from nugget-assignment grades only",
                            "grade with the grader option prompt=nugget-assignment, docs/trec-rag.md")


def scores_the_track(spec: GraderSpec) -> bool:
    """Whether the track's scores mean something over ``spec``'s grades: assignment grades only."""
    return grade_kind(spec) == "assignment"


TRACK_KEYS = ("A", "A_strict", "V", "V_strict", "W", "W_strict")


def per_topic_scores(labels: dict[str, dict[str, list[tuple[str, str]]]]) -> dict[str, dict[str, dict[str, float]]]:
    """run -> topic -> the six scores, from recorded labels (an assignment file's) with no grader."""
    return {run: {q: nugget_scores(nuggets) for q, nuggets in by_topic.items()} for run, by_topic in labels.items()}


def run_means(per_topic: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """run -> each score's mean over the run's topics (nuggetizer's ``calculate_global_metrics``: every
    record of the file counts once)."""
    return {run: {key: math.fsum(scores[key] for scores in by_topic.values()) / len(by_topic) for key in TRACK_KEYS}
            for run, by_topic in per_topic.items() if by_topic}


# ctx -> (k, tau, partial) -> run -> query -> [(importance, label)], shared by the six measures
Labels = dict[str, dict[str, list[tuple[str, str]]]]  # run -> query -> (importance, label) per nugget
_ASSIGNED: weakref.WeakKeyDictionary[ScoringContext, dict[tuple[int, int, int], Labels]] = weakref.WeakKeyDictionary()


def assignments(ctx: ScoringContext, k: int, tau: int, partial: int) -> Labels:
    """run -> query -> (importance, label) of each nugget of the query, in bank order, for every query
    whose nuggets carry an importance (memoised per context)."""
    memo = _ASSIGNED.setdefault(ctx, {})
    known = memo.get((k, tau, partial))
    if known is not None:
        return known
    importance = ctx.exam.importance
    found: Labels = {run: {} for run in ctx.runs}
    top = ctx.top_k(k)
    for q in ctx.queries:
        kinds = importance.get(q)
        if not kinds:
            continue
        bank = ctx.bank(q)
        columns = [(i, kinds.get(t, "vital")) for i, t in enumerate(bank) if t in kinds]
        for run in ctx.runs:
            passages = top[run][q]
            rows = ctx.grade_rows(q, passages)
            best = [max(col) for col in zip(*(rows[p] for p in passages))] if passages else list(repeat(0, len(bank)))
            found[run][q] = [(imp, assignment_label(best[i], tau, partial)) for i, imp in columns]
    memo[(k, tau, partial)] = found
    return found


@dataclass(frozen=True)
class NuggetScore(Measure):
    """Base of the six track scores: ``family`` picks the formula (one subclass each, by :func:`family_of`)."""

    at: ClassVar[str | None] = None
    grades_needed: ClassVar[GradesNeeded | None] = TRACK_GRADES
    k: int | None = None
    min_grade: int | None = None
    partial: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        p, tau = self.partial, self.min_grade
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 1):
            raise ValueError(f"partial={p!r} must be an integer >= 1")
        if p is not None and tau is not None and p > tau:
            raise ValueError(f"partial={p} must not exceed tau={tau} (grades >= tau are support)")

    @property
    def key(self) -> str:
        return self.family

    def bind(self, bindings: Bindings) -> NuggetScore:
        done = super().bind(bindings)
        if done.partial is None and done.min_grade is not None:
            done = replace(done, partial=default_partial(done.min_grade))
        return done

    def requires(self) -> frozenset[str]:
        return frozenset({"grades", "importance"})  # each nugget's grade and its vital/okay label

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k, tau, partial = bound(self, "k"), bound(self, "min_grade"), bound(self, "partial")
        found = assignments(ctx, k, tau, partial)
        return {run: {q: nugget_scores(labels)[self.family] for q, labels in by_query.items()}
                for run, by_query in found.items()}


All = family_of(NuggetScore, "All", "A", "All score: nugget credit over every nugget (support 1, partial 0.5).")
AllStrict = family_of(NuggetScore, "AllStrict", "A_strict", "Strict all score: only supported nuggets earn credit.")
Vital = family_of(NuggetScore, "Vital", "V", "Vital score: nugget credit over the vital nuggets.")
VitalStrict = family_of(NuggetScore, "VitalStrict", "V_strict", "Strict vital score.")
Weighted = family_of(NuggetScore, "Weighted", "W", "Weighted score: vital nuggets weigh 1, okay ones 0.5.")
WeightedStrict = family_of(NuggetScore, "WeightedStrict", "W_strict", "Strict weighted score.")


@dataclass(frozen=True)
class ResponseWords(Measure):
    """Words of each answer (NFKC, split on whitespace, as the track counts them), shown beside the
    nugget scores: nugget recall rewards long answers. Scored on the queries the nugget scores score."""

    family: ClassVar[str] = "response-words"
    bound_from: ClassVar[dict[str, str]] = {"k": "k"}
    grades_needed: ClassVar[GradesNeeded | None] = TRACK_GRADES  # planned with the track's scores alone
    k: int | None = None

    @property
    def key(self) -> str:
        return self.family

    def requires(self) -> frozenset[str]:
        # no grades: the answers' words, on the queries that have labelled nuggets
        return frozenset({"responses", "passage_text", "importance"})

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k = bound(self, "k")
        scored = [q for q in ctx.queries if ctx.exam.importance.get(q)]
        return {run: {q: float(word_count(ctx.response_text(run, q, k))) for q in scored} for run in ctx.runs}


TRACK_MEASURES: tuple[type[Measure], ...] = (All, AllStrict, Vital, VitalStrict, Weighted, WeightedStrict,
                                             ResponseWords)
