"""The ``workbench`` writer: the exam ``evaluate`` graded (``WriterInput.exam``) as a Workbench paragraph file,
written where ``--export-workbench`` names it (its ``option``), never in the report set."""

from __future__ import annotations

from exam_harness.api import WriterInput
from exam_harness.features.workbench.options import EXPORT

WORKBENCH_NAME = "workbench.jsonl.gz"


class WorkbenchWriter:
    """Passages, runs, judgments and grades as a Workbench paragraph file."""

    option = EXPORT  # the file it is written to (report/writers.py: requested_option)

    def files(self, out: WriterInput) -> dict[str, str]:
        if out.exam is None:
            return {}
        from exam_harness.features.workbench.grades import view_text  # the grade cache's imports: when written

        return {WORKBENCH_NAME: view_text(out.exam.view, out.exam.outcome, out.exam.spec)}


WRITER = WorkbenchWriter()
