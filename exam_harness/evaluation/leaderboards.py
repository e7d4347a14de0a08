"""The evaluation pipeline as a library: every leaderboard of the method for chosen minimum grades.

Per minimum grade tau:
- ``exam-cover@K`` and ``n-exam-cover@K`` (mean over queries, standard error);
- trec_eval measures over EXAM-Qrels (``P@20``, ``map``, ``ndcg@10``, ``ndcg@20``, ``rprec``,
  ``mrr``) per label variant (max-grade: relevance level tau; count and at-least-m: level 1);
- beyond the papers: ``alpha-ndcg@K`` over test points, and ``nugget-f`` (pyramid weights from
  the bank, length allowance, beta) for nugget banks or on request.

Every leaderboard carries a bootstrap confidence interval per system, Spearman's rho and Kendall's
tau against an official leaderboard when one is given, and paired significance tests against a
baseline run on request. Nothing here imports torch: replaying recorded grades stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from exam_harness.errors import ConfigError, InputError
from exam_harness.evaluation.agreement import agreement_tables
from exam_harness.evaluation.grades import GradeTable
from exam_harness.evaluation.inputs import ExamView
from exam_harness.evaluation.results import (
    CollectionSummary,
    ComparisonResult,
    CorrelationResult,
    EvaluationResult,
    Leaderboard,
    SignificanceResult,
    finite,
)
from exam_harness.evaluation.statistics import bootstrap_cis, compare_runs
from exam_harness.metrics.correlation import leaderboard_correlation
from exam_harness.metrics.intent_aware import alpha_ndcg_runs
from exam_harness.metrics.nuggets import matched_nuggets, nugget_f
from exam_harness.metrics.qrels import DEFAULT_MEASURES, VARIANTS, evaluate, parse_measure, qrels_labels, relevance_level
from exam_harness.metrics.significance import METHODS

PerQuery = dict[str, dict[str, float]]  # run -> query -> value


class EvaluationSettings(BaseModel):
    """Everything that shapes the leaderboards (written into the JSON result)."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=20, ge=1)
    min_grades: list[int] = Field(default_factory=lambda: [4])
    labels: list[str] = Field(default_factory=lambda: list(VARIANTS))
    measures: list[str] = Field(default_factory=lambda: list(DEFAULT_MEASURES))
    qrels_m: int = Field(default=2, ge=1)
    judgment_level: int = 2
    alpha_ndcg: bool = True
    redundancy_alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    nugget_f: bool | None = None  # None: when the bank has nuggets
    beta: float = Field(default=3.0, gt=0.0)
    bootstrap: int = Field(default=1000, ge=0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    seed: int = 0
    baseline: str | None = None
    significance: str = "permutation"
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    resamples: int = Field(default=10000, ge=1)
    per_query: bool = False

    @field_validator("min_grades")
    @classmethod
    def _grades_ok(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("at least one minimum grade")
        if any(t < 1 for t in v):
            raise ValueError(f"minimum grades must be >= 1, got {v}")
        return list(dict.fromkeys(v))

    @field_validator("labels")
    @classmethod
    def _labels_ok(cls, v: list[str]) -> list[str]:
        bad = [x for x in v if x not in VARIANTS]
        if bad:
            raise ValueError(f"unknown qrels label variant(s) {bad}; valid: {', '.join(VARIANTS)}")
        return list(dict.fromkeys(v))

    @field_validator("measures")
    @classmethod
    def _measures_ok(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(parse_measure(m).name for m in v))

    @field_validator("significance")
    @classmethod
    def _method_ok(cls, v: str) -> str:
        if v not in METHODS:
            raise ValueError(f"unknown significance test {v!r}; valid: {', '.join(METHODS)}")
        return v


def fast_mean_stderr(values: list[float]) -> tuple[float, float]:
    """:func:`exam_harness.metrics.stats.mean_stderr` in floating point (the same to ~1e-15);
    ``statistics.stdev`` computes exactly with fractions, which costs seconds over thousands of runs."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) / math.sqrt(n)


def cover_name(k: int, normalised: bool = False) -> str:
    return f"{'n-' if normalised else ''}exam-cover@{k}"


def check_min_grades(min_grades: Sequence[int], max_grade: int) -> None:
    too_high = [t for t in min_grades if t > max_grade]
    if too_high:
        raise ConfigError(
            f"--min-grade {' '.join(map(str, too_high))} is above the grades' scale 0..{max_grade}; "
            f"use values in 1..{max_grade}"
        )


class _Boards:
    """Collects leaderboards with their per-query values, then adds intervals, correlations, tests."""

    def __init__(self, settings: EvaluationSettings, queries: list[str], official: Mapping[str, float] | None) -> None:
        self.settings = settings
        self.queries = queries
        self.official = official
        self.boards: list[Leaderboard] = []

    def add(
        self,
        measure: str,
        min_grade: int,
        per_query: PerQuery,
        *,
        label: str | None = None,
        level: int | None = None,
        queries: list[str] | None = None,
    ) -> None:
        """``queries``: the queries a score averages over (default every exam query, missing = 0);
        ``[]`` means each run's own queries (n-EXAM leaves out queries nobody covers)."""
        s = self.settings
        filled: PerQuery
        if queries == []:
            filled = {run: dict(values) for run, values in per_query.items()}
        else:
            qids = queries if queries is not None else self.queries
            filled = {run: {q: float(values.get(q, 0.0)) for q in qids} for run, values in per_query.items()}
        systems: dict[str, float] = {}
        stderr: dict[str, float] = {}
        for run, values in filled.items():
            systems[run], stderr[run] = fast_mean_stderr(list(values.values()))
        board = Leaderboard(
            measure=measure,
            label=label,
            min_grade=min_grade,
            relevance_level=level,
            queries=max((len(v) for v in filled.values()), default=0),
            systems=systems,
            stderr=stderr,
            per_query=filled if s.per_query else None,
        )
        if s.bootstrap:
            board.ci = bootstrap_cis(filled, n_resamples=s.bootstrap, seed=s.seed, confidence=s.confidence)
        if self.official:
            c = leaderboard_correlation(systems, self.official)
            board.correlation = CorrelationResult(
                spearman=finite(c.spearman), kendall=finite(c.kendall), n=c.n, spearman_p=finite(c.spearman_p),
                kendall_p=finite(c.kendall_p), missing=c.missing, extra=c.extra,
            )
        if s.baseline is not None:
            board.significance = self._significance(filled)
        self.boards.append(board)

    def _significance(self, filled: PerQuery) -> SignificanceResult:
        s = self.settings
        assert s.baseline is not None
        qids = sorted({q for values in filled.values() for q in values})
        comparisons = compare_runs(
            filled, s.baseline, queries=qids, alpha=s.alpha, method=s.significance, n_resamples=s.resamples, seed=s.seed
        )
        return SignificanceResult(
            baseline=s.baseline,
            method=s.significance,
            alpha=s.alpha,
            resamples=s.resamples,
            runs={
                c.run: ComparisonResult(
                    diff=c.diff, ci=(c.ci_low, c.ci_high), p=c.p,
                    significantly_worse=c.significantly_worse, significantly_better=c.significantly_better,
                )
                for c in comparisons
            },
        )


def compute_leaderboards(
    view: ExamView,
    table: GradeTable,
    settings: EvaluationSettings | None = None,
    *,
    official: Mapping[str, float] | None = None,
    responses: Mapping[str, Mapping[str, str]] | None = None,
) -> EvaluationResult:
    """Every leaderboard for ``settings.min_grades`` plus the agreement tables (see the module doc).

    ``responses`` (run -> query -> full generated text) sets the length that nugget F charges;
    without it a response is the run's top-k passage texts joined.
    """
    s = settings or EvaluationSettings()
    check_min_grades(s.min_grades, table.max_grade)
    data = view.data
    if s.baseline is not None and s.baseline not in data.runs:
        import difflib

        close = difflib.get_close_matches(s.baseline, list(data.runs), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"baseline run not found.{hint}", field="baseline", value=s.baseline,
            expected="one of " + ", ".join(sorted(data.runs)),
        )
    queries = view.queries
    test_points = {q: view.test_points[q] for q in queries}
    pool = {q: view.pool.get(q, []) for q in queries}
    grades = table.grades
    rankings = view.rankings(s.k)
    boards = _Boards(s, queries, official)
    use_nuggets = s.nugget_f if s.nugget_f is not None else any(p.kind == "nugget" for p in view.points.values())

    max_grade_cache: dict[str, dict[str, int]] | None = None
    for tau in s.min_grades:
        exam, n_exam = cover_per_query(rankings, test_points, grades, pool, min_grade=tau)
        boards.add(cover_name(s.k), tau, exam)
        boards.add(cover_name(s.k, True), tau, n_exam, queries=[])
        counts: dict[str, dict[str, int]] | None = None
        for variant in s.labels:
            if variant == "max-grade":  # labels do not depend on tau, only the relevance level does
                if max_grade_cache is None:
                    max_grade_cache = qrels_labels(grades, test_points, pool, variant=variant, min_grade=1, missing="zero")
                qrels = max_grade_cache
            else:  # at-least-m is "count >= m": one pass over the grades serves both
                if counts is None:
                    counts = qrels_labels(grades, test_points, pool, variant="count", min_grade=tau, missing="zero")
                qrels = counts if variant == "count" else {
                    q: {p: int(c >= s.qrels_m) for p, c in labels.items()} for q, labels in counts.items()
                }
            level = relevance_level(variant, tau)
            measured = evaluate(qrels, rankings, s.measures, relevance_level=level)
            for m in s.measures:
                per_query = {run: {q: v[m] for q, v in by_q.items() if m in v} for run, by_q in measured.items()}
                boards.add(m, tau, per_query, label=variant, level=level)
        if s.alpha_ndcg:
            per_query = alpha_ndcg_runs(
                rankings, test_points, grades, k=s.k, alpha=s.redundancy_alpha, min_grade=tau,
                extra_passages=pool, missing="zero",
            )
            boards.add(f"alpha-ndcg@{s.k}", tau, per_query)
        if use_nuggets:
            boards.add("nugget-f", tau, _nugget_f(view, rankings, grades, tau, s.beta, responses or {}))

    agreement = None
    if data.judgments:
        agreement = agreement_tables(
            grades, test_points, data.judgments, relevance_level=s.judgment_level, min_grades=s.min_grades
        )
    return EvaluationResult(
        leaderboards=boards.boards,
        agreement=agreement,
        settings=s.model_dump(mode="json"),
        grading=table.summary,
        collection=collection_summary(view),
        official=dict(official) if official else None,
    )


def cover_per_query(
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    test_points: Mapping[str, Sequence[str]],
    grades: Mapping[tuple[str, str], int],
    pool: Mapping[str, Sequence[str]],
    *,
    min_grade: int,
) -> tuple[PerQuery, PerQuery]:
    """EXAM-Cover and n-EXAM per run and query, exactly as
    :func:`exam_harness.metrics.cover.cover_scores` (missing grades 0, the pool joining the n-EXAM
    normaliser, queries nobody covers left out of n-EXAM; tested equal), but each pool passage's
    covered test points are looked up once per minimum grade instead of once per run that ranks it.
    ``rankings`` must already be cut at k."""
    covers: dict[str, dict[str, frozenset[str]]] = {}
    overall: dict[str, frozenset[str]] = {}
    for qid, tids in test_points.items():
        bank = list(dict.fromkeys(tids))
        if not bank:
            continue
        per_passage: dict[str, frozenset[str]] = {}
        union: set[str] = set()
        passages = list(pool.get(qid, ()))
        for ranking in rankings.values():
            passages.extend(ranking.get(qid, ()))
        for pid in passages:
            if pid not in per_passage:
                covered = frozenset(t for t in bank if grades.get((pid, t), 0) >= min_grade)
                per_passage[pid] = covered
                union |= covered
        covers[qid] = per_passage
        overall[qid] = frozenset(union)
    exam: PerQuery = {}
    n_exam: PerQuery = {}
    for run, ranking in rankings.items():
        e: dict[str, float] = {}
        n: dict[str, float] = {}
        for qid, per_passage in covers.items():
            covered: set[str] = set()
            for pid in ranking.get(qid, ()):
                covered |= per_passage[pid]
            e[qid] = len(covered) / len(dict.fromkeys(test_points[qid]))
            if overall[qid]:
                n[qid] = len(covered) / len(overall[qid])
        exam[run], n_exam[run] = e, n
    return exam, n_exam


def _nugget_f(
    view: ExamView,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    grades: Mapping[tuple[str, str], int],
    tau: int,
    beta: float,
    responses: Mapping[str, Mapping[str, str]],
) -> PerQuery:
    passages = view.data.passages
    out: PerQuery = {}
    for run, ranking in rankings.items():
        values: dict[str, float] = {}
        for qid in view.queries:
            tids = view.test_points[qid]
            weights = {t: (view.points[t].weight if t in view.points else 1.0) for t in tids}
            top = list(ranking.get(qid, ()))
            matched = matched_nuggets(qid, top, tids, grades, min_grade=tau, missing="zero")
            text = responses.get(run, {}).get(qid)
            if text is None:
                text = " ".join(passages[p].text for p in top if p in passages)
            values[qid] = nugget_f(text, weights, matched, beta=beta).f
        out[run] = values
    return out


def collection_summary(view: ExamView) -> CollectionSummary:
    queries = view.queries
    distinct = {p for q in queries for p in view.pool.get(q, [])}
    return CollectionSummary(
        queries=len(queries),
        passages=sum(len(view.pool.get(q, [])) for q in queries),
        distinct_passages=len(distinct),
        runs=len(view.data.runs),
        test_points=sum(len(view.test_points[q]) for q in queries),
        judged=sum(len(j) for q, j in view.data.judgments.items() if q in view.test_points),
    )


def correlation_rows(result: EvaluationResult) -> list[dict[str, Any]]:
    """Flat rows (measure, label, min_grade, spearman, kendall) for printing and comparisons."""
    rows = []
    for b in result.leaderboards:
        if b.correlation is not None:
            rows.append(
                {"measure": b.measure, "label": b.label, "min_grade": b.min_grade,
                 "spearman": b.correlation.spearman, "kendall": b.correlation.kendall, "n": b.correlation.n}
            )
    return rows


def write_qrels_files(
    view: ExamView, table: GradeTable, settings: EvaluationSettings, folder: str | Path
) -> list[Path]:
    """The EXAM-Qrels of every label variant and minimum grade, as trec qrels files in ``folder``:
    ``exam-max-grade.qrels`` (labels 0..5; binarise with trec_eval -l TAU), and
    ``exam-count-min{TAU}.qrels`` / ``exam-at-least-{m}-min{TAU}.qrels`` (relevance level 1)."""
    from exam_harness.metrics.qrels import write_qrels

    folder = Path(folder)
    queries = view.queries
    test_points = {q: view.test_points[q] for q in queries}
    pool = {q: view.pool.get(q, []) for q in queries}
    written: list[Path] = []
    for variant in settings.labels:
        taus = [settings.min_grades[0]] if variant == "max-grade" else settings.min_grades
        for tau in taus:
            qrels = qrels_labels(table.grades, test_points, pool, variant=variant, min_grade=tau, m=settings.qrels_m,
                                 missing="zero")
            if variant == "max-grade":
                name = "exam-max-grade.qrels"
            elif variant == "count":
                name = f"exam-count-min{tau}.qrels"
            else:
                name = f"exam-at-least-{settings.qrels_m}-min{tau}.qrels"
            written.append(write_qrels(folder / name, qrels))
    return written
