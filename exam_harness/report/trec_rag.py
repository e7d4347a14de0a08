"""The TREC RAG track's report files: nuggetizer's metrics and assignment shapes, per run.

``trec-rag-metrics.jsonl``: per run, one row per query ``{"run_id", "qid", "all_score", "strict_all_score",
"vital_score", "strict_vital_score", "weighted_score", "strict_weighted_score"}`` and a ``"qid": "all"`` row
with the run's means; read from the report's A ... W_strict values, so they are the leaderboard's numbers.
``trec-rag-assignments.jsonl``: one row per (run, query) ``{"run_id", "qid", "query", "answer_text",
"response_length", "nuggets": [{"text", "importance", "assignment"}]}``. Both are written whenever a bank's
nuggets carry an importance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from exam_harness.answers import word_count
from exam_harness.measures.trec_rag import assignments, default_partial
from exam_harness.results.schema import ExamReport, NuggetAssignment, RagAssignments

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext
    from exam_harness.measures.qrels import Qrels
    from exam_harness.models import TestPoint
    from exam_harness.plan import ExamPlan
    from exam_harness.report.reporters import FileContent

METRICS_FILE = "trec-rag-metrics.jsonl"
ASSIGNMENTS_FILE = "trec-rag-assignments.jsonl"
# report key -> nuggetizer's metric name
METRIC_NAMES = {"A": "all_score", "A_strict": "strict_all_score", "V": "vital_score",
                "V_strict": "strict_vital_score", "W": "weighted_score", "W_strict": "strict_weighted_score"}


def rag_assignments(ctx: ScoringContext, k: int, tau: int, points: Mapping[str, TestPoint],
                    query_texts: Mapping[str, str], secret: Mapping[str, bool]) -> list[RagAssignments]:
    """Every (run, query) of the track's queries with each nugget's label and the grade behind it."""
    partial = default_partial(tau)
    found = assignments(ctx, k, tau, partial)
    top = ctx.top_k(k)
    rows: list[RagAssignments] = []
    for run, by_query in found.items():
        for q, labels in by_query.items():
            kinds = ctx.exam.importance[q]
            ids = [t for t in ctx.bank(q) if t in kinds]
            grades = ctx.grade_rows(q, top[run][q])
            best = {t: max((grades[p][i] for p in top[run][q]), default=None)
                    for i, t in enumerate(ctx.bank(q)) if t in kinds}
            text = ctx.response_text(run, q, k)
            nuggets = [NuggetAssignment(text=None if secret.get(t) else points[t].text if t in points else None,
                                        importance=imp, assignment=label, grade=best[t])
                       for t, (imp, label) in zip(ids, labels)]
            rows.append(RagAssignments(run_id=run, qid=q, query=query_texts.get(q, ""), answer_text=text,
                                       response_length=word_count(text), nuggets=nuggets))
    return rows


def track_names(report: ExamReport) -> dict[str, str]:
    """Each track score the report holds (``A`` ... ``W_strict``) -> its measure name in the report."""
    from exam_harness.measures.lookup import find_measure

    found = {key: find_measure(report.measures, key) for key in METRIC_NAMES}
    return {key: info.name for key, info in found.items() if info is not None}


def metrics_rows(report: ExamReport) -> Iterator[dict[str, object]]:
    names = track_names(report)
    for system in report.systems:
        if not any(name in system.scores for name in names.values()):
            continue
        for row in report.per_query:
            if row.run == system.run and any(name in row.scores for name in names.values()):
                yield {"run_id": row.run, "qid": row.query_id,
                       **{METRIC_NAMES[key]: row.scores[name] for key, name in names.items() if name in row.scores}}
        yield {"run_id": system.run, "qid": "all",
               **{METRIC_NAMES[key]: system.scores[name].mean for key, name in names.items() if name in system.scores}}


def _lines(rows: Iterator[dict[str, object]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"


class TrecRagReporter:
    """``trec-rag-metrics.jsonl`` and ``trec-rag-assignments.jsonl`` where the report holds the track's scores."""

    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, FileContent]:
        if not track_names(report):
            return {}
        assigned = ({"run_id": a.run_id, "qid": a.qid, "query": a.query, "answer_text": a.answer_text,
                     "response_length": a.response_length,
                     "nuggets": [{"text": n.text, "importance": n.importance, "assignment": n.assignment}
                                 for n in a.nuggets]} for a in report.trec_rag)
        return {METRICS_FILE: "".join(_lines(metrics_rows(report))), ASSIGNMENTS_FILE: "".join(_lines(assigned))}


REPORTER = TrecRagReporter()
