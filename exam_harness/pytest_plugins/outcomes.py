"""Case outcomes inside pytest's contract, and each run's tally.

A missed test point is an exam result, not a failure: its report is *skipped* (an outcome every
pytest plugin, JUnit XML and CI reporter knows) with the user property ``exam_outcome=missed``,
which :meth:`ExamOutcomes.pytest_report_teststatus` shows as ``m`` / ``MISSED``. In JUnit XML a
missed case is ``<skipped type="pytest.skip" message="missed: best grade 3 (passage p) < min grade 4 ...">``
with the properties ``exam_outcome`` and ``exam_min_grade``, so ``tests=`` counts every case and CI
test-report tools count misses as skipped. ``--lf`` reruns missed cases as well as failed ones.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import pytest

from exam_harness.core.display import visible
from exam_harness.pytest_plugins.items import ExamItem, ExamMissed
from exam_harness.results.schema import Outcomes

MISSED = "missed"


def exam_outcome(report: pytest.TestReport) -> object:
    return dict(report.user_properties).get("exam_outcome")


class ExamOutcomes:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tallies: dict[str, Outcomes] = {}
        self.seen_test_points: set[str] = set()
        self.missed: list[tuple[str, str]] = []  # (node id, message) of missed cases, for -rs / -ra
        # kept only when the summary shows them: an exam of many misses would hold every message
        self.keep_missed = bool(set(str(getattr(config.option, "reportchars", "") or "")) & set("saA"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        missed = call.excinfo is not None and call.excinfo.errisinstance(ExamMissed)
        if isinstance(item, ExamItem) and call.when == "call" and missed:
            assert call.excinfo is not None
            report.outcome = "skipped"
            # pytest's own skips carry (path, line, reason); a bank case has no line (pytest allows None)
            report.longrepr = cast(tuple[str, int, str], (str(item.path), None, str(call.excinfo.value)))
        return report

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when == "call" and report.skipped and exam_outcome(report) == MISSED:
            return MISSED, "m", ("MISSED", {"yellow": True})
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and report.passed:  # counts nothing: most reports of a session
            return
        properties = dict(report.user_properties)
        run = properties.get("exam_run")
        if run is None:
            return
        tally = self.tallies.setdefault(str(run), Outcomes())
        counts = properties.get("exam_counts")
        if isinstance(counts, dict):  # a query case: it counts its test points
            self._count_query_case(report, tally, counts, properties)
            return
        self.seen_test_points.add(str(properties.get("exam_test_point")))
        if report.when == "call":
            if report.skipped and properties.get("exam_outcome") == MISSED:
                tally.missed += 1
                self._remember_for_last_failed(report)
                longrepr = report.longrepr
                if self.keep_missed:
                    self.missed.append((report.nodeid, longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)))
            elif report.passed:
                tally.answered += 1
            elif report.failed:
                tally.required_missed += 1
        elif report.failed:
            tally.errors += 1
        elif report.skipped and report.when == "setup":
            tally.skipped += 1

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        """With ``-rs`` (pytest's skip character) or ``-ra``/``-rA``: every missed case and its message,
        whole (what the run missed, its best passage and grade), before pytest's short summary."""
        if not self.missed:  # kept only with those characters (keep_missed)
            return
        terminalreporter.write_sep("=", f"missed test points ({len(self.missed)})", yellow=True)
        for nodeid, message in self.missed:
            terminalreporter.write_line(f"MISSED {visible(nodeid)} - {message}")

    def _count_query_case(self, report: pytest.TestReport, tally: Outcomes, counts: dict[str, int],
                          properties: dict[str, object]) -> None:
        """A query case's tally: its test points' verdicts, counted once (at the call, or at a setup error)."""
        if not (report.when == "call" or (report.when == "setup" and report.failed)):
            return
        points = properties.get("exam_test_points")
        if isinstance(points, list):
            self.seen_test_points.update(str(p) for p in points)
        tally.answered += counts.get("answered", 0)
        tally.missed += counts.get("missed", 0)
        tally.required_missed += counts.get("required-missed", 0)
        tally.errors += counts.get("error", 0)
        tally.skipped += counts.get("skipped", 0)
        if report.skipped and properties.get("exam_outcome") == MISSED:
            self._remember_for_last_failed(report)
            longrepr = report.longrepr
            if self.keep_missed:
                self.missed.append((report.nodeid, longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)))

    def _remember_for_last_failed(self, report: pytest.TestReport) -> None:
        # pytest's --lf forgets skipped cases; a missed case is one to rerun after fixing a system.
        lf = self.config.pluginmanager.get_plugin("lfplugin")
        lastfailed = getattr(lf, "lastfailed", None)
        if isinstance(lastfailed, dict):
            # pytest >= 9 keys it by the report's structured id, earlier versions by the node id string
            lastfailed[getattr(report, "id", report.nodeid)] = True
