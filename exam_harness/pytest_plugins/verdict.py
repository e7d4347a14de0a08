"""The session's verdict (decided by results/verdict.py) where CI reads results: each check of the
verdict (a gate, an allowed regression, the baseline, a run's incomplete grading or fallback share)
becomes a test case of its own, ``exam gates::exam-fail-under[weak-ranker-exam-cover]``, that passes
or fails with the check's message.

The checks need the report, which exists only once every case has run, so their cases are reported
at session finish, before any plugin writes its results (pytest's JUnit XML is written by a plain
``pytest_sessionfinish``; :class:`~exam_harness.pytest_plugins.reporting.ExamReporting` decides in a
``tryfirst`` one). They count in the last summary line as their own category (``2 gates failed``),
print no progress letter, and are kept out of ``--lf``'s last failures: a gate is not a case to rerun.
"""

from __future__ import annotations

import pytest

from exam_harness.results.schema import Verdict

GATES_PATH = "exam gates"  # the node id's path part: the JUnit classname of every check's case
GATE_PROPERTY = "exam_gate"


def report_checks(config: pytest.Config, verdict: Verdict) -> None:
    """Each check as a test case (call and teardown reports, as pytest sends for an item)."""
    lf = config.pluginmanager.get_plugin("lfplugin")
    for result in verdict.gates:
        nodeid = f"{GATES_PATH}::{result.case}"
        properties: list[tuple[str, object]] = [(GATE_PROPERTY, result.gate)]
        properties += [(f"exam_gate_{name}", value) for name, value in (
            ("run", result.run), ("measure", result.measure), ("value", result.value), ("limit", result.limit))
            if value is not None]
        location = (GATES_PATH, None, result.case)
        call = pytest.TestReport(nodeid, location, {}, "passed" if result.passed else "failed",
                                 None if result.passed else result.message, "call", user_properties=properties)
        config.hook.pytest_runtest_logreport(report=call)
        config.hook.pytest_runtest_logreport(report=pytest.TestReport(nodeid, location, {}, "passed", None, "teardown",
                                                                      user_properties=properties))
        lastfailed = getattr(lf, "lastfailed", None)
        if isinstance(lastfailed, dict):  # keyed by the structured id (pytest >= 9) or the node id string
            lastfailed.pop(getattr(call, "id", nodeid), None)
            lastfailed.pop(nodeid, None)


def teststatus(report: pytest.TestReport, verdict: Verdict | None) -> tuple[str, str, str] | None:
    """A check's case: its own category in the last line (``1 gate failed``, ``3 gates passed``), no letter."""
    if report.when != "call" or verdict is None or GATE_PROPERTY not in dict(report.user_properties):
        return None
    same = sum(r.passed == report.passed for r in verdict.gates)
    return f"{'gate' if same == 1 else 'gates'} {'passed' if report.passed else 'failed'}", "", ""
