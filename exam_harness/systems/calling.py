"""Calling a system once per query: bounded concurrency, a per-call deadline, retries with backoff.

Sync functions run on a pool of ``concurrency`` threads; async functions on one event loop with at
most ``concurrency`` calls in flight. A call past its deadline fails with a TimeoutError (a sync call
cannot be killed: its thread is abandoned, as a daemon, and finishes on its own). A failure is tried
again ``retries`` times after ``backoff``, ``2 * backoff``, ... seconds. What comes back is checked here
(:func:`normalise`): a wrong type is a failure of that query, not retried. Each finished query is
handed to ``on_result`` in the calling thread as it completes, so an interrupted session keeps them.
"""

from __future__ import annotations

import asyncio
import json
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from exam_harness.io import limits
from exam_harness.io.generated import segment_id
from exam_harness.models import Query
from exam_harness.systems.declare import Answer, Passage, System

EARLY_STOP = 5  # a system failing on each of its first this many queries is not called further

Ranked = tuple[str, str, float | None]  # (passage id, text, score)


@dataclass(frozen=True)
class Called:
    """One query's call: its answer (an :class:`Answer`, or ranked passages) or the error that ended it."""

    query_id: str
    value: Answer | list[Ranked] | None
    error: str | None
    latency: float
    attempts: int


def message(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def normalise(system: System, raw: Any) -> Answer | list[Ranked]:
    """The system's return value as an answer or a ranking; TypeError/ValueError saying what was expected."""
    if system.kind == "answer":
        if isinstance(raw, Answer):
            return raw
        if isinstance(raw, str):
            return Answer(raw)
        raise TypeError(f"returned a {type(raw).__name__}; an answer system returns a str or an exam_harness.Answer")
    if isinstance(raw, str) and system.form == "command":
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ValueError(f"the command's output is not a JSON array of passages: {raw[:80]!r}") from None
    if isinstance(raw, (str, bytes, dict)) or not isinstance(raw, Iterable):
        raise TypeError(f"returned a {type(raw).__name__}; a ranking system returns a list of passages "
                        "(texts, (id, text) pairs or exam_harness.Passage) in rank order")
    ranked: list[Ranked] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        pid, text, score = _passage(item, i)
        if len(text) > limits.MAX_PASSAGE_CHARS:
            raise ValueError(f"passage {i} is longer than {limits.MAX_PASSAGE_CHARS} characters")
        pid = pid if pid is not None else segment_id(text)
        if pid not in seen:  # a passage ranked twice counts at its first rank
            seen.add(pid)
            ranked.append((pid, text, score))
    if len({score is None for _pid, _text, score in ranked}) > 1:
        raise ValueError("some passages have a score and some do not; give every passage a score or none")
    return ranked


def _passage(item: Any, i: int) -> tuple[str | None, str, float | None]:
    pid: Any
    text: Any
    score: Any = None
    if isinstance(item, str):
        pid, text = None, item
    elif isinstance(item, Passage):
        pid, text, score = item.id, item.text, item.score
    elif isinstance(item, dict):
        pid = item.get("id", item.get("docid"))
        text, score = item.get("text", item.get("contents")), item.get("score")
    elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
        pid, text = item[0], item[1]
        score = item[2] if len(item) == 3 else None
    else:
        raise TypeError(f"passage {i} is a {type(item).__name__}; expected a text, an (id, text) pair or a Passage")
    if not isinstance(text, str):
        raise TypeError(f"passage {i} has no text (got {type(text).__name__})")
    if pid is not None and (not isinstance(pid, str) or not pid or any(ch.isspace() for ch in pid)):
        raise ValueError(f"passage {i} has id {pid!r}; ids are strings without whitespace (or None)")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise TypeError(f"passage {i} has score {score!r}; expected a number")
    return pid, text, None if score is None else _finite_score(score, i)


def _finite_score(score: float, i: int) -> float:
    """A passage's score as a finite float (10**400 overflows a float: a bad answer, not a crash)."""
    try:
        value = float(score)
    except OverflowError:
        raise ValueError(f"passage {i} has a score too large for a float; expected a finite number") from None
    if not math.isfinite(value):
        raise ValueError(f"passage {i} has score {value!r}; expected a finite number")
    return value


def call_all(system: System, queries: Sequence[Query], on_result: Callable[[Called], None]) -> str | None:
    """Call ``system`` once per query, handing each :class:`Called` to ``on_result`` as it finishes.

    Returns None, or the message of an early stop (the system failed on each of its first
    :data:`EARLY_STOP` queries, so the rest were not called).
    """
    if not queries:
        return None
    stopper = _EarlyStop(system, len(queries))
    try:
        if system.is_async:
            asyncio.run(_call_async(system, queries, on_result, stopper))
        else:
            _call_threads(system, queries, on_result, stopper)
    finally:
        close = getattr(system.call, "close", None)
        if callable(close):
            close()  # an HTTP system's kept-alive connections
    return stopper.message


class _EarlyStop:
    def __init__(self, system: System, total: int) -> None:
        self.system = system
        self.total = total
        self.finished = 0
        self.failed = 0
        self.error: str | None = None  # the last error when the early stop was decided
        self.event = threading.Event()

    def seen(self, called: Called) -> None:
        self.finished += 1
        self.failed += called.error is not None
        if self.finished == EARLY_STOP and self.failed == EARLY_STOP and self.total > EARLY_STOP:
            self.error = called.error
            self.event.set()

    @property
    def message(self) -> str | None:
        """Said once every call has come back: calls already running at the stop finish and are counted
        (issue 31, finding 20: counting at the stop said "the other 15" when 6 calls were made)."""
        if self.error is None:
            return None
        left = self.total - self.finished
        return (f"system {self.system.name!r} failed on each of its first {EARLY_STOP} queries, so "
                f"{'the other ' + str(left) if left else 'no other'} {'query was' if left == 1 else 'queries were'} "
                f"not called ({self.finished} calls made; last error: {self.error})")


def _deadline_call(system: System, query: Query) -> Any:
    if system.timeout is None or system.own_deadline:
        return system.call(query)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = system.call(query)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"exam-system-{system.name}", daemon=True)
    worker.start()
    worker.join(system.timeout)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {system.timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _one_sync(system: System, query: Query, stop: threading.Event) -> Called | None:
    if stop.is_set():
        return None
    start = time.perf_counter()
    for attempt in range(system.retries + 1):
        try:
            raw = _deadline_call(system, query)
        except Exception as exc:
            if attempt < system.retries and not stop.wait(system.backoff * 2**attempt):
                continue
            return Called(query.id, None, message(exc), time.perf_counter() - start, attempt + 1)
        return _checked(system, query, raw, start, attempt + 1)
    raise AssertionError("unreachable")  # pragma: no cover


def _checked(system: System, query: Query, raw: Any, start: float, attempts: int) -> Called:
    latency = time.perf_counter() - start
    try:
        return Called(query.id, normalise(system, raw), None, latency, attempts)
    except (TypeError, ValueError) as exc:
        return Called(query.id, None, message(exc), latency, attempts)


def _call_threads(system: System, queries: Sequence[Query], on_result: Callable[[Called], None],
                  stopper: _EarlyStop) -> None:
    pool = ThreadPoolExecutor(max_workers=min(system.concurrency, len(queries)),
                              thread_name_prefix=f"exam-system-{system.name}")
    finished: queue.SimpleQueue[Future[Called | None]] = queue.SimpleQueue()
    remaining = 0
    try:
        for query in queries:
            pool.submit(_one_sync, system, query, stopper.event).add_done_callback(finished.put)
            remaining += 1
        while remaining:
            try:
                future = finished.get(timeout=0.5)  # a timeout lets Ctrl-C reach this thread between waits
            except queue.Empty:
                continue
            remaining -= 1
            called = future.result()
            if called is not None:
                on_result(called)
                stopper.seen(called)
    finally:
        stopper.event.set()  # on an interrupt: queued calls start no more
        pool.shutdown(wait=not remaining, cancel_futures=True)


async def _call_async(system: System, queries: Sequence[Query], on_result: Callable[[Called], None],
                      stopper: _EarlyStop) -> None:
    # ``concurrency`` workers drawing from one iterator: a freed slot starts the next call at once
    # (a semaphore's hand-over waits a loop turn per call, about 15% slower at 32 x 50 ms)
    todo = iter(queries)

    async def one(query: Query) -> Called:
        start = time.perf_counter()
        for attempt in range(system.retries + 1):
            try:
                raw = await asyncio.wait_for(system.call(query), system.timeout)
            except Exception as exc:
                if isinstance(exc, asyncio.TimeoutError) and not str(exc):
                    exc = TimeoutError(f"no answer within {system.timeout:g} s")
                if attempt < system.retries and not stopper.event.is_set():
                    await asyncio.sleep(system.backoff * 2**attempt)
                    continue
                return Called(query.id, None, message(exc), time.perf_counter() - start, attempt + 1)
            return _checked(system, query, raw, start, attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover

    async def worker() -> None:
        for query in todo:
            if stopper.event.is_set():
                return
            called = await one(query)
            on_result(called)
            stopper.seen(called)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(system.concurrency, len(queries)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
