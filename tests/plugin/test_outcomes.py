"""Missed cases inside pytest's contract: JUnit XML read back by a parser, ``--lf``, report file modes."""

from __future__ import annotations

import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import BANK

pytest_plugins = ["pytester"]


def junit(path: Path) -> tuple[ET.Element, list[ET.Element]]:
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")  # type: ignore[assignment]
    assert suite is not None
    return suite, suite.findall("testcase")


def properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


def test_junit_counts_every_case_and_marks_misses_skipped(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    result = project.runpytest("banks", "--junitxml=out.xml")
    result.stdout.fnmatch_lines(["*1 failed, 6 passed, 1 missed*"])
    assert "missed test points" not in result.stdout.str()  # listed with -rs / -ra only
    suite, cases = junit(project.path / "out.xml")
    assert int(suite.get("tests", -1)) == len(cases) == 8
    skipped = [c for c in cases if c.find("skipped") is not None]
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("skipped", -1)) == len(skipped) == 1
    assert int(suite.get("failures", -1)) == len(failed) == 1
    assert int(suite.get("errors", -1)) == 0
    (missed,) = skipped
    assert missed.get("name") == "q1/b[weak]"
    message = missed.find("skipped").get("message", "")  # type: ignore[union-attr]
    assert message == "missed 'question b': best grade 0 (passage p3 'nothing useful here', reason '0') < min grade 4 in the run's top 20"
    assert properties(missed)["exam_outcome"] == "missed" and properties(missed)["exam_min_grade"] == "4"
    assert properties(failed[0])["exam_outcome"] == "required-missed"
    answered = [c for c in cases if c not in skipped and c not in failed]
    assert all(properties(c)["exam_outcome"] == "answered" for c in answered) and len(answered) == 6


def test_last_failed_reruns_missed_and_failed_cases(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    project.runpytest("banks", "-p", "cacheprovider")
    again = project.runpytest("banks", "-p", "cacheprovider", "--lf", "-v")
    again.stdout.fnmatch_lines(["*q1/b?weak? MISSED*", "*q2/c?weak? FAILED*", "*1 failed, 6 deselected, 1 missed*"])


def test_report_files_are_ordinary_0644_files(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    files = sorted((project.path / "reports").iterdir())
    assert [f.name for f in files] == [".exam-report-set.json", "exam-at-least-2-min4.qrels", "exam-count-min4.qrels",
                                       "exam-max-grade.qrels", "exam-report.json"]
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o644}
