"""``--exam-cases query``: one case per query and run, with the same reports and scores as one case per
test point and run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from tests.helpers import BANK

pytest_plugins = ["pytester"]


def _report(project: pytest.Pytester, folder: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((project.path / folder / "exam-report.json").read_text())
    report.pop("created")
    report["cache"].pop("grading_seconds")
    report["cache"].pop("hits")  # the second session reads the first one's grades
    report["cache"].pop("misses")
    report["cache"].pop("graded")
    return report


def test_reports_equal_those_of_test_point_cases(project: pytest.Pytester) -> None:
    project.runpytest("banks", "--exam-report-dir=per-point")
    result = project.runpytest("banks", "--exam-cases=query", "--exam-report-dir=per-query")
    # good answers both queries; weak misses one test point of each
    assert result.parseoutcomes() == {"passed": 2, "missed": 2}
    assert _report(project, "per-point") == _report(project, "per-query")
    for name in ("exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels"):
        assert (project.path / "per-point" / name).read_text() == (project.path / "per-query" / name).read_text()


def test_ids_and_messages_name_the_query_and_what_was_missed(project: pytest.Pytester) -> None:
    collected = project.runpytest("banks", "--exam-cases=query", "--collect-only", "-q")
    collected.stdout.fnmatch_lines(["banks/exam.yaml::q1[[]good[]]", "banks/exam.yaml::q1[[]weak[]]",
                                    "banks/exam.yaml::q2[[]good[]]", "banks/exam.yaml::q2[[]weak[]]"])
    result = project.runpytest("banks", "--exam-cases=query", "-rs")
    result.stdout.fnmatch_lines([
        "MISSED banks/exam.yaml::q1[[]weak[]] - 1 of 3 test points missed (2 answered, 1 missed)",
        "  q1/b: missed 'question b': best grade 0 (passage p3 'nothing useful here', reason '0') < min grade 4 in the run's top 20",
    ])


def test_a_required_miss_fails_the_query_case(project: pytest.Pytester) -> None:
    (project.path / "banks" / "exam.yaml").write_text(
        BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    result = project.runpytest("banks", "--exam-cases=query", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED banks/exam.yaml::q2[[]weak[]] - 1 of 1 test points required-missed*"])
    suite = ET.parse(project.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "1")


def test_query_cases_under_xdist(project: pytest.Pytester) -> None:
    single = project.runpytest("banks", "--exam-cases=query", "--exam-report-dir=single")
    parallel = project.runpytest_subprocess("banks", "--exam-cases=query", "-n", "2",
                                            "--exam-report-dir=parallel")
    assert single.ret == parallel.ret == pytest.ExitCode.OK, parallel.stdout.str()
    a, b = _report(project, "single"), _report(project, "parallel")
    assert a == b
