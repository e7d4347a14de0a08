"""Declared live systems in a pytest session: called (or replayed) before grading, as runs.

The queries a system is asked are those of its collected cases, so ``-k`` and deselection limit the
calls; under pytest-xdist the controller calls every query of the requested banks before the workers
start, and the workers read the recordings. A query a system failed on makes that system's cases of
that query errors, with the system's message; pytest's ERRORS section says each failed system once (its
errors, the queries and how many cases), while every case stays an error. A stale recording under
``--exam-stale=fail`` (the default under ``CI=true``) fails the session with a case of its own,
``exam gates::exam-stale[NAME]``. ``--exam-dry-run`` calls no system.

:class:`ExamSystems` is a plugin of pytest's hooks and of the exam's session hooks (``pytest_exam_before_grading``,
``pytest_exam_case_error``), registered as ``exam-systems`` by the feature's ``pytest_exam_configure``.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import tempfile
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.api import ConfigError, ExamOptions, Query
from exam_harness.core.paths import shown_path
from exam_harness.core.progress import GradingProgress
from exam_harness.core.xdist import is_worker, is_xdist_controller
from exam_harness.exam.inputs import ExamInputs
from exam_harness.features.live_systems.calling import CallsInterrupted
from exam_harness.features.live_systems.declare import System, clear, declared
from exam_harness.features.live_systems.health import LiveSystems, policy_text, resolve_stale
from exam_harness.features.live_systems.options import RECORD_INTO, STALE, SYSTEM_MODE
from exam_harness.features.live_systems.secrets import scrub
from exam_harness.features.live_systems.session import (
    DRY,
    WORKER,
    PassOutcome,
    SystemsPass,
    recording_folder,
    resolve_mode,
)

SYSTEM_FAILED = "exam_system_failed"  # user property of a case that errs because its system failed: the system
SHOWN_QUERIES = 5  # query ids named per cause in a failed system's block
SHOWN_CAUSES = 5  # distinct errors named in a failed system's block
PLUGIN = "exam-systems"  # its name among the session's plugins


class ExamSystems:
    """The declared systems of one session (``options``: the session's; ``inputs()``: the exam's inputs)."""

    def __init__(self, config: pytest.Config, options: ExamOptions, inputs: Callable[[], ExamInputs]) -> None:
        self.config = config
        self.options = options
        self.inputs = inputs
        self.outcome: PassOutcome | None = None
        self.only: set[str] | None = None  # exam-harness record --system NAME: these systems only
        self._live: tempfile.TemporaryDirectory[str] | None = None
        self._all_errors: list[Any] | None = None  # pytest's error reports while its ERRORS section is printed
        inputs().system_names = lambda: [s.name for s in declared()]
        self.mode = resolve_mode(options.feature(SYSTEM_MODE))
        self.stale = resolve_stale(options.feature(STALE))
        self.policy = policy_text(self.stale, options.feature(STALE))

    def folder(self) -> Path:
        return self.options.feature(RECORD_INTO) or recording_folder(list(self.options.runs))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # Before any call: the folder the recordings go to. A runs folder named on purpose must exist (a
        # typo would record every system again into a new folder); --exam-record-into makes its folder,
        # and the default runs/ is made for a first recording.
        if not declared():
            return
        options = self.options
        try:
            folder = self.folder()
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        record_into = options.feature(RECORD_INTO)
        if not folder.exists() and record_into is None and options.runs != (Path("runs"),):
            shown = shown_path(folder)
            raise pytest.UsageError(
                f"the runs folder {shown} does not exist, so the declared systems would all be called again into a "
                f"new folder; check the name, or give --exam-record-into {shown} to record into a new folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"cannot make the runs folder {folder}: {exc.strerror or exc}") from None
        if record_into is not None:
            self.inputs().extra_runs.append(folder)

    def pytest_exam_before_grading(self, config: pytest.Config, queries: Callable[[str], Sequence[Query]]) -> None:
        self.prepare(queries)

    def prepare(self, queries: Callable[[str], Sequence[Query]]) -> None:
        """Call or replay every declared system for ``queries(its name)``: those of its collected cases, or
        every query of the requested banks (the xdist controller, before the workers collect)."""
        systems = [s for s in declared() if self.only is None or s.name in self.only]
        if not systems or self.outcome is not None:
            return
        mode = WORKER if is_worker(self.config) else DRY if self.options.dry_run else self.mode
        if mode == "live" and (is_xdist_controller(self.config) or is_worker(self.config)):
            raise ConfigError("--exam-system-mode live keeps answers in this process only; under pytest-xdist use "
                              "once or record, which the workers read from the runs folder")
        folder = self.folder()
        if mode == "live":
            self._live = tempfile.TemporaryDirectory(prefix="exam-live-")
            folder = Path(self._live.name)
        # a system none of whose cases was collected (-k) is neither called nor checked
        wanted: list[tuple[System, list[Query]]] = [(s, asked) for s in systems if (asked := list(queries(s.name)))]
        self.outcome = SystemsPass(mode, folder, progress=self._progress, stale=self.stale, say=self._say).run(wanted)
        inputs = self.inputs()
        if mode == "live":
            inputs.extra_runs.append(folder)
        inputs.forget_runs()

    def _progress(self, label: str) -> GradingProgress:
        capman = self.config.pluginmanager.getplugin("capturemanager")
        enabled = not self.options.no_progress and self.config.get_verbosity() >= 0
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

    def pytest_exam_case_error(self, item: pytest.Item, run: str, query_id: str) -> str | None:
        failure = self.failure(run, query_id)
        if failure is not None:
            item.user_properties.append((SYSTEM_FAILED, run))  # its error is said once per system
        return failure

    def unanswered(self) -> dict[str, set[str]]:
        """Run -> the queries its declared system failed on (their scores count as not covered)."""
        found: dict[str, set[str]] = {}
        for run, query in self.outcome.failures if self.outcome is not None else ():
            found.setdefault(run, set()).add(query)
        return found

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
        return self.inputs().redact(scrub("\n".join(lines)))

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
        # the systems' summary line is the report's live-systems section (section.py)

    def _undeclared(self) -> list[str]:
        """A warning per run recorded by a system no longer declared (recording.py)."""
        from exam_harness.features.live_systems.recording import undeclared_system_notes

        inputs = self.inputs()
        try:
            runs = list(inputs.data.runs)
        except ConfigError:  # the runs were never loaded (the session stopped before): nothing was scored
            return []
        return undeclared_system_notes([s.name for s in declared()], runs, [*self.options.runs, *inputs.extra_runs])

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
