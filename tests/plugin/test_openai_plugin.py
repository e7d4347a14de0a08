"""Grading a bank through pytest with ``--exam-grader openai`` against the local fake server:
faults are retried to the right grades; a permanent failure is an error with a non-zero exit and
never a grade (nor a cached one)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fake_openai_server import FakeOpenAIServer, Fault
from tests.helpers import report_means, write_project
from tests.plugin.support import BANK, COLLECTION, RUNS, openai_args

pytest_plugins = ["pytester"]
pytest.importorskip("openai")

PAIRS = 6  # q1: {p1, p2} x {a, b}; q2: {p3, p4} x {c}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return write_project(pytester, BANK, COLLECTION, RUNS)


def covers(pytester: pytest.Pytester) -> dict[str, float]:
    report = json.loads((pytester.path / "reports" / "exam-report.json").read_text())
    return report_means(report)


def test_faults_are_retried_to_the_right_grades(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    server.add_faults("GRADE=5", Fault("status", status=429, retry_after="0"), Fault("garbage"))
    server.add_faults("GRADE=4", Fault("slow", delay=3.0), Fault("status", status=500), Fault("truncated"))
    result = project.runpytest(*openai_args(server))
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)  # good answers a, b and c; weak misses all
    assert covers(project) == {"good": pytest.approx(1.0), "weak": pytest.approx(0.0)}
    assert server.count() == PAIRS + 5  # every pair once, plus one request per scripted fault
    assert server.count("GRADE=4") == 1 + 3
    # Everything is cached now: a second session sends nothing.
    project.runpytest(*openai_args(server))
    assert server.count() == PAIRS + 5


def test_permanent_failure_is_an_error_with_non_zero_exit(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    server.add_faults("GRADE=0", *[Fault("status", status=500)] * 50)
    result = project.runpytest(*openai_args(server, "max_retries=2"))
    assert result.ret != 0
    result.assert_outcomes(passed=3, errors=1)  # the weak run's q2/c needs the failed pair
    result.stdout.fnmatch_lines(["*ERROR*q2/c?weak?*"])
    result.stdout.fnmatch_lines(["*HTTP 500*3 attempts*"])
    assert server.count("GRADE=0") == 3  # 1 + max_retries, never more
    # No grade was stored for the failed pair: the next session asks again.
    project.runpytest(*openai_args(server, "max_retries=2"))
    assert server.count("GRADE=0") == 6
    assert server.count("GRADE=5") == 2  # the good pairs were cached


def test_dry_run_spends_nothing(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = project.runpytest(*openai_args(server), "--exam-dry-run")
    assert result.ret == 0, result.stdout.str()
    assert server.count() == 0
    result.stdout.fnmatch_lines([f"*{PAIRS} calls*prompt tokens*"])
