"""Reporters: what report files a session writes. One registry (``pytest_exam_register_reporters``).

A reporter turns the report (and the qrels behind it) into files, by name; the session writes every
reporter's files into the report folder through the one atomic writer. Built in: ``json``
(``exam-report.json``) and ``qrels`` (one trec_eval qrels file per label variant).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from exam_harness.registry import Registry

if TYPE_CHECKING:
    from exam_harness.measures.qrels import Qrels
    from exam_harness.plan import ExamPlan
    from exam_harness.report.schema import ExamReport

REPORT_NAME = "exam-report.json"


class Reporter(Protocol):
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, str]:
        """File name (relative to the report folder) -> content."""
        ...


def report_json(report: ExamReport) -> str:
    """Deterministic JSON: sorted keys, fixed indentation, so equal scores give equal bytes."""
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class JsonReporter:
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, str]:
        return {REPORT_NAME: report_json(report)}


class QrelsReporter:
    def files(self, report: ExamReport, plan: ExamPlan, qrels: Mapping[str, Qrels]) -> dict[str, str]:
        from exam_harness.io.qrels import qrels_text

        return {entry.file: qrels_text(qrels[entry.file]) for entry in report.qrels}


def builtin_reporters() -> Registry[Reporter]:
    registry: Registry[Reporter] = Registry("reporter")
    registry.register("qrels", QrelsReporter(), "trec_eval qrels files, one per label variant")
    registry.register("json", JsonReporter(), f"{REPORT_NAME}, the versioned JSON report")
    return registry
