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
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.display import visible
from exam_harness.errors import ExamError, OutputError
from exam_harness.pytest_plugins.grading import ExamGrading, cache_path_shown
from exam_harness.pytest_plugins.outcomes import ExamOutcomes
from exam_harness.pytest_plugins.state import is_worker, is_xdist_controller, setup_of
from exam_harness.report.build import BuiltReport, SessionOutcome, build_report
from exam_harness.report.schema import ExamReport


class ExamReporting:
    def __init__(self, config: pytest.Config, grading: ExamGrading, outcomes: ExamOutcomes) -> None:
        self.config = config
        self.grading = grading
        self.outcomes = outcomes
        self.built: BuiltReport | None = None
        self.written: list[Path] = []
        self.ignored_queries: dict[str, list[str]] = {}
        self.incomplete_message: str | None = None
        self.notes: list[str] = []
        self.write_error: str | None = None
        self.failure_reasons: list[tuple[str, int]] = []  # why pairs could not be graded, most frequent first

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
            outcome = SessionOutcome(graded.grading, banks, self.outcomes.tallies,
                                     cache_path_shown(setup.options.cache, root), partial)
            self.built = build_report(inputs, outcome, graded.plan, root=root, run_paths=list(setup.options.runs))
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        if setup.options.report_dir is not None:
            folder = setup.options.report_dir / "partial" if partial else setup.options.report_dir
            try:
                self.written = self._write(folder)
            except (OSError, OutputError, ReporterOutputError) as exc:
                # The scores are computed: say what failed, keep the leaderboard and the exit status honest.
                why = (exc.strerror or exc) if isinstance(exc, OSError) else exc
                self.write_error = (f"FAIL cannot write the reports into {folder}: {why}; the leaderboard above is "
                                    "complete and the grades are cached, so a rerun after fixing it grades nothing")
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        report = self.built.report
        # a grader's error may echo the prompt, and with it a secret bank's text
        self.failure_reasons = Counter(inputs.redact(m) for m in graded.grading.failures.values()).most_common()
        if report.incomplete_runs:
            runs = ", ".join(repr(r) for r in report.incomplete_runs)
            self.incomplete_message = (
                f"FAIL incomplete exam: {report.cache.failures} pairs could not be graded; the scores of runs {runs} "
                "rest on them and are not scores (see the '!' footnote)")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self._keep(report)
        self.config.hook.pytest_exam_report(report=self.built.report, plan=graded.plan)
        examined = {b.query.id for b in banks}
        for name, run in sorted(inputs.data.runs.items()):
            extra = sorted(set(run.rankings) - examined)
            if extra:
                self.ignored_queries[name] = extra

    def _keep(self, report: ExamReport) -> None:
        """``--exam-save NAME`` / ``--exam-autosave``: keep the report in the history folder (a partial
        exam is not kept: comparing a later full exam with it would compare different exams)."""
        options = setup_of(self.config).options
        if options.save is None and not options.autosave:
            return
        if report.partial:
            self.notes.append(f"note: not kept in {options.history_dir} (a partial exam: {report.partial})")
            return
        from exam_harness.io import history

        path = history.save(options.history_dir, report, options.save)
        self.notes.append(f"kept: {relative(path, Path(self.config.rootpath))}")

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
        """Every reporter's files, written into ``folder`` as one set (old set or new after any kill)."""
        import gzip

        from exam_harness.io.report_set import write_report_set

        assert self.built is not None and self.grading.graded is not None
        registries = setup_of(self.config).registries(self.config)
        plan = self.grading.graded.plan
        files: dict[str, bytes | Iterable[bytes]] = {}
        for name in registries.reporters.names():
            made = registries.reporters.get(name).files(self.built.report, plan, self.built.qrels)
            for file_name, content in made.items():
                data = _encoded(name, file_name, content)
                if file_name.endswith(".gz"):
                    whole = data if isinstance(data, bytes) else b"".join(data)
                    data = gzip.compress(whole, mtime=0)
                files[file_name] = data
        return write_report_set(folder, files)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.built is None:
            return
        from exam_harness.report.terminal import render_summary

        root = Path(config.rootpath)
        render_summary(terminalreporter, self.built.report, [relative(p, root) for p in self.written])
        for note in self.notes:
            terminalreporter.write_line(note)
        if self.failure_reasons:
            total = sum(n for _, n in self.failure_reasons)
            terminalreporter.write_sep("-", f"pairs that could not be graded ({total})")
            for reason, n in self.failure_reasons[:5]:
                terminalreporter.write_line(f"{n} pair{'s' if n != 1 else ''}: {visible(reason)}")
            if len(self.failure_reasons) > 5:
                terminalreporter.write_line(f"... and {len(self.failure_reasons) - 5} other reasons")
        if self.incomplete_message:
            terminalreporter.write_line(self.incomplete_message, red=True, bold=True)
        if self.write_error:
            terminalreporter.write_line(self.write_error, red=True, bold=True)
        for run, queries in self.ignored_queries.items():
            shown = ", ".join(queries[:5]) + (f" and {len(queries) - 5} more" if len(queries) > 5 else "")
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
            where = ", ".join(relative(p, root) for p in self.reporting.written) or "none written"
            terminalreporter.write_line(f"interrupted while printing the summary; the reports are whole: {where}")
            session = getattr(terminalreporter, "_session", None)
            if session is not None:
                session.exitstatus = pytest.ExitCode.INTERRUPTED
            return None


def relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


class ReporterOutputError(ExamError):
    """A reporter gave a file's content as something other than a text or an iterable of texts."""


def _encoded(reporter: str, file_name: str, content: object) -> bytes | Iterator[bytes]:
    """A reporter's file as UTF-8: a text at once, pieces as they are written (each checked)."""
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, (bytes, bytearray)) or not isinstance(content, Iterable):
        raise ReporterOutputError(_bad_output(reporter, file_name, content))
    return _encoded_pieces(reporter, file_name, content)


def _encoded_pieces(reporter: str, file_name: str, pieces: Iterable[object]) -> Iterator[bytes]:
    for piece in pieces:
        if not isinstance(piece, str):
            raise ReporterOutputError(_bad_output(reporter, file_name, piece, "a piece"))
        yield piece.encode("utf-8")


def _bad_output(reporter: str, file_name: str, value: object, what: str = "the content") -> str:
    return (f"reporter {reporter!r} gave {what} of {file_name!r} as {type(value).__name__}; a reporter's files() "
            "maps each file name to a text (str) or an iterable of text pieces")
