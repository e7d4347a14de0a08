"""When a grading pass stores its grades: a fast grader's batches are committed together (at most
every STORE_EVERY_S seconds or STORE_AT_MOST grades), a slow grader's batch by batch, and whatever was
graded is stored when the pass ends in an error."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import exam_harness.grading.passes as grading
from exam_harness.core.models import Grade
from exam_harness.graders.base import GradeResult, GradingRequest
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from tests.grading.support import make_requests
from tests.helpers import KeywordGrader


class CountingCache(GradeCache):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.commits: list[int] = []

    def put_many(self, grades: Mapping[str, Grade]) -> bool:
        self.commits.append(len(grades))
        return super().put_many(grades)


class SlowGrader(KeywordGrader):
    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        time.sleep(0.02)
        return super().grade_batch(requests)


class FailingGrader(KeywordGrader):
    """Grades two batches, then stops the pass with an error that is not a grade."""

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        if len(self.graded) >= 8:
            raise KeyboardInterrupt
        return super().grade_batch(requests)


def test_a_fast_graders_batches_are_committed_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "STORE_EVERY_S", 60.0)  # the pass takes far less, however loaded the machine
    cache = CountingCache(tmp_path / "c.sqlite")
    outcome = run_grading_pass(KeywordGrader(), make_requests(50), cache, chunk_size=4)
    assert outcome.graded == 100
    assert cache.commits == [100]  # 25 batches, one commit
    assert len(cache) == 100


def test_the_cap_on_held_grades_commits_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "STORE_AT_MOST", 10)
    monkeypatch.setattr(grading, "STORE_EVERY_S", 60.0)
    cache = CountingCache(tmp_path / "c.sqlite")
    run_grading_pass(KeywordGrader(), make_requests(50), cache, chunk_size=4)
    assert cache.commits == [12] * 8 + [4]  # a commit once 10 or more are held, the rest at the end
    assert len(cache) == 100


def test_a_slow_graders_batches_are_committed_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "STORE_EVERY_S", 0.01)  # each batch takes longer than that
    cache = CountingCache(tmp_path / "c.sqlite")
    run_grading_pass(SlowGrader(), make_requests(10), cache, chunk_size=4)
    assert cache.commits == [4, 4, 4, 4, 4]


def test_grades_before_an_interrupt_are_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "STORE_EVERY_S", 60.0)
    cache = CountingCache(tmp_path / "c.sqlite")
    with pytest.raises(KeyboardInterrupt):
        run_grading_pass(FailingGrader(), make_requests(10), cache, chunk_size=4)
    assert cache.commits == [8]
    assert len(cache) == 8
