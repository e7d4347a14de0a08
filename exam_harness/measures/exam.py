"""The exam measures of the method: EXAM-Cover@k, n-EXAM@k, nugget F and alpha-nDCG@k over test points.

Query rules, shared by all four: a query of the exam that a run did not answer scores 0 (it is
still an exam question asked); a query a run answered but the exam does not contain is ignored.
n-EXAM leaves out a query whose overall cover is empty (``empty=skip``: nobody covered anything, so
the normalised score is undefined there and a 0 would shrink every run's mean alike) or scores it 0
(``empty=zero``, as the reference implementation of the method does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from exam_harness.measures.base import Measure, PerQuery, bound
from exam_harness.measures.intent_aware import dcg, ideal_dcg
from exam_harness.measures.nuggets import QueryNuggets

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext

EMPTY_POLICIES: tuple[str, ...] = ("skip", "zero")


@dataclass(frozen=True)
class ExamCover(Measure):
    """EXAM-Cover@k(tau): the share of a query's test points that some passage of the run's top-k covers."""

    family: ClassVar[str] = "exam-cover"
    shown: ClassVar[str] = "EXAM-Cover"
    k: int | None = None
    min_grade: int | None = None

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k, tau = bound(self, "k"), bound(self, "min_grade")
        return {
            run: {q: len(ctx.covered(run, q, k, tau)) / len(ctx.bank(q)) for q in ctx.queries if ctx.bank(q)}
            for run in ctx.runs
        }


@dataclass(frozen=True)
class NExam(Measure):
    """n-EXAM@k(tau): covered test points / the test points any passage of the pool covers."""

    family: ClassVar[str] = "n-exam-cover"
    shown: ClassVar[str] = "n-EXAM"
    bound_from: ClassVar[dict[str, str]] = {"k": "k", "min_grade": "min_grade", "pool": "pool", "empty": "empty"}
    k: int | None = None
    min_grade: int | None = None
    pool: str | None = None
    empty: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.empty is not None and self.empty not in EMPTY_POLICIES:
            raise ValueError(f"empty={self.empty!r} must be one of {', '.join(EMPTY_POLICIES)}")

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k, tau = bound(self, "k"), bound(self, "min_grade")
        overall = ctx.overall(tau, bound(self, "pool"), k)
        zero = bound(self, "empty") == "zero"
        out: PerQuery = {}
        for run in ctx.runs:
            values: dict[str, float] = {}
            for q in ctx.queries:
                if overall[q]:
                    values[q] = len(ctx.covered(run, q, k, tau)) / len(overall[q])
                elif zero:
                    values[q] = 0.0
            out[run] = values
        return out


@dataclass(frozen=True)
class NuggetF(Measure):
    """Nugget F_beta of each query that has nuggets: recall over nugget weights, a length allowance
    of 100 non-whitespace characters per matched nugget (see measures.nuggets). The length is summed
    from per-passage lengths, each counted once (ScoringContext.response_length)."""

    family: ClassVar[str] = "nugget-f"
    bound_from: ClassVar[dict[str, str]] = {"k": "k", "min_grade": "min_grade", "beta": "beta"}
    k: int | None = None
    min_grade: int | None = None
    beta: float | None = None

    @property
    def key(self) -> str:
        return "nugget-f"

    def requires(self) -> frozenset[str]:
        # the nuggets' weights, and the generated response (else the top-k passages' text) it charges
        return frozenset({"grades", "nuggets", "responses", "passage_text"})

    @property
    def title(self) -> str:
        return "nugget-F"

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k, tau, beta = bound(self, "k"), bound(self, "min_grade"), bound(self, "beta")
        scored: dict[str, QueryNuggets] = {}  # query -> its nuggets, weights summed once for every run
        for q in ctx.queries:
            weights = ctx.exam.nuggets.get(q)
            if weights:
                scored[q] = QueryNuggets(weights, beta=beta)
        lengths = ctx.response_lengths(k)
        out: PerQuery = {}
        for run in ctx.runs:
            values: dict[str, float] = {}
            charged = lengths[run]
            for q, nuggets in scored.items():
                values[q] = nuggets.f_covering(charged[q], ctx.covered(run, q, k, tau))
            out[run] = values
        return out


@dataclass(frozen=True)
class AlphaNDCG(Measure):
    """alpha-nDCG@k over test points, the ideal ranking over the pool (see measures.intent_aware)."""

    family: ClassVar[str] = "alpha-ndcg"
    shown: ClassVar[str] = "α-nDCG"
    printed: ClassVar[dict[str, str]] = {"min_grade": "tau"}
    bound_from: ClassVar[dict[str, str]] = {"k": "k", "min_grade": "min_grade", "alpha": "redundancy_alpha",
                                            "pool": "pool"}
    k: int | None = None
    min_grade: int | None = None
    alpha: float | None = None
    pool: str | None = None

    def compute(self, ctx: ScoringContext) -> PerQuery:
        k, tau, alpha = bound(self, "k"), bound(self, "min_grade"), bound(self, "alpha")
        pools = ctx.pool(bound(self, "pool"), k)
        top = ctx.top_k(k)
        out: PerQuery = {run: {} for run in ctx.runs}
        for q in ctx.queries:
            if not ctx.bank(q):
                continue
            coverage = ctx.coverage(q, tau, pools[q])
            pooled = {p: coverage[p] for p in pools[q]}
            ideal = ideal_dcg(pooled, pooled, k=k, alpha=alpha)
            for run in ctx.runs:
                out[run][q] = 0.0 if ideal == 0.0 else dcg(top[run][q], pooled, k, 1.0 - alpha) / ideal
        return out
