"""Reporting: at session finish the process that writes reports (never an xdist worker) builds the
report from the inputs, the outcome and the plan, writes every reporter's files, calls the
``pytest_exam_report`` hook, and prints the leaderboard in the terminal summary.

Two truths are told whatever the gates say: a session whose scores rest on pairs that could not be
graded fails (exit 1, naming the runs and the count), and a session that ran part of the exam
(``-k``, ``-m``, ``--lf``, node ids, a subset of the bank files, ``-x``) writes its reports into
``<report dir>/partial/``, marked partial, never over a full exam's reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.display import visible
from exam_harness.core.errors import ExamError, OutputError
from exam_harness.core.paths import shown_path
from exam_harness.pytest_plugins.grading import ExamGrading
from exam_harness.pytest_plugins.outcomes import ExamOutcomes
from exam_harness.pytest_plugins.state import SETUP_KEY, is_worker, is_xdist_controller, setup_of
from exam_harness.pytest_plugins.verdict import report_checks, teststatus
from exam_harness.report.build import BuiltReport, SessionOutcome, build_report
from exam_harness.report.writers import WriterInput, WriterOutputError
from exam_harness.results.gate_checks import Verdicts
from exam_harness.results.preflight import shown_uncovered, uncovered_queries
from exam_harness.results.schema import ExamReport
from exam_harness.results.verdict import Checks, Decision, decision


class ExamReporting:
    def __init__(self, config: pytest.Config, grading: ExamGrading, outcomes: ExamOutcomes) -> None:
        self.config = config
        self.grading = grading
        self.outcomes = outcomes
        self.built: BuiltReport | None = None
        self.decision: Decision | None = None
        self.written: list[Path] = []
        self.ignored_queries: dict[str, list[tuple[str, str | None]]] = {}  # run -> [(query, near match)]
        self.incomplete_message: str | None = None
        self.notes: list[str] = []
        self.write_error: str | None = None
        self.failure_reasons: list[tuple[str, int]] = []  # why pairs could not be graded, most frequent first

    # tryfirst: the verdict's cases must reach every result writer (JUnit XML, the terminal's last line)
    @pytest.hookimpl(tryfirst=True)
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
        try:
            partial = self._partial(session)
            cache = None if setup.options.cache is None else shown_path(setup.options.cache, root)
            gates: Any = self.config.pluginmanager.get_plugin("exam-gates")
            outcome = SessionOutcome(graded.grading, banks, self.outcomes.tallies, cache, partial,
                                     max_fallbacks=setup.options.max_fallbacks,
                                     reference=gates.reference if gates is not None else None,
                                     judge_model=setup.options.model, inputs=setup.scoring_inputs)
            built = build_report(inputs, outcome, graded.plan, root=root, run_paths=list(setup.options.runs))
            self.decision = self._decide(built.report)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        # the verdict is the document's own: stored in it before any writer reads it
        self.built = replace(built, report=built.report.model_copy(update={"verdict": self.decision.verdict}))
        report = self.built.report
        if not self.decision.verdict.passed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if setup.options.report_dir is not None:
            folder = setup.options.report_dir / "partial" if partial else setup.options.report_dir
            try:
                self.written = self._write(folder)
            except (OSError, OutputError, WriterOutputError) as exc:
                # The scores are computed: say what failed, keep the leaderboard and the exit status honest.
                why = (exc.strerror or exc) if isinstance(exc, OSError) else exc
                self.write_error = (f"FAIL cannot write the reports into {folder}: {why}; the leaderboard above is "
                                    "complete and the grades are cached, so a rerun after fixing it grades nothing")
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        try:  # what the features' options ask for beside the reports
            self.written += [path for paths in self.config.hook.pytest_exam_write_outputs(
                options=setup.options, out=self.writer_input()) if paths for path in paths]
        except (OSError, OutputError, WriterOutputError) as exc:
            why = (exc.strerror or exc) if isinstance(exc, OSError) else exc
            self.write_error = f"FAIL cannot write what the options ask for: {why}; the leaderboard above is complete"
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # a grader's error may echo the prompt, and with it a secret bank's text
        self.failure_reasons = Counter(inputs.redact(m) for m in graded.grading.failures.values()).most_common()
        self._keep(report)
        self.config.hook.pytest_exam_report(report=report, plan=graded.plan)
        report_checks(self.config, self.decision.verdict)
        self.ignored_queries = uncovered_queries((b.query.id for b in banks), inputs.data)

    def _decide(self, report: ExamReport) -> Decision:
        """The session's verdict over the built report (results/verdict.py): the gates asked for and the
        checks always made; the gates plugin shows its details."""
        setup = setup_of(self.config)
        gates: Any = self.config.pluginmanager.get_plugin("exam-gates")
        reference = gates.reference if gates is not None else None
        registries = setup.registries(self.config)
        found = decision(report, Checks.of(setup.options, reference, registries.measures, registries.gate_figures))
        if gates is not None:
            gates.show(found, report)
        incomplete = [r.run for r in found.verdict.gates if r.gate == "incomplete-exam" and r.run is not None]
        if incomplete and report.cache.failures:
            runs = ", ".join(repr(r) for r in incomplete)
            self.incomplete_message = (
                f"FAIL incomplete exam: {report.cache.failures} pairs could not be graded; the scores of runs {runs} "
                "rest on them and are not scores (see the '!' footnote)")
        return found

    def writer_input(self) -> WriterInput:
        """What the writers read: the report, the plan, the qrels, the gates' details, passage texts and the runs'
        cited answers."""
        assert self.built is not None and self.grading.graded is not None
        report = self.built.report
        gates: Any = self.config.pluginmanager.get_plugin("exam-gates")
        inputs = setup_of(self.config).exam_inputs(self.config)
        data = inputs.data
        shown = {o.best_passage for o in report.outcomes if o.best_passage is not None and o.outcome != "answered"}
        passages = {pid: data.passages[pid].text for pid in sorted(shown) if pid in data.passages}
        return WriterInput(report, self.grading.graded.plan, self.built.qrels,
                           verdicts=gates.verdicts() if gates is not None else Verdicts(), passages=passages,
                           answers=inputs.answers)

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        return teststatus(report, self.decision.verdict if self.decision is not None else None)

    def _keep(self, report: ExamReport) -> None:
        """``--exam-save NAME`` / ``--exam-autosave``: keep the report in the history folder (a partial
        exam is not kept: comparing a later full exam with it would compare different exams)."""
        options = setup_of(self.config).options
        if options.save is None and not options.autosave:
            return
        if report.partial:
            self.notes.append(f"note: not kept in {options.history_dir} (a partial exam: {report.partial})")
            return
        from exam_harness.results import history

        path = history.save(options.history_dir, report, options.save)
        self.notes.append(f"kept: {shown_path(path, self.config.rootpath)}")

    def _partial(self, session: pytest.Session) -> str | None:
        """Why this session examined part of the configured exam, or None for a full exam.

        The full exam is every test point of every bank file under the bank folders, put to every run;
        a session that reported fewer cases ran part of it.
        """
        setup = setup_of(self.config)
        inputs = setup.exam_inputs(self.config)
        inputs.load_banks(setup.bank_roots)  # the configured exam, beside any bank file named on the command line
        expected = sum(len(b.test_points) for banks in inputs.banks.values() for b in banks) * len(inputs.data.runs)
        reported = sum(t.answered + t.missed + t.required_missed + t.errors + t.skipped
                       for t in self.outcomes.tallies.values())
        if expected and reported >= expected:
            return None
        how = [flag for flag, given in (
            (f"-k {self.config.option.keyword!r}", self.config.option.keyword),
            (f"-m {self.config.option.markexpr!r}", self.config.option.markexpr),
            ("--lf", getattr(self.config.option, "lf", False)),
            ("-x/--maxfail", self.config.option.maxfail and session.shouldstop),
        ) if given]
        return f"{reported} of {expected} cases ran" + (f" ({', '.join(how)})" if how else " (a selection of cases)")

    def _write(self, folder: Path) -> list[Path]:
        """Every report-set writer's files, written into ``folder`` as one set (old set or new after any kill)."""
        from exam_harness.report.writers import write_report_files

        return write_report_files(folder, setup_of(self.config).registries(self.config).writers, self.writer_input())

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        inputs = setup_of(config).inputs if SETUP_KEY in config.stash else None
        for warning in inputs.warnings if inputs is not None else ():  # said during collection, where pytest hides it
            terminalreporter.write_line(f"warning: {warning}")
        for notice in dict.fromkeys(inputs.notices if inputs is not None else ()):  # the banks' (and their readers')
            terminalreporter.write_line(notice)
        if self.built is None:
            return
        from exam_harness.report.terminal import render_summary

        root = Path(config.rootpath)
        render_summary(terminalreporter, self.built.report, [shown_path(p, root) for p in self.written])
        for note in self.notes:
            terminalreporter.write_line(note)
        from exam_harness.results.left_out import taken

        for warning in taken():  # a plugin section left out of an output, a NaN written as null (results/)
            terminalreporter.write_line(warning, yellow=True, bold=True)
        if self.failure_reasons:
            total = sum(n for _, n in self.failure_reasons)
            terminalreporter.write_sep("-", f"pairs that could not be graded ({total})")
            for reason, n in self.failure_reasons[:5]:
                terminalreporter.write_line(f"{n} pair{'s' if n != 1 else ''}: {visible(reason)}")
            if len(self.failure_reasons) > 5:
                terminalreporter.write_line(f"... and {len(self.failure_reasons) - 5} other reasons")
        if self.incomplete_message:
            terminalreporter.write_line(self.incomplete_message, red=True, bold=True)
        for check in self.built.report.verdict.gates if self.built.report.verdict else ():
            if check.gate == "exam-max-fallbacks":
                terminalreporter.write_line(check.message, red=True, bold=True)
        if self.write_error:
            terminalreporter.write_line(self.write_error, red=True, bold=True)
        for run, queries in self.ignored_queries.items():
            shown = shown_uncovered(queries)
            terminalreporter.write_line(
                f"note: run {run!r} ranks {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} that no "
                f"examined bank covers (ignored): {shown}"
            )


class InterruptedSummary:
    """Wraps every plugin's terminal summary: Ctrl-C while it prints ends like any interrupted session,
    not in a traceback. The reports were written before the summary, as one set, so they are whole."""

    def __init__(self, reporting: ExamReporting) -> None:
        self.reporting = reporting

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
            self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> Generator[None, None, None]:
        try:
            return (yield)
        except KeyboardInterrupt:
            terminalreporter.write_sep("!", "KeyboardInterrupt")
            root = Path(config.rootpath)
            where = ", ".join(shown_path(p, root) for p in self.reporting.written) or "none written"
            terminalreporter.write_line(f"interrupted while printing the summary; the reports are whole: {where}")
            session = getattr(terminalreporter, "_session", None)
            if session is not None:
                session.exitstatus = pytest.ExitCode.INTERRUPTED
            return None
