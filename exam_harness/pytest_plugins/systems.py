"""Declared live systems in a pytest session: called (or replayed) before grading, as runs.

The queries a system is asked are those of its collected cases, so ``-k`` and deselection limit the
calls; under pytest-xdist the controller calls every query of the requested banks before the workers
start, and the workers read the recordings. A query a system failed on makes that system's cases of
that query errors, with the system's message; pytest's ERRORS section says each failed system once (its
errors, the queries and how many cases), while every case stays an error. A stale recording under
``--exam-stale=fail`` (the default under ``CI=true``) fails the session with a case of its own,
``exam gates::exam-stale[NAME]``. ``--exam-dry-run`` calls no system.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import tempfile
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Query, QueryBank
from exam_harness.core.paths import shown_path
from exam_harness.core.progress import GradingProgress
from exam_harness.pytest_plugins.state import is_worker, is_xdist_controller, setup_of
from exam_harness.systems.calling import CallsInterrupted
from exam_harness.systems.declare import System, clear, declared
from exam_harness.systems.health import LiveSystems, policy_text, resolve_stale
from exam_harness.systems.secrets import scrub
from exam_harness.systems.session import DRY, WORKER, PassOutcome, SystemsPass, recording_folder, resolve_mode

if TYPE_CHECKING:  # annotation only: collection builds on this plugin (its cases ask it for failures)
    from exam_harness.pytest_plugins.collection import ExamCollector

SYSTEM_FAILED = "exam_system_failed"  # user property of a case that errs because its system failed: the system
SHOWN_QUERIES = 5  # query ids named per cause in a failed system's block
SHOWN_CAUSES = 5  # distinct errors named in a failed system's block


class ExamSystems:
    def __init__(self, config: pytest.Config, collector: ExamCollector) -> None:
        self.config = config
        self.collector = collector
        self.outcome: PassOutcome | None = None
        self.only: set[str] | None = None  # exam-harness record --system NAME: these systems only
        self._live: tempfile.TemporaryDirectory[str] | None = None
        self._all_errors: list[Any] | None = None  # pytest's error reports while its ERRORS section is printed
        setup = setup_of(config)
        setup.exam_inputs(config).system_names = lambda: [s.name for s in declared()]
        self.mode = resolve_mode(setup.options.system_mode)
        self.stale = resolve_stale(setup.options.stale)
        self.policy = policy_text(self.stale, setup.options.stale)

    def folder(self) -> Path:
        options = setup_of(self.config).options
        return options.record_into or recording_folder(list(options.runs))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # Before any call: the folder the recordings go to. A runs folder named on purpose must exist (a
        # typo would record every system again into a new folder); --exam-record-into makes its folder,
        # and the default runs/ is made for a first recording.
        if not declared():
            return
        options = setup_of(self.config).options
        try:
            folder = self.folder()
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        if not folder.exists() and options.record_into is None and options.runs != (Path("runs"),):
            shown = shown_path(folder)
            raise pytest.UsageError(
                f"the runs folder {shown} does not exist, so the declared systems would all be called again into a "
                f"new folder; check the name, or give --exam-record-into {shown} to record into a new folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"cannot make the runs folder {folder}: {exc.strerror or exc}") from None
        if options.record_into is not None:
            setup_of(self.config).exam_inputs(self.config).extra_runs.append(folder)

    def prepare(self, banks: Sequence[QueryBank] | None = None) -> None:
        """Call or replay every declared system for its queries: those of its collected cases, or
        every query of ``banks`` (the xdist controller, before the workers collect)."""
        systems = [s for s in declared() if self.only is None or s.name in self.only]
        if not systems or self.outcome is not None:
            return
        mode = WORKER if is_worker(self.config) else DRY if setup_of(self.config).options.dry_run else self.mode
        if mode == "live" and (is_xdist_controller(self.config) or is_worker(self.config)):
            raise ConfigError("--exam-system-mode live keeps answers in this process only; under pytest-xdist use "
                              "once or record, which the workers read from the runs folder")
        folder = self.folder()
        if mode == "live":
            self._live = tempfile.TemporaryDirectory(prefix="exam-live-")
            folder = Path(self._live.name)
        # a system none of whose cases was collected (-k) is neither called nor checked
        wanted = [(s, queries) for s in systems if (queries := self._queries(s, banks))]
        self.outcome = SystemsPass(mode, folder, progress=self._progress, stale=self.stale, say=self._say).run(wanted)
        inputs = setup_of(self.config).exam_inputs(self.config)
        if mode == "live":
            inputs.extra_runs.append(folder)
        inputs.forget_runs()

    def _queries(self, system: System, banks: Sequence[QueryBank] | None) -> list[Query]:
        found: dict[str, Query] = {}
        if banks is not None:
            for bank in banks:
                found.setdefault(bank.query.id, bank.query)
        else:
            for case in self.collector.cases:
                if case.run == system.name:
                    found.setdefault(case.bank.query.id, case.bank.query)
        return list(found.values())

    def _progress(self, label: str) -> GradingProgress:
        capman = self.config.pluginmanager.getplugin("capturemanager")
        enabled = not setup_of(self.config).options.no_progress and self.config.get_verbosity() >= 0
        return GradingProgress(label, enabled, capman=capman, unit="queries")

    def _say(self, text: str) -> None:
        """A line on the terminal at once (an interrupt's), with pytest's capture suspended."""
        capman = self.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            print(scrub(text), file=sys.stderr, flush=True)

    def failure(self, run: str, query_id: str) -> str | None:
        """The message a case of ``run`` on ``query_id`` fails with when the system failed on that query."""
        if self.outcome is None:
            return None
        return self.outcome.failures.get((run, query_id))

    # (pytest takes hooks only from names starting with pytest_; specname names the hook they implement)
    @pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_terminal_summary")
    def pytest_terminal_summary_errors(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, None, None]:
        # Outermost wrapper: pytest's ERRORS section, printed before the plain hooks run, sees one block per
        # failed system (a system down on every query was one block per case); the plain hook below puts
        # every report back, so the short summary, the counts and the JUnit XML still have each case.
        errors = terminalreporter.stats.get("error")
        if errors and not is_worker(self.config):
            self._all_errors = errors
            terminalreporter.stats["error"] = self._said_once(errors)
        try:
            return (yield)
        finally:
            self.pytest_terminal_summary_restore(terminalreporter)

    @pytest.hookimpl(tryfirst=True, specname="pytest_terminal_summary")
    def pytest_terminal_summary_restore(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self._all_errors is not None:
            terminalreporter.stats["error"] = self._all_errors
            self._all_errors = None

    def _said_once(self, errors: list[Any]) -> list[Any]:
        """The error reports with each failed system's cases replaced by one report: its first case's,
        carrying the system's errors, the queries and how many cases err."""
        shown: list[Any] = []
        first: dict[str, int] = {}
        cases: dict[str, int] = {}
        for report in errors:
            system = dict(getattr(report, "user_properties", ())).get(SYSTEM_FAILED)
            if not isinstance(system, str):
                shown.append(report)
                continue
            cases[system] = cases.get(system, 0) + 1
            if system not in first:
                first[system] = len(shown)
                shown.append(report)
        for system, at in first.items():
            block = copy.copy(shown[at])
            block.longrepr = self._failure_block(system, cases[system])
            shown[at] = block
        return shown

    def _failure_block(self, system: str, cases: int) -> str:
        by_cause: dict[str, list[str]] = {}
        for (name, query_id), cause in (self.outcome.causes.items() if self.outcome is not None else ()):
            if name == system:
                by_cause.setdefault(cause, []).append(query_id)
        queries = sum(len(ids) for ids in by_cause.values())
        lines = [f"system {system!r} failed on {queries} quer{'y' if queries == 1 else 'ies'}, so its {cases} "
                 f"case{'' if cases == 1 else 's'} of {'it' if queries == 1 else 'them'} err (said once here; "
                 "each case is in the short test summary and the JUnit XML):"]
        ranked = sorted(((cause, sorted(ids)) for cause, ids in by_cause.items()), key=lambda item: -len(item[1]))
        for cause, ids in ranked[:SHOWN_CAUSES]:
            named = ", ".join(ids[:SHOWN_QUERIES]) + (f" and {len(ids) - SHOWN_QUERIES} more"
                                                     if len(ids) > SHOWN_QUERIES else "")
            lines.append(f"  on {named}: {cause}")
        if len(ranked) > SHOWN_CAUSES:
            lines.append(f"  and {len(ranked) - SHOWN_CAUSES} other errors (the JUnit XML has each case's)")
        inputs = setup_of(self.config).exam_inputs(self.config)
        return inputs.redact(scrub("\n".join(lines)))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if is_worker(self.config):
            return
        for note in self._undeclared():
            terminalreporter.write_line(scrub(note), yellow=True, bold=True)
        outcome = self.outcome
        if outcome is None:
            return
        for note in outcome.notes:
            terminalreporter.write_line(scrub(f"! {note}"), yellow=True, bold=True)
        failed: dict[str, int] = {}
        for system, _query in outcome.failures:
            failed[system] = failed.get(system, 0) + 1
        if failed:
            shown = ", ".join(f"{name!r} on {n} quer{'y' if n == 1 else 'ies'}" for name, n in failed.items())
            terminalreporter.write_line(
                f"FAIL incomplete exam: systems failed ({scrub(shown)}); those cases are errors and the systems' "
                "scores count the queries as not covered (marked incomplete, '!'); nothing was recorded for them, "
                "so the next run asks again",
                red=True, bold=True)
        # the systems' summary line is the report's live-systems section (sections/live_systems.py)

    def _undeclared(self) -> list[str]:
        """A warning per run recorded by a system no longer declared (systems/recording.py)."""
        from exam_harness.systems.recording import undeclared_system_notes

        setup = setup_of(self.config)
        inputs = setup.exam_inputs(self.config)
        try:
            runs = list(inputs.data.runs)
        except ConfigError:  # the runs were never loaded (the session stopped before): nothing was scored
            return []
        return undeclared_system_notes([s.name for s in declared()], runs, [*setup.options.runs, *inputs.extra_runs])

    def health(self) -> LiveSystems | None:
        """The declared systems' health for the result document (its live-systems section)."""
        if self.outcome is None or is_worker(self.config) or not self.outcome.health:
            return None
        return LiveSystems(mode=self.mode, policy=self.policy, calls=self.outcome.calls,
                           systems=list(self.outcome.health.values()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # pytest formats an interrupt's whole traceback, reading and parsing each frame's source file (0.1 to
        # 0.3 s on a loaded machine, after the second Ctrl-C), and prints only its last line for this one
        if isinstance(excinfo.value, CallsInterrupted):
            excinfo.traceback = excinfo.traceback[-1:]

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        clear()  # declarations belong to this session (an in-process pytester run imports conftest again)
        if self._live is not None:
            self._live.cleanup()


def system_failure(config: pytest.Config, run: str, query_id: str) -> str | None:
    plugin = config.pluginmanager.get_plugin("exam-systems")
    return plugin.failure(run, query_id) if isinstance(plugin, ExamSystems) else None


def live_systems(config: pytest.Config) -> LiveSystems | None:
    plugin = config.pluginmanager.get_plugin("exam-systems")
    return plugin.health() if isinstance(plugin, ExamSystems) else None
