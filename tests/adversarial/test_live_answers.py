"""Issue 31, findings 11 and 20, on declared live systems called without a pytest session:

* a ranking score of 10**400 (or NaN) is a failed call naming the passage, never an INTERNALERROR
  (float() raises OverflowError, which only TypeError/ValueError handlers missed);
* the early-stop note counts the calls really made: calls already running when the stop is decided
  finish and are counted, so "the other N were not called" adds up with the calls made.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest

import exam_harness
from exam_harness.core.models import Query
from exam_harness.features.live_systems import declare
from exam_harness.features.live_systems.calling import EARLY_STOP, Called, call_all

QUERIES = [Query(id=f"q{i}", text=f"query {i}") for i in range(21)]


@pytest.fixture(autouse=True)
def fresh_declarations() -> Iterator[None]:
    declare.clear()
    yield
    declare.clear()


def _call(queries: list[Query]) -> tuple[dict[str, Called], str | None]:
    got: dict[str, Called] = {}
    stopped = call_all(declare.declared()[0], queries, lambda c: got.__setitem__(c.query_id, c))
    return got, stopped


@pytest.mark.parametrize("score", [10**400, float("nan"), float("inf")], ids=["10**400", "nan", "inf"])
def test_an_absurd_ranking_score_fails_the_call_naming_the_passage(score: float) -> None:
    @exam_harness.system("huge-scores", kind="ranking")
    def huge(query: Query) -> list[object]:
        return [("d1", "a passage", score), ("d2", "another", 1.0)]

    got, stopped = _call(QUERIES[:2])
    assert stopped is None and set(got) == {"q0", "q1"}
    for called in got.values():
        assert called.value is None and called.error is not None
        assert "passage 0" in called.error and "expected a finite number" in called.error


def test_the_early_stop_note_counts_the_calls_made() -> None:
    made: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(6, timeout=5)

    @exam_harness.system("down", concurrency=6)
    def down(query: Query) -> str:
        with lock:
            made.append(query.id)
        if len(made) <= 6:
            gate.wait()  # six calls in flight together: one more than the early stop waits for
        time.sleep(0.01)
        raise ConnectionError("connection refused")

    got, stopped = _call(QUERIES)
    assert stopped is not None and f"failed on each of its first {EARLY_STOP} queries" in stopped
    found = re.search(r"so the other (\d+) queries were not called \((\d+) calls made", stopped)
    assert found, stopped
    assert int(found[2]) == len(made) == len(got) and int(found[1]) == len(QUERIES) - len(made)
    assert len(made) >= 6  # the race the note used to miscount
