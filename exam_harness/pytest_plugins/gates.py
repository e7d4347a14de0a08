"""CI gates, registered only when asked for: ``--exam-fail-under`` (every run's EXAM-Cover at least X)
and ``--exam-baseline`` (no run significantly worse than the baseline run, paired test over queries)."""

from __future__ import annotations

from typing import Any

import pytest

from exam_harness.errors import ExamError
from exam_harness.measures.exam import ExamCover
from exam_harness.pytest_plugins.reporting import ExamReporting
from exam_harness.pytest_plugins.state import setup_of


class ExamGates:
    def __init__(self, config: pytest.Config, reporting: ExamReporting) -> None:
        self.config = config
        self.reporting = reporting
        self.failures: list[str] = []
        self.comparison: tuple[str, str] | None = None  # the baseline section (title, text)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        built = self.reporting.built
        graded = self.reporting.grading.graded
        if built is None or graded is None:
            return
        options = setup_of(self.config).options
        cover = ExamCover().bind(graded.plan.bindings(graded.plan.min_grade))
        try:
            if options.baseline is not None:
                from exam_harness.analysis.sections import baseline_section
                from exam_harness.measures.intervals import baseline_gate

                per_query = built.result[cover].per_query
                self.failures += baseline_gate(per_query, options.baseline, options.alpha, options.significance,
                                               measure=cover.title, n_resamples=options.resamples)
                # Every run's difference is shown, significant or not: silence would read as "no baseline".
                self.comparison = baseline_section(per_query, options.baseline, alpha=options.alpha,
                                                   method=options.significance, measure=cover.title,
                                                   n_resamples=options.resamples)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        limit = options.fail_under
        if limit is not None:
            for system in built.report.systems:
                if system.exam_cover < limit:
                    self.failures.append(
                        f"FAIL Required {cover.title} of {limit:g} not reached by run {system.run!r}: "
                        f"{system.exam_cover:.4f}"
                    )
        if self.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.comparison is not None:
            title, text = self.comparison
            terminalreporter.write_sep("-", title)
            terminalreporter.write(text)
        for line in self.failures:
            terminalreporter.write_line(line, red=True, bold=True)
