"""Pacing of requests to a rate-limited server: ``rpm`` / ``tpm`` token buckets and a concurrency that adapts.

* **Rates.** With ``rpm`` (requests per minute) each request takes one token from a bucket refilled at
  ``rpm / 60`` per second that holds one request: requests start evenly spaced rather than in a burst a
  provider's window would refuse. With ``tpm`` (tokens per minute) a request takes its estimated prompt
  plus completion tokens from a second bucket refilled at ``tpm / 60`` per second (holding one
  second's worth, or one request's if larger). Both aim at :data:`HEADROOM` of the limit: a server that
  counts in a sliding window refuses the request that lands on its edge, and a little below the limit
  costs little and avoids those 429s.
* **Concurrency** adapts by additive increase, multiplicative decrease (AIMD): each answered request
  raises the limit by ``1 / limit`` (one more slot per round of answers), each 429 or 503 halves it,
  never below 1 nor above ``concurrency``. A ``Retry-After`` holds every new request until it has passed,
  for at most ``hold_max`` seconds (the retrier's ``retry_after_max``, the longest it honours one): a
  Retry-After the retrier refuses (an hour, a date in 2099, ``inf``) must not hold every other request
  for that long.

One :class:`Pacer` serves one event loop (a backend's :meth:`generate`); the clock and the sleep are
injectable so that tests need no real time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

HEADROOM = 0.95  # the share of a given rpm / tpm limit aimed at
HOLD_MAX = 120.0  # seconds a Retry-After holds new requests at most, unless told (RetryPolicy.retry_after_max)


@dataclass
class Bucket:
    """A token bucket of ``rate`` tokens a second holding at most ``capacity``, starting full; kept as
    the time its level would be back to full (the generic cell rate algorithm), which neither drifts
    nor rounds a wait to nothing."""

    rate: float
    capacity: float
    full_at: float = -math.inf

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` tokens are there (0: take them now with :meth:`take`)."""
        amount = min(amount, self.capacity)  # a request larger than the bucket waits for a full one
        wait = max(self.full_at, now) + (amount - self.capacity) / self.rate - now
        return wait if wait > 1e-9 else 0.0

    def take(self, amount: float, now: float) -> None:
        self.full_at = max(self.full_at, now) + min(amount, self.capacity) / self.rate


class Pacer:
    """Starts requests within ``rpm``, ``tpm`` and an adaptive concurrency of at most ``concurrency``."""

    def __init__(self, concurrency: int, *, rpm: float | None = None, tpm: float | None = None,
                 adaptive: bool = True, hold_max: float = HOLD_MAX, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if not (math.isfinite(hold_max) and hold_max >= 0):
            raise ValueError(f"hold_max must be a finite number of seconds >= 0, got {hold_max!r}")
        self.hold_max = hold_max
        self.ceiling = max(1, int(concurrency))
        self.limit = float(self.ceiling)
        self.adaptive = adaptive
        self.requests = Bucket(rpm * HEADROOM / 60.0, 1.0) if rpm else None
        self.tokens = Bucket(tpm * HEADROOM / 60.0, tpm * HEADROOM / 60.0) if tpm else None
        self.rpm, self.tpm = rpm, tpm
        self.clock, self.sleep = clock, sleep
        self.in_flight = 0
        self.hold_until = 0.0
        self.started: list[float] = []  # start times of the last minute, for the shown rate
        self.throttled = 0  # 429 / 503 answers seen
        self._changed = asyncio.Condition()

    def bind(self) -> None:
        """Ready for a new event loop (each :meth:`generate` runs its own): what is learnt (the limit, the
        buckets, a Retry-After) is kept, nothing is in flight."""
        self._changed = asyncio.Condition()
        self.in_flight = 0

    async def start(self, tokens: float = 0.0) -> None:
        """Wait until a request of ``tokens`` estimated tokens may start; it then counts as in flight."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < max(1, int(self.limit)))
            self.in_flight += 1
        try:
            while True:
                now = self.clock()
                wait = max(self.hold_until - now,
                           self.requests.wait_for(1.0, now) if self.requests else 0.0,
                           self.tokens.wait_for(tokens, now) if self.tokens else 0.0)
                if wait <= 0:
                    break
                await self.sleep(wait)
        except BaseException:
            await self.finish(None)
            raise
        now = self.clock()
        if self.requests:
            self.requests.take(1.0, now)
        if self.tokens:
            self.tokens.take(tokens, now)
        self.started.append(now)

    async def finish(self, status: int | None, retry_after: float | None = None, *, answered: bool = False) -> None:
        """A request started by :meth:`start` ended: ``answered``, or refused with ``status``."""
        async with self._changed:
            self.in_flight -= 1
            if status in (429, 503):
                self.throttled += 1
                if self.adaptive:
                    self.limit = max(1.0, self.limit / 2)
                if retry_after is not None and retry_after == retry_after:  # NaN holds nothing
                    self.hold_until = max(self.hold_until, self.clock() + min(max(retry_after, 0.0), self.hold_max))
            elif answered and self.adaptive:
                self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            self._changed.notify_all()

    def rate(self) -> float:
        """Requests started per minute over the last minute: the gaps between its starts, per minute."""
        now = self.clock()
        self.started = [t for t in self.started if t > now - 60.0]
        if len(self.started) < 2:
            return 0.0
        return (len(self.started) - 1) * 60.0 / max(self.started[-1] - self.started[0], 1e-9)

    def status(self) -> str:
        """What the progress line shows: the current rate against its limit, and the concurrency."""
        limit = f"/{self.rpm:g}" if self.rpm else ""
        return f"{self.rate():.0f}{limit} req/min, {int(self.limit)}/{self.ceiling} in flight"


async def paced(pacer: Pacer, tokens: float, call: Callable[[], Awaitable[T]],
                throttle_of: Callable[[BaseException], tuple[int | None, float | None]]) -> T:
    """``call()`` started by ``pacer``; a refusal (``throttle_of`` gives its status and Retry-After) told to it."""
    await pacer.start(tokens)
    try:
        result = await call()
    except BaseException as exc:
        status, retry_after = throttle_of(exc) if isinstance(exc, Exception) else (None, None)
        await pacer.finish(status, retry_after)
        raise
    await pacer.finish(None, answered=True)
    return result
