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
    """Too many connection failures in a row: the server is down, so no more requests are sent."""


@dataclass
class Breaker:
    """Counts connection failures with no answer in between, over every request of a batch; at ``limit``
    it raises :class:`ServerUnreachable` instead of letting each pending request retry to exhaustion."""

    limit: int  # 0: never
    where: str
    failures: int = 0

    def watch(
        self, classify: Callable[[BaseException], RetryDecision | None]
    ) -> Callable[[BaseException], RetryDecision | None]:
        def classify_and_count(exc: BaseException) -> RetryDecision | None:
            decision = classify(exc)
            if decision is not None and decision.description.startswith(CONNECTION_FAILURES):
                self.failures += 1
                if self.limit and self.failures >= self.limit:
                    raise ServerUnreachable(
                        f"{self.failures} connection failures in a row to {self.where} "
                        f"(last: {decision.description}); is the server up?"
                    ) from exc
            return decision

        return classify_and_count

    async def passed(self, call: Awaitable[T]) -> T:
        result = await call
        self.failures = 0
        return result


CONNECTION_FAILURES = ("connection error", "request timed out")
