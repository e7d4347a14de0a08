"""Calling systems once per query: every system at once, under one global concurrency budget, each
call within its deadline, interrupts that keep every finished answer.

One scheduler (the calling thread) launches calls while the budget and each system's ``concurrency``
allow, each free slot to the system with the most queries left per call in flight (so the systems
finish together), and a hung system holds only its own slots. Sync functions run on
daemon worker threads of their system; async functions on their system's own event loop, in a daemon
thread. The scheduler keeps every deadline itself: ``timeout`` is the deadline of the whole call,
retries and their backoff included, met whatever the call does (a sync call or an async one blocking
its loop cannot be killed: it is abandoned, and its late answer dropped). A failure is tried again
``retries`` times after ``backoff``, ``2 * backoff``, ... seconds while the deadline allows. What comes
back is checked here (:func:`normalise`): a wrong type fails that query, not retried. Each finished
query is handed to ``on_result`` in the calling thread as it completes.

Interrupts (SIGINT, and SIGTERM alike, when called from the main thread): the first stops launching at
once and says how many calls are in flight, which are awaited; a second abandons them. Either way the
finished answers were handed on, and :class:`CallsInterrupted` (a KeyboardInterrupt) is raised after.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import json
import math
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from exam_harness.core.models import Query
from exam_harness.features.live_systems.declare import Answer, Passage, System
from exam_harness.features.live_systems.reads import Opened, install, watched, watched_async
from exam_harness.features.live_systems.secrets import scrub
from exam_harness.io import limits
from exam_harness.io.generated import segment_id

EARLY_STOP = 5  # a system failing on each of its first this many queries is not called further
GLOBAL_CONCURRENCY = 64  # calls in flight at once over all the systems called together
TICK = 0.2  # the longest the scheduler sleeps without looking at deadlines and signals

Ranked = tuple[str, str, float | None]  # (passage id, text, score)


@dataclass(frozen=True)
class Called:
    """One query's call: its answer (an :class:`Answer`, or ranked passages) or the error that ended it."""

    query_id: str
    value: Answer | list[Ranked] | None
    error: str | None
    latency: float
    attempts: int
    reads: frozenset[str] = frozenset()  # the files a Python system's call read and did not write (reads.py)
    writes: frozenset[str] = frozenset()  # the files it wrote (its state: never an input, whichever call read it)


class CallsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while calling systems: raised once the finished answers were handed on."""


def message(exc: BaseException) -> str:
    text = str(exc).strip()
    return scrub(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


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
    """Call one system once per query (see :func:`call_many`); the early-stop message or None."""
    return call_many([(system, queries)], lambda _system, called: on_result(called)).get(system.name)


def call_many(work: Sequence[tuple[System, Sequence[Query]]], on_result: Callable[[System, Called], None], *,
              budget: int = GLOBAL_CONCURRENCY, say: Callable[[str], None] | None = None) -> dict[str, str]:
    """Call every system for its queries, all at once; ``on_result(system, called)`` per finished query.

    Returns the early-stop message of each system that failed on each of its first :data:`EARLY_STOP`
    queries (the rest were not called). Raises :class:`CallsInterrupted` after an interrupt.
    """
    lanes = [_Lane(system, list(queries)) for system, queries in work if queries]
    if not lanes:
        return {}
    if any(lane.system.form == "python" for lane in lanes):
        install()  # what a Python system's calls open is noted (reads.py)
    scheduler = _Scheduler(lanes, on_result, max(1, budget), say or _to_stderr)
    try:
        with scheduler.signals():
            scheduler.run()
    finally:
        for lane in lanes:
            lane.close()
    if scheduler.interrupts:
        raise CallsInterrupted(scheduler.interrupted_message())
    return {lane.system.name: lane.stop_message for lane in lanes if lane.stop_message}


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class _Flight:
    lane: _Lane
    query: Query
    start: float
    deadline: float | None
    attempts: int = 0
    token: int = 0  # the running attempt's, 0 while waiting to retry
    handle: Future[Any] | None = None
    opened: Opened = field(default_factory=Opened)  # what its attempts opened (a Python system's)


@dataclass
class _Lane:
    """One system: its queries still to call, its calls in flight, how it runs them."""

    system: System
    todo: list[Query]
    in_flight: int = 0
    finished: int = 0
    failed: int = 0
    stop_error: str | None = None  # the last error when the early stop was decided
    inbox: queue.SimpleQueue[tuple[int, Query, Opened | None] | None] = field(default_factory=queue.SimpleQueue)
    threads: int = 0
    busy: int = 0  # worker threads running a call (abandoned ones included)
    abandoned: int = 0  # calls left behind at their deadline
    loop: asyncio.AbstractEventLoop | None = None
    loop_thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.pending: deque[Query] = deque(self.todo)

    @property
    def can_launch(self) -> bool:
        return bool(self.pending) and self.stop_error is None and self.in_flight < self.system.concurrency

    def seen(self, called: Called) -> None:
        self.finished += 1
        self.failed += called.error is not None
        if self.finished == EARLY_STOP and self.failed == EARLY_STOP and self.pending:
            self.stop_error = called.error

    @property
    def stop_message(self) -> str | None:
        """The early stop, said once every call has come back: calls already running at the stop finish and
        are counted (issue 31, finding 20: counting at the stop said "the other 15" when 6 calls were made)."""
        if self.stop_error is None:
            return None
        left = len(self.pending)
        return (f"system {self.system.name!r} failed on each of its first {EARLY_STOP} queries, so "
                f"{'the other ' + str(left) if left else 'no other'} {'query was' if left == 1 else 'queries were'} "
                f"not called ({self.finished} calls made; last error: {self.stop_error})")

    def start(self, token: int, query: Query, results: queue.SimpleQueue[tuple[int, bool, Any]],
              opened: Opened) -> Future[Any] | None:
        watch = opened if self.system.form == "python" else None
        if self.system.is_async:
            loop = self._loop()
            call = watched_async(functools.partial(self.system.call, query), watch) if watch is not None \
                else self.system.call(query)
            future = asyncio.run_coroutine_threadsafe(call, loop)
            future.add_done_callback(lambda f: results.put(_outcome(token, f)))
            return future
        self.busy += 1
        if self.busy > self.threads:
            self.threads += 1
            threading.Thread(target=_work, args=(self.system, self.inbox, results), daemon=True,
                             name=f"exam-system-{self.system.name}").start()
        self.inbox.put((token, query, watch))
        return None

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            self.loop_thread = threading.Thread(target=_run_loop, args=(self.loop,), daemon=True,
                                                name=f"exam-system-{self.system.name}")
            self.loop_thread.start()
        return self.loop

    def close(self) -> None:
        for _ in range(self.threads):
            self.inbox.put(None)  # idle workers end; a worker still in an abandoned call ends after it
        if self.loop is not None and self.loop_thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            # a loop blocked by its system (a call abandoned at its deadline may be why) ends on its own
            self.loop_thread.join(timeout=0.2 if self.abandoned else 2)
        self._close_connections()

    def _close_connections(self) -> None:
        close = getattr(self.system.call, "close", None)
        if callable(close):
            close()  # an HTTP system's kept-alive connections


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    """An async system's loop, until stopped; then its unfinished calls are cancelled and it is closed."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _outcome(token: int, future: Future[Any]) -> tuple[int, bool, Any]:
    if future.cancelled():
        return token, False, TimeoutError("cancelled")
    exc = future.exception()
    return (token, False, exc) if exc is not None else (token, True, future.result())


def _work(system: System, inbox: queue.SimpleQueue[tuple[int, Query, Opened | None] | None],
          results: queue.SimpleQueue[tuple[int, bool, Any]]) -> None:
    while (job := inbox.get()) is not None:
        token, query, opened = job
        try:
            value = system.call(query) if opened is None else watched(system.call, query, opened)
        except BaseException as exc:  # handed to the scheduler, which decides
            results.put((token, False, exc))
        else:
            results.put((token, True, value))


class _Scheduler:
    def __init__(self, lanes: list[_Lane], on_result: Callable[[System, Called], None], budget: int,
                 say: Callable[[str], None]) -> None:
        self.lanes = lanes
        self.on_result = on_result
        self.budget = budget
        self.say = say
        self.results: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
        self.running: dict[int, _Flight] = {}  # token -> flight
        self.waiting: list[tuple[float, int, _Flight]] = []  # (retry at, seq, flight)
        self.deadlines: list[tuple[float, int]] = []  # (deadline, token) of running attempts; stale ones skipped
        self.flights = 0
        self.tokens = itertools.count(1)
        self.interrupts = 0
        self.announced = 0
        self.abandoned = 0
        self.late: dict[int, _Lane] = {}  # token -> lane: abandoned sync calls whose worker is still busy

    # -- signals ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

        def handler(_signum: int, _frame: FrameType | None) -> None:
            self.interrupts += 1
            self.results.put((0, False, None))  # wakes the scheduler now, not at its next tick (no call has token 0)

        for sig in previous:
            signal.signal(sig, handler)
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def interrupted_message(self) -> str:
        done = sum(lane.finished for lane in self.lanes)
        left = sum(len(lane.pending) for lane in self.lanes) + self.abandoned
        return (f"interrupted while calling systems: {done} finished answer{'s' if done != 1 else ''} kept, "
                f"{left} quer{'y' if left == 1 else 'ies'} not answered (the next session calls only those)")

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> None:
        lanes = self.lanes
        while True:
            if self.interrupts and self.announced < min(self.interrupts, 2):
                self.announced = min(self.interrupts, 2)
                if self.announced >= 2 or not self.flights:
                    self.abandoned = self.flights
                    for flight in self.running.values():
                        flight.lane.abandoned += 1
                        if flight.handle is not None:
                            flight.handle.cancel()
                    if self.flights:
                        self.say(f"exam-harness: abandoning {self.flights} call{'s' if self.flights != 1 else ''} "
                                 "in flight")
                    return
                self.say(f"exam-harness: interrupted; waiting for {self.flights} call"
                         f"{'s' if self.flights != 1 else ''} in flight (their answers are kept); press Ctrl-C "
                         "again to abandon them")
            if not self.interrupts:
                self._launch()
            if not self.flights and (self.interrupts or not any(lane.can_launch for lane in lanes)):
                return
            now = time.monotonic()
            while self.deadlines and self.deadlines[0][1] not in self.running:
                heapq.heappop(self.deadlines)  # that attempt ended
            wake = min([TICK, *(at - now for at, _token in self.deadlines[:1]),
                        *(at - now for at, _seq, _f in self.waiting[:1])])
            try:
                token, ok, payload = self.results.get(timeout=max(wake, 0.0))
            except queue.Empty:
                pass
            else:
                self._arrived(token, ok, payload)
                while True:  # take every result already there before looking at the clock
                    try:
                        token, ok, payload = self.results.get_nowait()
                    except queue.Empty:
                        break
                    self._arrived(token, ok, payload)
            self._expire(time.monotonic())

    def _launch(self) -> None:
        while self.flights < self.budget:
            ready = [lane for lane in self.lanes if lane.can_launch]
            if not ready:
                return
            # the slot goes to the system with the most queries left per call in flight, so systems called
            # together finish together: one that got every freed slot first would finish early and leave
            # the last ones alone, each held to its own concurrency while the budget stood half unused
            lane = max(ready, key=lambda lane: len(lane.pending) / (lane.in_flight + 1))
            query = lane.pending.popleft()
            now = time.monotonic()
            timeout = lane.system.timeout
            flight = _Flight(lane, query, now, None if timeout is None else now + timeout)
            lane.in_flight += 1
            self.flights += 1
            self._attempt(flight)

    def _attempt(self, flight: _Flight) -> None:
        flight.attempts += 1
        flight.token = next(self.tokens)
        self.running[flight.token] = flight
        if flight.deadline is not None:
            heapq.heappush(self.deadlines, (flight.deadline, flight.token))
        try:
            flight.handle = flight.lane.start(flight.token, flight.query, self.results, flight.opened)
        except Exception as exc:  # e.g. an "async" callable that returns no awaitable
            self.results.put((flight.token, False, exc))

    def _arrived(self, token: int, ok: bool, payload: Any) -> None:
        flight = self.running.pop(token, None)
        if flight is None:  # an abandoned call's late answer: dropped, its worker free again
            late = self.late.pop(token, None)
            if late is not None:
                late.busy -= 1
            return
        lane = flight.lane
        if not lane.system.is_async:
            lane.busy -= 1
        now = time.monotonic()
        if ok:
            try:
                value = normalise(lane.system, payload)
            except (TypeError, ValueError) as exc:
                self._finish(flight, None, message(exc), now)
            else:
                self._finish(flight, value, None, now)
            return
        if isinstance(payload, (KeyboardInterrupt, SystemExit)):  # raised by the system: an interrupt too
            lane.in_flight -= 1
            self.flights -= 1
            lane.pending.appendleft(flight.query)  # not answered
            self.interrupts += 1
            return
        error = payload if isinstance(payload, BaseException) else RuntimeError(str(payload))
        retry_at = now + lane.system.backoff * 2 ** (flight.attempts - 1)
        if (flight.attempts <= lane.system.retries and not self.interrupts
                and (flight.deadline is None or retry_at < flight.deadline)):
            flight.token = 0
            heapq.heappush(self.waiting, (retry_at, next(self.tokens), flight))
            return
        self._finish(flight, None, message(error), now)

    def _expire(self, now: float) -> None:
        while self.deadlines and self.deadlines[0][0] <= now:
            _deadline, token = heapq.heappop(self.deadlines)
            flight = self.running.pop(token, None)
            if flight is not None:
                if flight.handle is not None:
                    flight.handle.cancel()
                flight.lane.abandoned += 1
                if not flight.lane.system.is_async:
                    self.late[token] = flight.lane
                timeout = flight.lane.system.timeout
                tries = f" ({flight.attempts} attempts)" if flight.attempts > 1 else ""
                self._finish(flight, None, f"TimeoutError: no answer within {timeout:g} s{tries}", now)
        while self.waiting and self.waiting[0][0] <= now:
            _at, _seq, flight = heapq.heappop(self.waiting)
            if self.interrupts:
                self._finish(flight, None, "interrupted before its retry", now)
            else:
                self._attempt(flight)

    def _finish(self, flight: _Flight, value: Answer | list[Ranked] | None, error: str | None, now: float) -> None:
        lane = flight.lane
        lane.in_flight -= 1
        self.flights -= 1
        called = Called(flight.query.id, value, error, now - flight.start, flight.attempts, flight.opened.inputs(),
                        frozenset(flight.opened.written))
        lane.seen(called)
        self.on_result(lane.system, called)
