"""Reporters: what report files a session writes. One registry (``pytest_exam_register_reporters``).

A reporter turns the report (and the qrels behind it) into files, by name; the session writes every
reporter's files into the report folder through the one atomic writer. Built in: ``json``
(``exam-report.json``) and ``qrels`` (one trec_eval qrels file per label variant).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from exam_harness.registry import Registry
from exam_harness.results.json_writer import REPORT_NAME, report_json_pieces

if TYPE_CHECKING:
    from exam_harness.measures.qrels import Qrels
    from exam_harness.plan import ExamPlan
    from exam_harness.results.schema import ExamReport

# A file's content: its text, or its text in pieces (written as they come, so a long report is never
# held whole: at 600,000 outcomes the JSON text alone is about 200 MB).
FileContent = str | Iterable[str]


class Reporter(Protocol):
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> Mapping[str, FileContent]:
        """File name (relative to the report folder) -> content (a text, or an iterable of its pieces)."""
        ...


class JsonReporter:
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, FileContent]:
        return {REPORT_NAME: report_json_pieces(report)}


class QrelsReporter:
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, FileContent]:
        from exam_harness.io.qrels import qrels_text

        return {entry.file: qrels_text(qrels[entry.file]) for entry in report.qrels}


def builtin_reporters() -> Registry[Reporter]:
    registry: Registry[Reporter] = Registry("reporter")
    registry.register("qrels", QrelsReporter(), "trec_eval qrels files, one per label variant")
    registry.register("json", JsonReporter(), f"{REPORT_NAME}, the versioned JSON report")
    registry.register("trec-rag", "exam_harness.report.trec_rag:REPORTER",
                      "trec-rag-metrics.jsonl and trec-rag-assignments.jsonl, where nuggets carry an importance")
    return registry
