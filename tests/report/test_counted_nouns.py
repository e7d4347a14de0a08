"""Summary lines count in words a reader expects: "1 query", "2 queries"."""

from __future__ import annotations

import json

import tests.paths as tests_paths
from exam_harness.core.display import counted
from exam_harness.report.markdown import _context
from exam_harness.report.terminal import cache_line
from exam_harness.results.schema import ExamReport

GOLDEN = tests_paths.GOLDEN / "exam-report.json"


def test_counted_is_singular_for_one_only() -> None:
    assert counted(1, "query", "queries") == "1 query"
    assert counted(0, "query", "queries") == "0 queries"
    assert counted(2, "test point") == "2 test points"


def _report(queries: int, test_points: int) -> ExamReport:
    # the golden report without the fields its test strips (report/terminal.py reads neither)
    raw = {**json.loads(GOLDEN.read_text(encoding="utf-8")), "created": "2026-01-01T00:00:00+00:00",
           "tool_version": "0"}
    report = ExamReport.model_validate(raw)
    return report.model_copy(update={"queries": queries, "test_points": test_points,
                                     "systems": report.systems[:1]})


def test_a_one_query_exam_says_so_in_the_terminal_and_markdown() -> None:
    report = _report(1, 1)
    assert cache_line(report).startswith("1 query, 1 test point, 1 run; ")
    assert _context(report).startswith("1 query · 1 test point · 1 run · ")
    several = _report(2, 4)
    assert cache_line(several).startswith("2 queries, 4 test points, 1 run; ")
