"""One verdict everywhere (issue 16): every gate, regression and incomplete-exam failure is a JUnit test
case of its own, counts in pytest's last line and is in the JSON, markdown and HTML reports."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.helpers import COLLECTION

pytest_plugins = ["pytester"]


def _cases(project: pytest.Pytester, name: str = "junit.xml") -> dict[str, ET.Element]:
    root = ET.parse(project.path / name).getroot()
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def _suite(project: pytest.Pytester, name: str = "junit.xml") -> ET.Element:
    root = ET.parse(project.path / name).getroot()
    return root if root.tag == "testsuite" else next(root.iter("testsuite"))


def test_a_failed_gate_is_a_failed_junit_case_in_the_last_line_and_the_json(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-fail-under=0.5", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suite = _suite(project)
    assert suite.get("failures") == "1"
    cases = _cases(project)
    failed = cases["exam gates::exam-fail-under[weak-exam-cover]"].find("failure")
    assert failed is not None
    assert "Required EXAM-Cover@" in str(failed.get("message")) and "'weak'" in str(failed.get("message"))
    passed = cases["exam gates::exam-fail-under[good-exam-cover]"]
    assert passed.find("failure") is None and passed.find("skipped") is None
    last = result.stdout.lines[-1]
    assert "1 gate failed" in last and "1 gate passed" in last, last
    verdict = json.loads((project.path / "reports" / "exam-report.json").read_text())["verdict"]
    assert verdict["passed"] is False
    gates = {(g["gate"], g["run"], g["measure"]): g for g in verdict["gates"]}
    weak = gates["exam-fail-under", "weak", "exam-cover"]
    assert (weak["passed"], weak["limit"], round(weak["value"], 4)) == (False, 0.5, 0.3333)
    assert weak["message"].startswith("FAIL Required EXAM-Cover@20 of 0.5 not reached by run 'weak'")
    assert gates["exam-fail-under", "good", "exam-cover"]["passed"] is True



def test_a_session_without_gates_has_a_passed_verdict_and_no_gate_cases(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.OK
    assert not [c for c in _cases(project) if c.startswith("exam gates::")]
    assert "gate" not in result.stdout.lines[-1]
    assert json.loads((project.path / "reports" / "exam-report.json").read_text())["verdict"] == {
        "passed": True, "gates": []}


def test_a_regression_is_a_failed_case_everywhere(project: pytest.Pytester) -> None:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    (project.path / "runs" / "weak.run").write_text("q1 Q0 p3 1 3.0 weak\nq2 Q0 p5 1 1.0 weak\n")
    result = project.runpytest("banks", "--exam-compare=main", "--exam-compare-fail=exam-cover:0.1",
                               "--junitxml=junit.xml", "--exam-markdown=summary.md", "--exam-html=html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _suite(project).get("failures") == "1"
    cases = _cases(project)
    failure = cases["exam gates::exam-compare-fail[weak-exam-cover]"].find("failure")
    assert failure is not None and "regressed on EXAM-Cover@20 against 0001_main.json" in str(failure.get("message"))
    assert cases["exam gates::exam-compare-fail[good-exam-cover]"].find("failure") is None
    assert "1 gate failed, 1 gate passed" in result.stdout.lines[-1] or \
        "1 gate passed, 1 gate failed" in result.stdout.lines[-1]
    markdown = (project.path / "summary.md").read_text()
    assert "### Verdict: 1 of 2 checks passed" in markdown
    assert "- ❌ `exam-compare-fail[weak-exam-cover]`: FAIL run 'weak' regressed" in markdown
    assert "- ✅ `exam-compare-fail[good-exam-cover]`: run 'good' within its allowance" in markdown
    html = (project.path / "html" / "index.html").read_text()
    banner = html[html.index('<section id="verdict"'):html.index("</section>", html.index('<section id="verdict"'))]
    assert 'class="verdict failed" role="alert"' in banner and "1 of 2 checks failed" in banner
    assert "<code>exam-compare-fail[weak-exam-cover]</code> FAILED: FAIL run &#x27;weak&#x27; regressed" in banner
    assert "<code>exam-compare-fail[good-exam-cover]</code> passed" in banner


def test_an_incomplete_exam_is_a_failed_case_per_run(project: pytest.Pytester) -> None:
    (project.path / "runs" / "collection.tsv").write_text(COLLECTION.replace("answers [a] and [n]", "BROKEN [a]"))
    result = project.runpytest("banks", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = _cases(project)
    for run in ("good", "weak"):
        failure = cases[f"exam gates::incomplete-exam[{run}]"].find("failure")
        assert failure is not None and f"the scores of run '{run}' rest on pairs that could not be graded" in str(
            failure.get("message"))
    assert "2 gates failed" in result.stdout.lines[-1]


def test_the_baseline_gate_is_a_case_per_run(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-baseline=good", "--junitxml=junit.xml", "-o", "junit_family=xunit1")
    assert result.ret == pytest.ExitCode.OK
    case = _cases(project)["exam gates::exam-baseline[weak-exam-cover]"]
    assert case.find("failure") is None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["exam_gate"] == "exam-baseline" and properties["exam_gate_run"] == "weak"
    assert "1 gate passed" in result.stdout.lines[-1]


def test_gate_cases_are_not_rerun_by_last_failed(project: pytest.Pytester) -> None:
    """A gate is no case to rerun: pytest's last-failed cache keeps the missed cases, not the gates."""
    assert project.runpytest("banks", "--exam-fail-under=0.5", "-p", "cacheprovider").ret == 1
    lastfailed = json.loads((project.path / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text())
    assert lastfailed and not [k for k in lastfailed if "exam gates" in k]


def test_gate_cases_under_xdist(project: pytest.Pytester) -> None:
    """With pytest-xdist the controller decides and reports the gate cases once."""
    result = project.runpytest("banks", "-n", "2", "--exam-fail-under=0.5", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _suite(project).get("failures") == "1"
    assert [c for c in _cases(project) if c.startswith("exam gates::")] == [
        "exam gates::exam-fail-under[good-exam-cover]", "exam gates::exam-fail-under[weak-exam-cover]"]
    assert "1 gate failed" in result.stdout.lines[-1]
