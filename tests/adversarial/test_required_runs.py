"""Issue 28, item 5 (baselines): ``required`` may name the runs it applies to (a bank's ``required: [RUN,
...]`` or ``--exam-required-runs``), and the ``--exam-baseline`` run is scored and compared but never fails
the session (no test point is required of it, default thresholds skip it). In the project, 'good' answers
every test point and 'weak' misses q1/b and q2/c."""

from __future__ import annotations

import json

import pytest

from tests.helpers import BANK

pytest_plugins = ["pytester"]


def _require_c(project: pytest.Pytester, required: str) -> None:
    bank = project.path / "banks" / "exam.yaml"
    assert "{id: q2/c, text: question c}" in BANK
    bank.write_text(BANK.replace("{id: q2/c, text: question c}", f"{{id: q2/c, text: question c, required: {required}}}"))


def _outcomes(project: pytest.Pytester) -> dict[tuple[str, str], tuple[bool, str]]:
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return {(o["run"], o["test_point_id"]): (o["required"], o["outcome"]) for o in report["outcomes"]}


def test_required_of_every_run_fails_the_weak_run(project: pytest.Pytester) -> None:
    _require_c(project, "true")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(project)[("weak", "q2/c")] == (True, "required-missed")


def test_required_scoped_to_one_run_does_not_fail_another(project: pytest.Pytester) -> None:
    _require_c(project, "[good]")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    outcomes = _outcomes(project)
    assert outcomes[("weak", "q2/c")] == (False, "missed") and outcomes[("good", "q2/c")] == (True, "answered")


def test_required_runs_option_scopes_required_true(project: pytest.Pytester) -> None:
    _require_c(project, "true")
    assert project.runpytest("banks", "--exam-required-runs=go*").ret == pytest.ExitCode.OK
    assert _outcomes(project)[("weak", "q2/c")] == (False, "missed")


def test_a_required_run_that_names_no_run_is_a_usage_error(project: pytest.Pytester) -> None:
    _require_c(project, "[gooood]")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*required test points name runs that are not examined: 'gooood'*runs: good, weak*"])


def test_the_baseline_run_is_scored_but_never_fails_the_session(project: pytest.Pytester) -> None:
    _require_c(project, "true")
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\nexam_baseline = weak\n")
    result = project.runpytest("banks", "--exam-fail-under=0.5")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _outcomes(project)[("weak", "q2/c")] == (False, "missed")
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert {s["run"] for s in report["systems"]} == {"good", "weak"}  # scored all the same
    # a threshold naming the baseline still applies
    named = project.runpytest("banks", "--exam-fail-under=weak=0.5")
    assert named.ret == pytest.ExitCode.TESTS_FAILED
