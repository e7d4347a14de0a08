"""The JSON report is dumped list item by list item (exam_harness.results.json_writer.report_json) with the
bytes of one ``json.dumps`` of the whole report: checked on the pinned example report, with its long
lists emptied, and with texts that JSON escapes or leaves raw."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import tests.paths as tests_paths
from exam_harness.results.json_writer import STREAMED_LISTS, report_json
from exam_harness.results.schema import ExamReport

GOLDEN = tests_paths.GOLDEN / "exam-report.json"


def whole_tree_dump(report: ExamReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.fixture
def report() -> ExamReport:
    # the pinned report leaves out what changes from run to run (tests/report/test_reports_golden.py)
    return ExamReport.model_validate({**json.loads(GOLDEN.read_text()), "tool_version": "0.1.0",
                                      "created": "2026-11-23T00:00:00+00:00"})


def test_the_pinned_report_dumps_as_one_tree_would(report: ExamReport) -> None:
    assert report.outcomes and report.per_query
    assert report_json(report) == whole_tree_dump(report)


@pytest.mark.parametrize("emptied", [(), ("outcomes",), ("per_query",), STREAMED_LISTS])
def test_empty_and_escaped_lists_dump_as_one_tree_would(report: ExamReport, emptied: tuple[str, ...]) -> None:
    outcomes = [replace(o, run=f"rün\u2028{i} \"quoted\" \\ \n tab\t") for i, o in enumerate(report.outcomes)]
    changed = report.model_copy(update={"outcomes": outcomes, **{name: [] for name in emptied}})
    assert report_json(changed) == whole_tree_dump(changed)
