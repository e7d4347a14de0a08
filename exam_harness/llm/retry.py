"""A bounded retry policy: exponential backoff with full jitter, honouring Retry-After.

Kept free of any client library so that it can be tested alone and reused by other remote
backends. The caller classifies each exception (retry or not, server-requested delay, HTTP
status); this module only decides how long to wait and when to stop.

Delay before retry ``n`` (0-based) is ``uniform(0, min(backoff_max, backoff_base * 2**n))``
("full jitter", which spreads the retries of many concurrent callers). When the server sent a
``Retry-After``, the delay is at least that long, capped at ``retry_after_max`` so that one
misbehaving server cannot stall a session forever; a ``Retry-After`` beyond ``retry_after_limit`` is a
failure said at once (waiting minutes for one pair is not worth it). A wait longer than ``say_after``
seconds is said (``notify``) with its reason.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryDecision:
    """How the caller judged one failed attempt."""

    retry: bool
    description: str
    status: int | None = None
    retry_after: float | None = None
    # no connection, or one closed with no answer: evidence that the server is down (Breaker counts it)
    unreachable: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    retry_after_limit: float = math.inf
    say_after: float = 5.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if min(self.backoff_base, self.backoff_max, self.retry_after_max, self.retry_after_limit) < 0:
            raise ValueError("backoff_base, backoff_max, retry_after_max and retry_after_limit must be >= 0")

    def delay(self, retry_index: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry_index`` (0 = the first retry)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2.0**retry_index))
        jittered = (rng or random).uniform(0.0, ceiling)
        if retry_after is not None:
            return max(jittered, min(retry_after, self.retry_after_max))
        return jittered


class RetryExhausted(Exception):
    """The last attempt failed (or a failure was not worth retrying)."""

    def __init__(self, attempts: int, last: RetryDecision, cause: BaseException) -> None:
        self.attempts = attempts
        self.last = last
        self.cause = cause
        status = f"HTTP {last.status}: " if last.status is not None else ""
        why = "not retryable" if not last.retry else "retries exhausted"
        super().__init__(f"{status}{last.description} ({why} after {attempts} attempt{'s' * (attempts != 1)})")


@dataclass
class RetryCounter:
    """Attempts and retries across calls (one event loop, so no locking needed)."""

    attempts: int = 0
    retries: int = 0


@dataclass
class AsyncRetrier(Generic[T]):
    policy: RetryPolicy
    # Returns None for exceptions it does not know: those propagate (bugs must not become retries).
    classify: Callable[[BaseException], RetryDecision | None]
    counter: RetryCounter = field(default_factory=RetryCounter)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)
    # told of every wait longer than policy.say_after, with its reason
    notify: Callable[[str], None] | None = None

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Await ``attempt()`` until it succeeds; raise :class:`RetryExhausted` when it finally fails.

        Only ``Exception`` subclasses are classified: cancellation and KeyboardInterrupt propagate.
        """
        retries_done = 0
        while True:
            self.counter.attempts += 1
            try:
                return await attempt()
            except Exception as exc:
                decision = self.classify(exc)
                if decision is None:
                    raise
                if not decision.retry or retries_done >= self.policy.max_retries:
                    raise RetryExhausted(retries_done + 1, decision, exc) from exc
                asked = decision.retry_after
                limit = self.policy.retry_after_limit
                if asked is not None and asked > limit:
                    refused = RetryDecision(False, f"{decision.description}; the server asked to wait {asked:g} s "
                                            f"(Retry-After), more than retry_after_limit={limit:g} s",
                                            decision.status, asked)
                    raise RetryExhausted(retries_done + 1, refused, exc) from exc
                wait = self.policy.delay(retries_done, asked, self.rng)
                retries_done += 1
                self.counter.retries += 1
                if self.notify is not None and wait > self.policy.say_after:
                    status = f"HTTP {decision.status}: " if decision.status is not None else ""
                    why = " as the server asked (Retry-After)" if asked is not None and wait >= min(
                        asked, self.policy.retry_after_max) else ""
                    self.notify(f"waiting {wait:.1f} s{why} before retry {retries_done} of {self.policy.max_retries}: "
                                f"{status}{decision.description}")
                await self.sleep(wait)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds (fractions accepted) or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class ServerUnreachable(Exception):
    """The server answers nothing: no more requests are sent (:class:`Breaker`)."""


# a deadline firing later than this (seconds plus a share of the timeout) is a starved event loop, not a
# slow server: a loaded machine delays a timer by milliseconds, a starved loop by a good part of the wait
STARVED_AFTER = 0.1
STARVED_SHARE = 0.25


class TimedOut(Exception):
    """An attempt that got no whole answer within its deadline, with what the batch saw meanwhile: the
    answers other requests got while it waited (a server answering others is up: this one is slow, or the
    client sends more than it can take) and how late the deadline fired (an event loop that could not run
    on time: this process is starved of CPU, or runs too much at once)."""

    def __init__(self, seconds: float, *, started: float, waited: float, answered_meanwhile: int) -> None:
        self.seconds, self.started, self.waited, self.answered_meanwhile = seconds, started, waited, answered_meanwhile
        self.late = max(0.0, waited - seconds)
        super().__init__(self.describe())

    @property
    def starved(self) -> bool:
        """The deadline fired well after it was due: the event loop could not run (no CPU for this process,
        or too much work in it), so the wait says nothing about the server."""
        return self.late > STARVED_AFTER + STARVED_SHARE * self.seconds

    def describe(self) -> str:
        what = f"request timed out (no whole answer within {self.seconds:g} s)"
        if self.answered_meanwhile:
            return (f"{what} while the server answered {self.answered_meanwhile} other request"
                    f"{'s' * (self.answered_meanwhile != 1)}: it is slow on this one or gets more at once than it "
                    "answers in time (lower concurrency or raise timeout)")
        if self.starved:
            return (f"{what}; the timeout fired {self.late:.1f} s late: this client's event loop could not run "
                    "on time (the machine is overloaded, or the client runs too much at once)")
        return what


@dataclass
class Breaker:
    """Stops a batch when its server answers nothing, instead of letting each pending request retry to
    exhaustion: at ``limit`` failures in a row with no answer in between, :class:`ServerUnreachable`.

    What counts: a failure the caller classified ``unreachable`` (no connection, or one closed with no
    answer), each one; and a :class:`TimedOut` attempt during which the server answered nothing, once per
    wave: timeouts of requests that were already waiting when the last counted one fired are the same
    silence, not more evidence (requests sent together time out together). Never counted: a timeout while
    the server answered others (a live server's slow answers are failed pairs, not a dead server) and one
    whose deadline fired late (this process was starved: the wait says nothing about the server)."""

    limit: int  # 0: never
    where: str
    failures: int = 0
    answered: int = 0  # answers so far (TimedOut.answered_meanwhile is counted from it)
    clock: Callable[[], float] = time.monotonic
    tripped: str | None = None  # why the batch stopped, once it has
    _silent_since: float = -math.inf  # when the last counted timeout fired

    def watch(
        self, classify: Callable[[BaseException], RetryDecision | None]
    ) -> Callable[[BaseException], RetryDecision | None]:
        def classify_and_count(exc: BaseException) -> RetryDecision | None:
            decision = classify(exc)
            if decision is None:
                return None
            if self.tripped is None and self._counts(exc, decision):
                self.failures += 1
                if self.limit and self.failures >= self.limit:
                    self.tripped = self._verdict(exc, decision)
            if self.tripped is not None and decision.retry:  # stopped: no request in flight tries again
                raise ServerUnreachable(self.tripped) from exc
            return decision

        return classify_and_count

    def _counts(self, exc: BaseException, decision: RetryDecision) -> bool:
        if not isinstance(exc, TimedOut):
            return decision.unreachable
        if exc.answered_meanwhile or exc.starved or exc.started < self._silent_since:
            return False
        self._silent_since = self.clock()
        return True

    def _verdict(self, exc: BaseException, decision: RetryDecision) -> str:
        if isinstance(exc, TimedOut):
            return (f"{self.failures} waves of requests in a row timed out with no answer from {self.where} "
                    f"(each waited {exc.seconds:g} s; last: {decision.description}); is the server up?")
        return (f"{self.failures} connection failures in a row to {self.where} (last: {decision.description}); "
                "is the server up?")

    async def passed(self, call: Awaitable[T], seconds: float) -> T:
        """``call`` within ``seconds`` (its deadline: :class:`TimedOut` after it); an answer restarts the count."""
        started, answered = self.clock(), self.answered
        try:
            async with asyncio.timeout(seconds):
                result = await call
        except TimeoutError as exc:
            raise TimedOut(seconds, started=started, waited=self.clock() - started,
                           answered_meanwhile=self.answered - answered) from exc
        self.failures = 0
        self.answered += 1
        return result
