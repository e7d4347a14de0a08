"""Pacing against a rate-limited server: the ``rpm`` grader option vs the fixed-concurrency grader.

    .venv/bin/python benchmarks/rate_limits.py                 # about a minute
    .venv/bin/python benchmarks/rate_limits.py --seconds 30

A local fake OpenAI-compatible server (tests/fake_openai_server.py) enforces 600 requests per minute in
a sliding window and answers a request over the limit with 429 and a ``Retry-After`` of the time until
the window has room again, as providers do. To keep the benchmark short the window is scaled down
from 60 s to 6 s with the same rate: at most 60 requests in any 6 s (10 requests/s = 600/min); the
grader is told ``rpm=600``, which is the same rate.

Both graders send the same prompts through :class:`~exam_harness.llm.openai.OpenAIBackend` (default
``concurrency=8``) for ``--seconds`` each, in chunks of 256 prompts (the grading pass's default):

(a) fixed concurrency, as before pacing (``rpm`` unset, ``adaptive_concurrency=false``): backs off only
    after 429s;
(b) paced: ``rpm=600`` (a token bucket at 95% of it) with the adaptive concurrency.

Prints for each: requests answered per minute sustained, from the first answer to the last as the server saw them, and its share of the 600 limit), calls answered 429
(and their share of all calls), and ends with ``paced: <pct>% of the limit, <pct>% of calls 429``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exam_harness.llm.backend import PromptParts
from exam_harness.llm.openai import OpenAIBackend
from tests.fake_openai_server import FakeOpenAIServer, Fault

LIMIT = 600  # requests per minute
WINDOW = 6.0  # seconds: the scaled-down minute
IN_WINDOW = int(LIMIT * WINDOW / 60)  # requests allowed in one window
CHUNK = 256  # prompts per generate() call, as the grading pass sends them (DEFAULT_CHUNK_SIZE)


class RateLimitedServer(FakeOpenAIServer):
    """Answers 429 with Retry-After to a request beyond ``IN_WINDOW`` in the last ``WINDOW`` seconds."""

    def __init__(self) -> None:
        super().__init__(lambda prompt: "3")
        self.accepted: deque[float] = deque()
        self.refused = 0
        self.answered = 0
        self.times: list[float] = []  # when each answered request arrived
        self._window_lock = threading.Lock()

    def _take_fault(self, prompt: str) -> Fault | None:
        now = time.monotonic()
        with self._window_lock:
            while self.accepted and self.accepted[0] <= now - WINDOW:
                self.accepted.popleft()
            if len(self.accepted) >= IN_WINDOW:
                self.refused += 1
                wait = self.accepted[0] + WINDOW - now
                return Fault("status", status=429, retry_after=f"{max(wait, 0.01):.3f}")
            self.accepted.append(now)
            self.answered += 1
            self.times.append(now)
            return None


def measure(label: str, seconds: float, **options: object) -> tuple[float, float]:
    with RateLimitedServer() as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="x", backoff_base=0.05,
                                backoff_max=1.0, max_retries=20, **options)  # type: ignore[arg-type]
        started = time.monotonic()
        sent = 0
        while time.monotonic() - started < seconds:
            prompts = [PromptParts(f"prompt {sent + i}: rate this passage", "") for i in range(CHUNK)]
            backend.generate(prompts, max_new_tokens=2)
            sent += len(prompts)
        elapsed = time.monotonic() - started
        # sustained: answered requests from the first to the last answer, as the server saw them (the
        # client's start-up, before the first request arrives, is not the server's limit at work)
        span = server.times[-1] - server.times[0] if len(server.times) > 1 else elapsed
        per_minute = (len(server.times) - 1) * 60.0 / span if span > 0 else 0.0
        calls = server.answered + server.refused
        share_429 = server.refused / calls if calls else 0.0
    print(f"{label:<34} {per_minute:7.0f} req/min sustained ({per_minute / LIMIT:6.1%} of {LIMIT}), "
          f"{server.refused:5d} of {calls:5d} calls answered 429 ({share_429:6.2%}), {elapsed:.1f} s")
    return per_minute / LIMIT, share_429


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="seconds each grader runs (default: 12)")
    args = parser.parse_args()
    print(f"server: {LIMIT} requests/min, enforced as {IN_WINDOW} requests in any {WINDOW:g} s window, "
          "429 + Retry-After beyond")
    measure("(a) fixed concurrency 8, no pacing", args.seconds, adaptive_concurrency=False)
    share, refused = measure("(b) rpm=600, adaptive concurrency", args.seconds, rpm=LIMIT)
    print(f"paced: {share:.1%} of the limit, {refused:.2%} of calls 429")
    return 0


if __name__ == "__main__":
    sys.exit(main())
