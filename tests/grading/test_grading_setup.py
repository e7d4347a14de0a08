"""The one grading-pass set-up (exam_harness.grading.setup) and the registries built once per session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest

from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import ExamData
from exam_harness.extensions import Registries
from exam_harness.graders.base import GraderConfig, GradeResult, GradingRequest
from exam_harness.grading.passes import DEFAULT_CHUNK_SIZE, chunk_size_for
from exam_harness.grading.setup import open_grading
from tests.helpers import KeywordGrader

pytest_plugins = ["pytester"]


class ClosingGrader(KeywordGrader):
    """A keyword grader that says when it is closed and asks for chunks of its own size."""

    name = "closing"
    chunk_size = 7
    closed: ClassVar[list[str]] = []

    def __init__(self, config: GraderConfig | None = None) -> None:
        super().__init__(config)
        self.config = config

    def close(self) -> None:
        ClosingGrader.closed.append(self.name)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        return super().grade_batch(requests)


def registries() -> Registries:
    built = Registries.builtin()
    built.graders.register("closing", ClosingGrader, "test grader that records close()")
    built.graders.register("keyword", KeywordGrader, "test grader")
    return built


def test_the_chunk_size_is_the_batch_size_else_the_grader_s_else_the_default() -> None:
    assert chunk_size_for(ClosingGrader(), 3) == 3
    assert chunk_size_for(ClosingGrader(), None) == 7
    assert chunk_size_for(KeywordGrader(), None) == DEFAULT_CHUNK_SIZE == 256


def test_open_grading_makes_the_grader_the_plan_and_the_chunk_size() -> None:
    ClosingGrader.closed.clear()
    options = ExamOptions(grader="closing", k=4, batch_size=None)
    with open_grading(options, registries(), ExamData(), where="--min-grade") as grading:
        assert isinstance(grading.grader, ClosingGrader)
        assert grading.grader.config is not None and grading.grader.config.batch_size is None
        assert grading.plan.k == 4 and grading.plan.min_grades == (4,)  # the grader's default minimum grade
        assert grading.chunk_size == 7
        assert ClosingGrader.closed == []
    assert ClosingGrader.closed == ["closing"]


def test_open_grading_closes_the_grader_when_the_plan_cannot_be_made() -> None:
    ClosingGrader.closed.clear()
    options = ExamOptions(grader="closing", measures=("no-such-measure(x=1)@3",))
    with pytest.raises(ConfigError, match="no-such-measure"):
        open_grading(options, registries(), ExamData(), where="--min-grade")
    assert ClosingGrader.closed == ["closing"]


COUNTING = """
CALLS = []

def pytest_exam_register_measures(registry):
    CALLS.append(1)

def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"registries built: {len(CALLS)}")
"""


def test_a_session_builds_its_registries_once(project: pytest.Pytester) -> None:
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text() + COUNTING)
    result = project.runpytest("banks", "--exam-fail-under=0.1")  # the gates plugin asks at configure
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["registries built: 1"])


class PromptCountingGrader(KeywordGrader):
    """A plugin grader that is no LLM grader yet declares what its prompts would cost (one word each)."""

    name = "counting"

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int]:
        return len(requests), sum(len(r.passage.text.split()) for r in requests)


def test_a_dry_run_counts_what_any_grader_declares_it_would_send() -> None:
    from exam_harness.core.models import Passage, Query, TestPoint
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.passes import dry_run_summary

    tp = TestPoint(id="t1", query_id="q1", kind="question", text="What is alpha?")
    requests = [GradingRequest(Query(id="q1", text="alpha"), tp, Passage(id=p, text=text))
                for p, text in (("p1", "alpha beta"), ("p2", "gamma delta epsilon"))]
    cache = GradeCache(None)
    assert "2 pairs in 2 calls with about 5 prompt tokens" in dry_run_summary(PromptCountingGrader(), requests, cache)
    assert "(no prompts: not an LLM grader)" in dry_run_summary(KeywordGrader(), requests, cache)
