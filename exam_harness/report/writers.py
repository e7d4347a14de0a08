"""Built-in file reporters: the JSON report and one qrels file per label variant.

They implement ``pytest_exam_report`` like any third-party reporter. Every file is written
atomically (temporary file + rename), so a crash never leaves a half-written report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.io.textio import atomic_write_text

if TYPE_CHECKING:
    from exam_harness.report.schema import ExamReport
    from exam_harness.session import ExamSession

REPORT_NAME = "exam-report.json"


def report_json(report: ExamReport) -> str:
    """Deterministic JSON: sorted keys, fixed indentation, so equal scores give equal bytes."""
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_report(report: ExamReport, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REPORT_NAME
    atomic_write_text(path, report_json(report))
    return path


class BuiltinReporters:
    def pytest_exam_report(self, session: ExamSession, report: ExamReport) -> None:
        folder = session.settings.report_dir
        if folder is None:
            return
        from exam_harness.metrics.qrels import write_qrels

        folder.mkdir(parents=True, exist_ok=True)
        for entry in report.qrels:
            write_qrels(folder / entry.file, session.qrels[entry.label])
        write_report(report, folder)
