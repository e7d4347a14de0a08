"""Every run scored over given qrels files (``evaluate --qrels`` / ``--official-qrels``): one leaderboard per file,
relevance level and trec_eval measure, correlated with the official leaderboard, and with official qrels the
per-query correlations (the external-qrels section's content, model.py's ExternalQrelsResult)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from exam_harness.api import ConfigError, InputError
from exam_harness.features.external_qrels.inputs import NO_TREC_MEASURE, OFFICIAL_FROM_JUDGMENTS, QrelsRequest
from exam_harness.features.external_qrels.model import (
    OFFICIAL_QRELS_SOURCE,
    ExternalLeaderboard,
    ExternalQrelsResult,
    PerQueryCorrelation,
    QrelsMap,
    Rankings,
)
from exam_harness.measures.correlation import Correlation, leaderboard_correlation
from exam_harness.measures.stats import mean_stderr
from exam_harness.measures.trec import parse_trec_name, trec_eval

if TYPE_CHECKING:
    from exam_harness.api import Scored

# the track's retrieval measure in 2025 (the TREC 2025 RAG overview, arXiv 2603.09891; docs/trec-rag.md)
TRACK_2025_MEASURES = ("ndcg@30",)


@dataclass(frozen=True)
class ExternalQrels:
    """What ``--qrels`` scores: the runs' rankings (in the order trec_eval reads them), the given qrels
    files (name -> qrels) at each relevance level, the trec_eval measures, and the official qrels
    (``--official-qrels``, else the judgments of the run files; None when there are none) at the
    judgment relevance level."""

    rankings: Rankings
    qrels: Mapping[str, QrelsMap]
    measures: Sequence[str]
    relevance_levels: Sequence[int] = (1,)
    official_qrels: QrelsMap | None = None
    official_name: str | None = None
    official_relevance_level: int = 2


def external_request(scored: Scored, request: QrelsRequest) -> ExternalQrels:
    """What --qrels scores: every run at its full depth, ordered for trec_eval (the plan's tie order); the
    official qrels are --official-qrels, else the judgments of the run files."""
    plan, data = scored.plan, scored.view.data
    official, files, measures = request.official, request.files, plan.trec_measures
    if request.track_2025:
        assert official is not None  # the options refuse the 2025 evaluation without --official-qrels
        measures = TRACK_2025_MEASURES
        files = {name: {q: labels for q, labels in qrels.items() if q in official} for name, qrels in files.items()}
    if not measures:
        raise ConfigError(NO_TREC_MEASURE)  # a library caller's plan; evaluate refuses it before grading
    rankings = {
        name: {q: (run.trec_order(q) if plan.tie_order == "score" else run.top_k(q, len(ranked)))
               for q, ranked in run.rankings.items()}
        for name, run in sorted(data.runs.items())
    }
    if official is None and data.judgments:
        official = data.judgments
    return ExternalQrels(rankings=rankings, qrels=files, measures=measures, relevance_levels=request.levels,
                         official_qrels=official, official_name=request.official_file or OFFICIAL_FROM_JUDGMENTS,
                         official_relevance_level=plan.relevance_level)


def _score_correlation(ours: Mapping[str, float], theirs: Mapping[str, float]) -> Correlation:
    """Correlation of two score maps, both higher-is-better (the official side negated into "ranks")."""
    return leaderboard_correlation(ours, {key: -value for key, value in theirs.items()})


def scored_queries(name: str, qrels: QrelsMap, rankings: Rankings) -> list[str]:
    """The qrels' queries some run ranks passages for (qrels order). No such query is an InputError that
    shows both sides' ids, since a leaderboard over nothing would read as every run scoring 0."""
    ranked = {q for ranking in rankings.values() for q, pids in ranking.items() if pids}
    queries = [q for q in qrels if q in ranked]
    if not queries:
        from exam_harness.results.preflight import near_match

        have = sorted(ranked)
        hints = [f"{q!r} ~ {m}" for q in sorted(qrels)[:50] if (m := near_match(q, have))]
        raise InputError(
            f"no query of the qrels is ranked by any run: qrels {sorted(qrels)[:5]}, runs {have[:5]}"
            + (f" (near matches: {', '.join(hints[:3])})" if hints else ""),
            path=name, field="query_id", expected="qrels for the queries the runs answer")
    return queries


def qrels_leaderboards(
    name: str, qrels: QrelsMap, rankings: Rankings, measures: Sequence[str], relevance_level: int
) -> list[ExternalLeaderboard]:
    """One leaderboard per measure: trec_eval over the qrels' queries some run ranks; a run that does
    not rank one of them scores 0 on it (trec_eval -c), so every run averages over the same queries.
    Runs are scored at the depth they were given (no cut at --k), as trec_eval scores a run file."""
    queries = scored_queries(name, qrels, rankings)
    subset = {run: {q: ranking[q] for q in queries if ranking.get(q)} for run, ranking in rankings.items()}
    values = trec_eval({q: qrels[q] for q in queries}, subset, measures, relevance_level=relevance_level)
    boards = []
    for measure in (parse_trec_name(m).name for m in measures):
        per_query = {run: {q: values.get(run, {}).get(q, {}).get(measure, 0.0) for q in queries} for run in rankings}
        stats = {run: mean_stderr(v.values()) for run, v in per_query.items()}
        boards.append(ExternalLeaderboard(
            qrels=name, measure=measure, relevance_level=relevance_level, queries=len(queries),
            systems={run: m for run, (m, _) in stats.items()}, stderr={run: e for run, (_, e) in stats.items()},
            per_query=per_query,
        ))
    return boards


def per_query_correlation(
    source: Mapping[str, Mapping[str, float]], official: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, Correlation], Correlation, list[tuple[str, str, float, float]]]:
    """Per query both sides score, the correlation over the runs both score; then the pooled
    correlation over every (run, query) point and the points themselves."""
    queries = [q for q in dict.fromkeys(q for values in official.values() for q in values)
               if any(q in values for values in source.values())]
    per_query: dict[str, Correlation] = {}
    points: list[tuple[str, str, float, float]] = []
    for q in queries:
        ours = {run: v[q] for run, v in source.items() if q in v and run in official and q in official[run]}
        theirs = {run: official[run][q] for run in ours}
        per_query[q] = _score_correlation(ours, theirs)
        points.extend((run, q, theirs[run], ours[run]) for run in ours)
    keys = {f"{run}\t{q}": (o, s) for run, q, o, s in points}
    pooled = _score_correlation({k: s for k, (_, s) in keys.items()}, {k: o for k, (o, _) in keys.items()})
    return per_query, pooled, points


def _per_query_result(
    values: Mapping[str, Mapping[str, float]], official: ExternalLeaderboard, *, source: str, measure: str,
    min_grade: int | None = None, relevance_level: int | None = None,
) -> PerQueryCorrelation:
    assert official.per_query is not None  # official boards keep theirs until every correlation is made
    per_query, pooled, points = per_query_correlation(values, official.per_query)
    rhos = [c.spearman for c in per_query.values() if c.spearman is not None]
    taus = [c.kendall for c in per_query.values() if c.kendall is not None]
    return PerQueryCorrelation(
        source=source, measure=measure, min_grade=min_grade, relevance_level=relevance_level,
        official_measure=official.measure, queries=per_query,
        mean_spearman=sum(rhos) / len(rhos) if rhos else None, mean_kendall=sum(taus) / len(taus) if taus else None,
        undefined=sum(1 for c in per_query.values() if c.kendall is None), pooled=pooled, points=points,
    )


def external_qrels_evaluation(
    request: ExternalQrels,
    *,
    official: Mapping[str, float] | None = None,
    exam_sources: Mapping[tuple[str, int], Mapping[str, Mapping[str, float]]] | None = None,
    keep_per_query: bool = False,
) -> ExternalQrelsResult:
    """Every run over the official qrels and over each given qrels file at each relevance level, one
    leaderboard per measure, correlated with the official leaderboard when given. With official qrels,
    the per-query correlation of each given file's leaderboard with the official qrels' leaderboard of
    the same measure, and of each EXAM leaderboard in ``exam_sources`` ((measure key, tau) -> run ->
    query -> value) with the official qrels' leaderboard of every measure."""
    boards: list[ExternalLeaderboard] = []
    if request.official_qrels is not None:
        boards += qrels_leaderboards(OFFICIAL_QRELS_SOURCE, request.official_qrels, request.rankings,
                                     request.measures, request.official_relevance_level)
    for name, qrels in request.qrels.items():
        for level in request.relevance_levels:
            boards += qrels_leaderboards(name, qrels, request.rankings, request.measures, level)
    official_boards = {b.measure: b for b in boards if b.qrels == OFFICIAL_QRELS_SOURCE}
    correlations: list[PerQueryCorrelation] = []
    for (key, tau), values in (exam_sources or {}).items() if official_boards else ():
        correlations += [_per_query_result(values, ob, source=key, measure=key, min_grade=tau)
                         for ob in official_boards.values()]
    for board in boards:
        ob = official_boards.get(board.measure)
        if ob is not None and board.qrels != OFFICIAL_QRELS_SOURCE and board.per_query is not None:
            correlations.append(_per_query_result(board.per_query, ob, source=board.qrels, measure=board.measure,
                                                  relevance_level=board.relevance_level))
    for board in boards:
        if official:
            board.correlation = leaderboard_correlation(board.systems, official)
        if not keep_per_query:
            board.per_query = None
    return ExternalQrelsResult(
        official_qrels=request.official_name if request.official_qrels is not None else None,
        official_relevance_level=request.official_relevance_level,
        relevance_levels=list(request.relevance_levels), measures=[parse_trec_name(m).name for m in request.measures],
        leaderboards=boards, per_query=correlations,
    )
