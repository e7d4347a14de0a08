"""Issue 31, finding 19: a grader whose prompt can grade none of the bank's test points
(``prompt=nugget-assignment`` on a bank of questions) is a usage error before anything is sent or
graded, in a dry run too, never a green session of skipped cases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import write_project
from tests.llm.support import COLLECTION, RUNS, SeededServer, pytest_args
from tests.plugin.support import BANK

pytest_plugins = ["pytester"]
pytest.importorskip("openai")


@pytest.fixture
def server() -> Iterator[SeededServer]:
    with SeededServer() as srv:
        yield srv


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return write_project(pytester, BANK, COLLECTION, RUNS, "exam_k = 2")


@pytest.mark.parametrize("dry_run", [False, True], ids=["graded", "dry-run"])
def test_a_prompt_that_grades_no_test_point_is_a_usage_error(
    project: pytest.Pytester, server: SeededServer, dry_run: bool
) -> None:
    result = project.runpytest(*pytest_args(server, prompt="nugget-assignment"),
                               *(["--exam-dry-run"] if dry_run else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*grader 'openai' cannot grade any of the 3 test points of the banks (question): "
                                 "*the session would grade nothing and pass*"])
    assert server.spent().calls == 0
