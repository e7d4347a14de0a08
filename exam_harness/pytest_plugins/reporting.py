"""Reporting: at session finish the process that writes reports (never an xdist worker) builds the
report from the inputs, the outcome and the plan, writes every reporter's files, calls the
``pytest_exam_report`` hook, and prints the leaderboard in the terminal summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exam_harness.errors import ExamError
from exam_harness.pytest_plugins.grading import ExamGrading, cache_path_shown
from exam_harness.pytest_plugins.outcomes import ExamOutcomes
from exam_harness.pytest_plugins.state import is_worker, is_xdist_controller, setup_of
from exam_harness.report.build import BuiltReport, SessionOutcome, build_report


class ExamReporting:
    def __init__(self, config: pytest.Config, grading: ExamGrading, outcomes: ExamOutcomes) -> None:
        self.config = config
        self.grading = grading
        self.outcomes = outcomes
        self.built: BuiltReport | None = None
        self.written: list[Path] = []
        self.ignored_queries: dict[str, list[str]] = {}

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        graded = self.grading.graded
        if is_worker(self.config) or graded is None:
            return
        setup = setup_of(self.config)
        inputs = setup.exam_inputs(self.config)
        # The controller graded every requested bank; it scores what the workers actually ran.
        seen = self.outcomes.seen_test_points if is_xdist_controller(self.config) else None
        banks = self.grading.scored_banks(seen)
        root = Path(self.config.rootpath)
        outcome = SessionOutcome(graded.grading, banks, self.outcomes.tallies,
                                 cache_path_shown(setup.options.cache, root))
        try:
            self.built = build_report(inputs, outcome, graded.plan, root=root, run_paths=list(setup.options.runs))
            if setup.options.report_dir is not None:
                self.written = self._write(setup.options.report_dir)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.config.hook.pytest_exam_report(report=self.built.report, plan=graded.plan)
        examined = {b.query.id for b in banks}
        for name, run in sorted(inputs.data.runs.items()):
            extra = sorted(set(run.rankings) - examined)
            if extra:
                self.ignored_queries[name] = extra

    def _write(self, folder: Path) -> list[Path]:
        from exam_harness.io.textio import atomic_write_text

        assert self.built is not None and self.grading.graded is not None
        registries = setup_of(self.config).registries(self.config)
        written: list[Path] = []
        plan = self.grading.graded.plan
        for reporter in registries.reporters.values():
            for file_name, text in reporter.files(self.built.report, plan, self.built.qrels).items():
                atomic_write_text(folder / file_name, text)
                written.append(folder / file_name)
        return written

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.built is None:
            return
        from exam_harness.report.terminal import render_summary

        root = Path(config.rootpath)
        render_summary(terminalreporter, self.built.report, [_relative(p, root) for p in self.written])
        for run, queries in self.ignored_queries.items():
            shown = ", ".join(queries[:5]) + (f" and {len(queries) - 5} more" if len(queries) > 5 else "")
            terminalreporter.write_line(
                f"note: run {run!r} ranks {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} that no "
                f"examined bank covers (ignored): {shown}"
            )


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
