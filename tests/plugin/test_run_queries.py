"""A run query that no bank covers (issue 16): the note names its near match, and
``--exam-strict-queries`` makes it a usage error naming the run file and line, before any grading."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TYPO_RUN = "q1 Q0 p1 1 3.0 typo\nq2x Q0 p4 1 1.0 typo\nq2x Q0 p5 2 0.5 typo\n"


def test_an_uncovered_query_is_noted_with_its_near_match(project: pytest.Pytester) -> None:
    (project.path / "runs" / "typo.run").write_text(TYPO_RUN)
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["note: run 'typo' ranks 1 query that no examined bank covers (ignored): 'q2x' ~ 'q2'"])


def test_strict_queries_make_it_a_usage_error_naming_file_and_line(project: pytest.Pytester) -> None:
    (project.path / "runs" / "typo.run").write_text(TYPO_RUN)
    result = project.runpytest("banks", "--exam-strict-queries")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*runs/typo.run:2: run 'typo' ranks query 'q2x', which no bank covers (did you mean 'q2'?)*"])
    assert not (project.path / "graded.log").exists()  # stopped before any grading


def test_strict_queries_pass_when_every_query_is_covered(project: pytest.Pytester) -> None:
    assert project.runpytest("banks", "--exam-strict-queries").ret == pytest.ExitCode.OK
