"""The grade cache shared by concurrent processes (pytest-xdist workers, parallel CI jobs)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from exam_harness.core.models import Grade
from exam_harness.grading.cache import GradeCache, cache_key


def _writer(path: str, worker: int, batches: int) -> None:
    cache = GradeCache(path)
    for batch in range(batches):
        grades = {
            cache_key("f", {"worker": worker, "batch": batch, "i": i}): Grade(grade=(worker + i) % 6, grader="w")
            for i in range(50)
        }
        cache.put_many(grades)
        # Reads interleave with the other processes' writes.
        assert len(cache.get_many(grades)) == len(grades)
    cache.close()


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    made = GradeCache(path)
    made.put_rows([])  # create the file and schema once, as the first store of a session does
    made.close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), w, 10)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    cache = GradeCache(path)
    assert len(cache) == 4 * 10 * 50
    key = cache_key("f", {"worker": 3, "batch": 9, "i": 7})
    assert cache.get_many([key])[key].grade == (3 + 7) % 6
    cache.close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
