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
from typing import TYPE_CHECKING, Any

from exam_harness.results.schema import ExamReport

if TYPE_CHECKING:
    from exam_harness.measures.qrels import Qrels
    from exam_harness.plan import ExamPlan
    from exam_harness.report.reporters import FileContent

METRICS_FILE = "trec-rag-metrics.jsonl"
ASSIGNMENTS_FILE = "trec-rag-assignments.jsonl"
# report key -> nuggetizer's metric name
METRIC_NAMES = {"A": "all_score", "A_strict": "strict_all_score", "V": "vital_score",
                "V_strict": "strict_vital_score", "W": "weighted_score", "W_strict": "strict_weighted_score"}


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
                                 for n in a.nuggets]} for a in _assignments(report))
        return {METRICS_FILE: "".join(_lines(metrics_rows(report))), ASSIGNMENTS_FILE: "".join(_lines(assigned))}


def _assignments(report: ExamReport) -> list[Any]:
    """The report's TREC RAG assignments at its tau (its trec-rag section; none without one)."""
    content = report.sections.get("trec-rag")
    return list(content.at(report.settings.min_grade)) if content is not None else []


REPORTER = TrecRagReporter()
