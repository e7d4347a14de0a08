"""``--exam-analysis``: analysis sections after the leaderboard (registered only when asked for): the sections of the
registered analyses named (session/analyses.py, hook ``pytest_exam_register_analyses``).

The analyses quote test points and extracted answers, so a secret bank shows none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from exam_harness.exam.inputs import view_from_banks
from exam_harness.pytest_plugins.grading import ExamGrading
from exam_harness.pytest_plugins.reporting import ExamReporting
from exam_harness.pytest_plugins.state import setup_of
from exam_harness.session.analyses import Analysis


class ExamAnalyses:
    def __init__(self, config: pytest.Config, grading: ExamGrading, reporting: ExamReporting,
                 analyses: Sequence[Analysis]) -> None:
        self.config = config
        self.grading = grading
        self.reporting = reporting
        self.analyses = analyses

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        graded = self.grading.graded
        if graded is None or self.reporting.built is None:
            return
        setup = setup_of(config)
        inputs = setup.exam_inputs(config)
        if inputs.redacted:
            terminalreporter.write_sep("-", "exam analyses")
            terminalreporter.write_line("not shown: the bank is secret (secret: true or --exam-redact)")
            return
        from exam_harness.session.analyses import AnalysisExam, section_text

        view = view_from_banks(inputs.data, graded.banks, graded.grading.grades, exclude=graded.grading.unsupported)
        exam = AnalysisExam(view, graded.grading, min_grade=graded.plan.min_grade,
                            relevance_level=graded.plan.relevance_level)
        width = terminalreporter._tw.fullwidth
        for analysis in self.analyses:
            title, text = section_text(analysis, exam, width)
            terminalreporter.write_sep("-", title)
            terminalreporter.write(text if text.endswith("\n") else text + "\n")
