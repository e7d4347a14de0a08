"""The TREC RAG track's report files: nuggetizer's metrics and assignment shapes, per run.

``trec-rag-metrics.jsonl``: per run, one row per query ``{"run_id", "qid", "all_score", "strict_all_score",
"vital_score", "strict_vital_score", "weighted_score", "strict_weighted_score"}`` and a ``"qid": "all"`` row
with the run's means; read from the report's A ... W_strict values, so they are the leaderboard's numbers.
``trec-rag-assignments.jsonl``: one row per (run, query) ``{"run_id", "qid", "query", "answer_text",
"response_length", "nuggets": [{"text", "importance", "assignment"}]}``. Per run, ``trec-rag-<run>.metrics.jsonl``
(nuggetizer's own metrics file: a row per topic with its four scores, then ``"qid": "all"``) and
``trec-rag-<run>.assignments.jsonl`` (that run's rows: nuggetizer's ``metrics`` on it scores one run, where
on the all-runs file it pools them); ``trec-rag-per-topic.csv`` and ``.txt`` (``run measure topic value``).
All are written where the report holds the track's scores; the per-run and per-topic contents are pure
functions of per-topic scores (:func:`per_run_files`, :func:`per_topic_table`), which ``evaluate
--assignments`` writes too. ``trec-rag-judgments.tsv``: a relevance grader's EXAM-Qrels in the 2025 judgment
subtask's six columns; ``trec-rag-<run>.answers.jsonl``: each run's cited answers in the 2025 format.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from exam_harness.core import ids
from exam_harness.core.ids import file_name
from exam_harness.features.trec_rag.measures import TRACK_KEYS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from exam_harness.api import EvaluationReport, ExamReport, WriterInput
    from exam_harness.core.models import GraderSpec
    from exam_harness.features.trec_rag.document import RagAssignments
    from exam_harness.report.writers import FileContent

METRICS_FILE = "trec-rag-metrics.jsonl"
ASSIGNMENTS_FILE = "trec-rag-assignments.jsonl"
# report key -> nuggetizer's metric name
METRIC_NAMES = {"A": "all_score", "A_strict": "strict_all_score", "V": "vital_score",
                "V_strict": "strict_vital_score", "W": "weighted_score", "W_strict": "strict_weighted_score"}


def track_names(report: ExamReport | EvaluationReport) -> dict[str, str]:
    """Each track score the report holds (``A`` ... ``W_strict``) -> its measure name in the report."""
    from exam_harness.measures.lookup import find_measure

    found = {key: find_measure(report.measures, key) for key in METRIC_NAMES}
    return {key: info.name for key, info in found.items() if info is not None}


def metrics_rows(report: ExamReport | EvaluationReport) -> Iterator[dict[str, object]]:
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


# nuggetizer's metrics file: its four scores in this order (cli/adapters.py, metrics_output_records)
NUGGETIZER_METRICS = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
_OF_METRIC = {name: key for key, name in METRIC_NAMES.items()}


def nuggetizer_metrics_text(per_topic: Mapping[str, Mapping[str, float]]) -> str:
    """One run's metrics file as nuggetizer's ``metrics`` writes it: a row per topic ``{"qid", ...four
    scores}`` and a last ``{"qid": "all"}`` row with their means."""
    rows: list[dict[str, object]] = [{"qid": q, **{m: scores[_OF_METRIC[m]] for m in NUGGETIZER_METRICS}}
                                     for q, scores in per_topic.items()]
    if per_topic:
        rows.append({"qid": "all", **{m: math.fsum(s[_OF_METRIC[m]] for s in per_topic.values()) / len(per_topic)
                                      for m in NUGGETIZER_METRICS}})
    return "".join(_lines(iter(rows)))


def per_run_files(per_topic: Mapping[str, Mapping[str, Mapping[str, float]]],
                  assigned: Mapping[str, list[dict[str, object]]]) -> dict[str, str]:
    """``{file name: content}``: per run ``<run>.metrics.jsonl`` (nuggetizer's metrics file) and
    ``<run>.assignments.jsonl`` (its assignment rows), so nuggetizer's ``metrics`` on one file scores one run."""
    files = {file_name(run, ".metrics.jsonl"): nuggetizer_metrics_text(by_topic) for run, by_topic in per_topic.items()}
    files.update({file_name(run, ".assignments.jsonl"): "".join(_lines(iter(rows))) for run, rows in assigned.items()})
    return files


def per_topic_table(per_topic: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, str]:
    """The six scores per run and topic: ``trec-rag-per-topic.csv`` (run, topic, A ... W_strict) and
    ``trec-rag-per-topic.txt`` (``run measure topic value`` lines, trec_eval -q's order within a run)."""
    header = "run,topic," + ",".join(TRACK_KEYS) + "\n"
    csv_rows = "".join(f"{_csv(run)},{_csv(q)}," + ",".join(repr(scores[k]) for k in TRACK_KEYS) + "\n"
                       for run, by_topic in per_topic.items() for q, scores in by_topic.items())
    text = "".join(f"{run} {key} {q} {scores[key]:.4f}\n" for run, by_topic in per_topic.items()
                   for key in TRACK_KEYS for q, scores in by_topic.items())
    return {"trec-rag-per-topic.csv": header + csv_rows, "trec-rag-per-topic.txt": text}


def _csv(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n') else value


def report_per_topic(report: ExamReport | EvaluationReport) -> dict[str, dict[str, dict[str, float]]]:
    """run -> topic -> the six scores, from a report's per-query rows (where all six are there)."""
    names = track_names(report)
    out: dict[str, dict[str, dict[str, float]]] = {}
    if len(names) != len(TRACK_KEYS):
        return out
    for row in report.per_query:
        if all(name in row.scores for name in names.values()):
            out.setdefault(row.run, {})[row.query_id] = {key: float(row.scores[name]) for key, name in names.items()}
    return out


def rag_assignments(out: WriterInput) -> Sequence[RagAssignments]:
    """The document's TREC RAG assignments at its (first) tau, from its trec-rag section (none without one)."""
    content = out.document.sections.get("trec-rag")
    if content is None:
        return ()
    doc = out.document
    return list(content.at(doc.settings.min_grade if doc.kind == "exam-report" else doc.settings.min_grades[0]))


def _assignment_row(a: RagAssignments) -> dict[str, object]:
    """One (run, topic) as nuggetizer's assign step writes it."""
    return {"query": a.query, "qid": a.qid, "answer_text": a.answer_text, "response_length": a.response_length,
            "run_id": a.run_id, "nuggets": [{"text": n.text, "importance": n.importance, "assignment": n.assignment}
                                            for n in a.nuggets]}


def track_files(out: WriterInput) -> dict[str, str]:
    """Per run ``<run>.metrics.jsonl`` and ``<run>.assignments.jsonl`` (nuggetizer's shapes) and the per-topic
    table, from the document's six scores per (run, topic) and its trec-rag section (none without them)."""
    per_topic = report_per_topic(out.document)
    if not per_topic:
        return {}
    by_run: dict[str, list[dict[str, object]]] = {}
    for a in rag_assignments(out):
        by_run.setdefault(a.run_id, []).append(_assignment_row(a))
    files = per_topic_table(per_topic)
    files.update(per_run_files(per_topic, by_run))  # file names by the one id rule (core/ids.py)
    return files


class TrecRagWriter:
    """``trec-rag-metrics.jsonl`` and ``trec-rag-assignments.jsonl`` where the document holds the track's scores."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        report = out.document
        if not track_names(report):
            return {}
        assigned = ({"run_id": a.run_id, "qid": a.qid, "query": a.query, "answer_text": a.answer_text,
                     "response_length": a.response_length,
                     "nuggets": [{"text": n.text, "importance": n.importance, "assignment": n.assignment}
                                 for n in a.nuggets]} for a in rag_assignments(out))
        files: dict[str, FileContent] = {METRICS_FILE: "".join(_lines(metrics_rows(report))),
                                         ASSIGNMENTS_FILE: "".join(_lines(assigned))}
        for name, text in track_files(out).items():
            files[name if name.startswith("trec-rag-") else f"trec-rag-{name}"] = text
        return files


JUDGMENTS_FILE = "trec-rag-judgments.tsv"


def judgments_run_id(spec: GraderSpec) -> str:
    """The run id the judgments file names: the grader and its model (``exam-openai-gpt-4o``), in the
    letters, digits and ``-._`` a TREC run id is written with."""
    raw = "-".join(part for part in ("exam", spec.name, spec.model or "") if part)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("-") or "exam"


class RelevanceJudgmentsWriter:
    """``trec-rag-judgments.tsv``: the EXAM-Qrels of a relevance grader (UMBRELA's prompts, the direct
    baselines) in the six columns of the TREC 2025 RAG relevance-judgment subtask, ``topic_id Q0 segment_id
    judgment confidence run_id`` (io/qrels.py, :func:`~exam_harness.io.qrels.judgments_text`): the judgment
    is the max-grade label (UMBRELA's 0..3); the confidence is 1, which the guidelines ask for where none
    applies (a grade keeps no probability of its own once made)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.core.grade_kinds import grade_kind
        from exam_harness.io.qrels import judgments_text
        from exam_harness.measures.qrels import qrels_file_name

        spec = out.document.settings.grader
        qrels = out.qrels.get(qrels_file_name("max-grade", 0, 0))
        if qrels is None or grade_kind(spec) != "relevance":
            return {}
        return {JUDGMENTS_FILE: judgments_text(qrels, judgments_run_id(spec))}


class RagAnswersWriter:
    """Each examined run of cited answers (a TREC RAG answer file, a live system's cited answers) as a TREC RAG
    2025 answer file, ``trec-rag-<run>.answers.jsonl``, citations as segment ids (ragnarok's
    ``rag25_validation.py --format 2``); nothing for a run whose answers cite nothing, nor for ranked runs."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from dataclasses import replace

        from exam_harness.features.trec_rag.answers import rag_answer_text

        examined = {s.run for s in out.document.systems}
        # the validator warns without metadata.prompt: an answer file's own is kept; the generator's prompt is
        # unknown otherwise (a 2024 file has none), so it is written empty rather than made up
        return {rag_answers_name(run): rag_answer_text([replace(a, metadata={"prompt": "", **a.metadata})
                                                        for a in by_query.values()], "2025", segment_ids=True)
                for run, by_query in sorted(out.answers.items())
                if run in examined and any(s.citations for a in by_query.values() for s in a.sentences)}


def rag_answers_name(run: str) -> str:
    """The file a run's cited answers are written to in the 2025 format (:class:`RagAnswersWriter`)."""
    return ids.file_name(run, ".answers.jsonl", prefix="trec-rag-")


WRITER = TrecRagWriter()
JUDGMENTS_WRITER = RelevanceJudgmentsWriter()
ANSWERS_WRITER = RagAnswersWriter()
