"""Summaries people look at (the ``markdown`` and ``html`` writers of report/writers.py), written once
the gates have decided: the markdown summary
(``--exam-markdown FILE``, and appended to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it) and
the self-contained HTML report (``--exam-html DIR``).

A partial exam's summaries say so at the top; they are written where asked all the same, since the
user named the place (the JSON report and qrels go to ``<report dir>/partial/`` instead).

A summary that cannot be written after grading does not hide the scores: the leaderboard is printed
first, then the failure (a FAIL line and exit status 1 for ``--exam-markdown``/``--exam-html``; a
warning for ``$GITHUB_STEP_SUMMARY``, which the CI sets, not the user). ``$GITHUB_STEP_SUMMARY`` is
checked before grading too: a FIFO there would block the session, a folder cannot be appended to.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ExamError
from exam_harness.core.paths import shown_path
from exam_harness.core.registry import Registry
from exam_harness.pytest_plugins.reporting import ExamReporting
from exam_harness.pytest_plugins.state import setup_of
from exam_harness.report.writers import (
    GITHUB_STEP_SUMMARY,
    Writer,
    append_step_summary,
    requested_text,
    step_summary_problem,
    write_requested_folder,
)


class ExamSummaries:
    def __init__(self, config: pytest.Config, reporting: ExamReporting) -> None:
        self.config = config
        self.reporting = reporting
        self.written: list[str] = []
        self.failures: list[str] = []  # FAIL lines: a summary the user asked for could not be written
        self.warnings: list[str] = []  # $GITHUB_STEP_SUMMARY could not be appended to
        self.step_summary: str | None = None  # the path to append to, once checked

    def pytest_configure(self, config: pytest.Config) -> None:
        # Before any grading: a FIFO would block the session at the end, a folder cannot be appended to.
        path = os.environ.get(GITHUB_STEP_SUMMARY)
        if not path:
            return
        problem = step_summary_problem(Path(path))
        if problem is None:
            self.step_summary = path
        else:
            self.warnings.append(f"warning: ${GITHUB_STEP_SUMMARY}={path} {problem}; the markdown summary is not "
                                 "appended there")

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        # A wrapper runs after every plugin's sessionfinish, so the gates (trylast) have decided by then.
        result = yield
        built = self.reporting.built
        if built is None:
            return result
        options = setup_of(self.config).options
        # Each output on its own: one that fails leaves the others written; the leaderboard is printed
        # (pytest_terminal_summary) before the failure is said.
        if options.markdown is not None or self.step_summary is not None:
            try:
                self._markdown()  # each target's own failure is caught there; this is the rendering's
            except ExamError as exc:
                self._failed("the markdown summary", exc)
        if options.html is not None:
            try:
                self._html(options.html)
            except (OSError, ExamError) as exc:
                self._failed(f"the HTML report into {self._shown(options.html)}", exc)
        if self.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return result

    def _failed(self, what: str, exc: BaseException) -> None:
        why = (exc.strerror or exc) if isinstance(exc, OSError) else exc
        self.failures.append(f"FAIL cannot write {what}: {why}; the leaderboard above is complete and the grades "
                             "are cached, so a rerun after fixing it grades nothing")

    def _markdown(self) -> None:
        from exam_harness.io.textio import atomic_write_text

        text = requested_text(self._writers(), "markdown", self.reporting.writer_input())
        target = setup_of(self.config).options.markdown
        if target is not None:
            try:
                atomic_write_text(target, text)
                self.written.append(f"markdown summary: {self._shown(target)}")
            except (OSError, ExamError) as exc:
                self._failed(f"the markdown summary to {self._shown(target)}", exc)
        if self.step_summary is not None:
            try:
                append_step_summary(self.step_summary, text)
                self.written.append(f"markdown summary appended to ${GITHUB_STEP_SUMMARY}")
            except OSError as exc:
                self.warnings.append(f"warning: cannot append the markdown summary to ${GITHUB_STEP_SUMMARY}="
                                     f"{self.step_summary}: {exc.strerror or exc}; the exam's verdict stands")

    def _html(self, directory: Path) -> None:
        for path in write_requested_folder(self._writers(), "html", directory, self.reporting.writer_input()):
            self.written.append(f"HTML report: {self._shown(path)}")

    def _writers(self) -> Registry[Writer]:
        return setup_of(self.config).registries(self.config).writers

    def _shown(self, path: Path) -> str:
        return shown_path(path, self.config.rootpath)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        for line in self.written:
            terminalreporter.write_line(line)
        for line in self.warnings:
            terminalreporter.write_line(line, yellow=True, bold=True)
        for line in self.failures:
            terminalreporter.write_line(line, red=True, bold=True)
