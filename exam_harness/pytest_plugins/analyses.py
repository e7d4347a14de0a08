"""``--exam-analysis``: analysis sections after the leaderboard (registered only when asked for).

The analyses quote test points and extracted answers, so a secret bank shows none of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from exam_harness.exam.inputs import view_from_banks
from exam_harness.pytest_plugins.grading import ExamGrading
from exam_harness.pytest_plugins.reporting import ExamReporting
from exam_harness.pytest_plugins.state import setup_of


class ExamAnalyses:
    def __init__(self, config: pytest.Config, grading: ExamGrading, reporting: ExamReporting) -> None:
        self.config = config
        self.grading = grading
        self.reporting = reporting

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
        from exam_harness.report.analysis_sections import analysis_sections

        view = view_from_banks(inputs.data, graded.banks, graded.grading.grades, exclude=graded.grading.unsupported)
        width = terminalreporter._tw.fullwidth
        for title, text in analysis_sections(view, graded.grading, names=setup.options.analysis,
                                             min_grade=graded.plan.min_grade,
                                             relevance_level=graded.plan.relevance_level, width=width):
            terminalreporter.write_sep("-", title)
            terminalreporter.write(text if text.endswith("\n") else text + "\n")
