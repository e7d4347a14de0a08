"""Summaries people look at, written once the gates have decided: the markdown summary
(``--exam-markdown FILE``, and appended to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it) and
the self-contained HTML report (``--exam-html DIR``).

A partial exam's summaries say so at the top; they are written where asked all the same, since the
user named the place (the JSON report and qrels go to ``<report dir>/partial/`` instead).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.errors import ExamError
from exam_harness.gates import Verdicts
from exam_harness.pytest_plugins.reporting import ExamReporting, relative
from exam_harness.pytest_plugins.state import setup_of

GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


class ExamSummaries:
    def __init__(self, config: pytest.Config, reporting: ExamReporting) -> None:
        self.config = config
        self.reporting = reporting
        self.written: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        # A wrapper runs after every plugin's sessionfinish, so the gates (trylast) have decided by then.
        result = yield
        built = self.reporting.built
        if built is None:
            return result
        gates: Any = self.config.pluginmanager.get_plugin("exam-gates")
        verdicts: Verdicts = gates.verdicts() if gates is not None else Verdicts()
        options = setup_of(self.config).options
        try:
            if options.markdown is not None or os.environ.get(GITHUB_STEP_SUMMARY):
                self._markdown(verdicts)
            if options.html is not None:
                self._html(options.html)
        except (OSError, ExamError) as exc:
            raise pytest.UsageError(f"exam summaries: {exc}") from None
        return result

    def _markdown(self, verdicts: Verdicts) -> None:
        from exam_harness.io.textio import atomic_write_text
        from exam_harness.report.markdown import render_markdown

        assert self.reporting.built is not None
        text = render_markdown(self.reporting.built.report, verdicts)
        target = setup_of(self.config).options.markdown
        if target is not None:
            atomic_write_text(target, text)
            self.written.append(f"markdown summary: {self._shown(target)}")
        step_summary = os.environ.get(GITHUB_STEP_SUMMARY)
        if step_summary:
            # GitHub Actions collects what each step appends to this file.
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(text)
            self.written.append(f"markdown summary appended to ${GITHUB_STEP_SUMMARY}")

    def _html(self, directory: Path) -> None:
        from exam_harness.report.html import write_html_report

        assert self.reporting.built is not None
        report = self.reporting.built.report
        data = setup_of(self.config).exam_inputs(self.config).data
        shown = {o.best_passage for o in report.outcomes if o.best_passage is not None and o.outcome != "answered"}
        passages = {pid: data.passages[pid].text for pid in sorted(shown) if pid in data.passages}
        path = write_html_report(report, directory, passages)
        self.written.append(f"HTML report: {self._shown(path)}")

    def _shown(self, path: Path) -> str:
        return relative(path, Path(self.config.rootpath))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        for line in self.written:
            terminalreporter.write_line(line)
