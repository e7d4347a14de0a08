"""``exam-harness record [--system NAME...] [--mode MODE] [BANKS] [-- PYTEST OPTIONS]``: call the systems declared in
conftest.py and record their answers into the runs folder, without grading (the feature's subcommand, registered
through ``pytest_exam_register_commands``).

The session is a pytest session that stops after collection, so the banks, ``-k`` and the ini options
are those of ``pytest``; the default mode is ``once`` (only what the recordings lack), also under CI.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from exam_harness.api import Argument, Query
from exam_harness.config.options import PYTEST_ARGS, SYSTEMS, add_cli_options, options_from_cli
from exam_harness.features.live_systems.options import RECORD_INTO, STALE, SYSTEM_MODE


@dataclass(frozen=True)
class RecordCommand:
    help: str = "Call the systems declared in conftest.py and record their answers, without grading."
    description: str = (
        "Call the systems declared in conftest.py (exam_harness.system, http_system, command_system) "
        "once per bank query and record their answers into the runs folder, without grading. Arguments after "
        "the options go to pytest (pytest's own options after '--'), e.g. "
        "'exam-harness record --system my-rag banks/ -- -k tides'.")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        Argument("system", "Record this system only; repeatable (default: every declared system).", default=[],
                 many=True, metavar="NAME").add_to(parser)
        add_cli_options(parser, [SYSTEMS], defaults={SYSTEM_MODE.name: "once"})
        # raw like --system-mode, which options_from_cli converts
        Argument("mode", "Same as --system-mode.", str, metavar="MODE", dest=SYSTEM_MODE.name).add_to(parser)
        PYTEST_ARGS.add_to(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


COMMAND = RecordCommand()


def case_queries(items: Sequence[Any]) -> Callable[[str], list[Query]]:
    """run -> the queries of its exam cases among ``items`` (pytest's collected items, after deselection): an exam
    case carries its ``run`` and its ``bank`` (pytest_plugins/items.py)."""
    found: dict[str, dict[str, Query]] = {}
    for item in items:
        run, bank = getattr(item, "run", None), getattr(item, "bank", None)
        if isinstance(run, str) and bank is not None:
            found.setdefault(run, {}).setdefault(bank.query.id, bank.query)
    return lambda run: list(found.get(run, {}).values())


class RecordOnly:
    """Records after collection (deselection done), then ends the session before grading."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.returncode = 0

    def pytest_collection_finish(self, session: Any) -> None:
        import pytest

        from exam_harness.core.errors import ExamError
        from exam_harness.features.live_systems.declare import declared
        from exam_harness.features.live_systems.pytest_session import PLUGIN, ExamSystems
        from exam_harness.features.live_systems.secrets import scrub

        systems = session.config.pluginmanager.get_plugin(PLUGIN)
        assert isinstance(systems, ExamSystems)
        known = [s.name for s in declared()]
        unknown = [n for n in self.names if n not in known]
        if unknown or not known:
            raise pytest.UsageError(f"no declared system {', '.join(map(repr, unknown))}; declared: "
                                    f"{', '.join(known) or 'none (declare one in conftest.py: docs/live-systems.md)'}")
        systems.only = set(self.names) or None
        try:
            systems.prepare(case_queries(session.items))
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        outcome = systems.outcome
        assert outcome is not None
        failed = len(outcome.failures)
        # the pass's notes (stale, resumed, kept) are said once, by the systems plugin's terminal summary
        lines = [f"{name}: {n} queries recorded" for name, n in outcome.recorded.items()]
        replayed = sum(h.replayed for h in outcome.health.values())
        lines.append(scrub(f"{outcome.calls} calls, {replayed} answers kept from the recordings, {failed} failed "
                           f"(system, query) pairs ({systems.mode}, {systems.policy})" + (
            ": " + "; ".join(sorted(set(outcome.failures.values()))[:5]) if failed else "")))
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in lines:
            reporter.write_line(line)
        reporter.write_line("recorded, not graded")
        # No case runs, so nothing is graded; the session ends as any other does (pytest.exit printed a
        # crash-looking "!!! _pytest.outcomes.Exit" banner, even at exit status 0).
        items = list(session.items)
        session.items.clear()
        session.config.hook.pytest_deselected(items=items)
        self.returncode = 1 if failed else 0

    def pytest_sessionfinish(self, session: Any) -> None:
        if session.exitstatus in (0, 5):  # 5: pytest's "no tests ran", which every recording session is
            session.exitstatus = self.returncode


def run(args: argparse.Namespace) -> int:
    import pytest

    options = options_from_cli(args, [SYSTEMS], defaults={SYSTEM_MODE.name: "once"})
    stale, record_into = options.feature(STALE), options.feature(RECORD_INTO)
    # --assert=plain: exam_harness is imported already, which assertion rewriting would warn about
    pytest_args = ["-p", "no:cacheprovider", "--assert=plain", f"--exam-system-mode={options.feature(SYSTEM_MODE)}",
                   *([f"--exam-stale={stale}"] if stale else []),
                   *([f"--exam-record-into={record_into}"] if record_into else []),
                   *[a for a in args.pytest_args if a != "--"]]
    return int(pytest.main(pytest_args, plugins=[RecordOnly(args.system)]))
