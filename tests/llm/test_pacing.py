"""Pacing (llm/pacing.py): rpm and tpm token buckets, the adaptive concurrency (AIMD on 429/503 and
Retry-After), and the OpenAI backend telling its pacer of the server's 429s. A fake clock: no real time."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from exam_harness.llm.pacing import HEADROOM, Pacer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def starts(pacer: Pacer, clock: Clock, count: int, tokens: float = 0.0) -> list[float]:
    async def run() -> list[float]:
        times = []
        for _ in range(count):
            await pacer.start(tokens)
            times.append(clock.now)
            await pacer.finish(None, answered=True)
        return times

    return asyncio.run(run())


def test_rpm_spaces_the_starts_at_the_headroom_of_the_limit() -> None:
    clock = Clock()
    pacer = Pacer(8, rpm=600, clock=clock, sleep=clock.sleep)
    times = starts(pacer, clock, 21)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps == pytest.approx([60 / (600 * HEADROOM)] * 20)
    assert times[0] == 0.0  # the first request does not wait


def test_tpm_waits_for_the_tokens_of_each_request() -> None:
    clock = Clock()
    tpm = 6000.0
    pacer = Pacer(8, tpm=tpm, clock=clock, sleep=clock.sleep)
    times = starts(pacer, clock, 5, tokens=500)
    per_second = tpm * HEADROOM / 60
    # the bucket holds one second's tokens (95): a request of 500 waits for a full bucket, one a second
    assert times[0] == 0.0
    assert [b - a for a, b in itertools.pairwise(times)] == pytest.approx([min(500, per_second) / per_second] * 4)


def test_429_halves_the_concurrency_and_answers_grow_it_back_up_to_the_ceiling() -> None:
    clock = Clock()
    pacer = Pacer(8, clock=clock, sleep=clock.sleep)

    async def run() -> list[float]:
        limits = []
        for _ in range(3):
            await pacer.start()
            await pacer.finish(429)
            limits.append(pacer.limit)
        for _ in range(200):
            await pacer.start()
            await pacer.finish(None, answered=True)
        limits.append(pacer.limit)
        for _ in range(5):
            await pacer.start()
            await pacer.finish(503)
        limits.append(pacer.limit)
        return limits

    assert asyncio.run(run()) == [4.0, 2.0, 1.0, 8.0, 1.0]  # never above concurrency, never below 1


def test_the_limit_bounds_the_requests_in_flight() -> None:
    clock = Clock()
    pacer = Pacer(4, clock=clock, sleep=clock.sleep)
    pacer.limit = 2.0
    seen: list[int] = []

    async def one() -> None:
        await pacer.start()
        seen.append(pacer.in_flight)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await pacer.finish(None)

    async def run() -> None:
        await asyncio.gather(*(one() for _ in range(10)))

    asyncio.run(run())
    assert max(seen) == 2 and len(seen) == 10


def test_retry_after_holds_every_new_request() -> None:
    clock = Clock()
    pacer = Pacer(8, clock=clock, sleep=clock.sleep)

    async def run() -> float:
        await pacer.start()
        await pacer.finish(429, retry_after=3.0)
        await pacer.start()
        return clock.now

    assert asyncio.run(run()) == pytest.approx(3.0)


def test_without_adaptation_the_concurrency_stays_fixed() -> None:
    clock = Clock()
    pacer = Pacer(8, adaptive=False, clock=clock, sleep=clock.sleep)

    async def run() -> None:
        await pacer.start()
        await pacer.finish(429)

    asyncio.run(run())
    assert pacer.limit == 8.0 and pacer.throttled == 1


def test_the_backend_tells_its_pacer_of_429s() -> None:
    pytest.importorskip("openai")
    from exam_harness.llm.backend import PromptParts
    from exam_harness.llm.openai import OpenAIBackend
    from tests.fake_openai_server import FakeOpenAIServer, Fault

    with FakeOpenAIServer(lambda prompt: "2") as server:
        server.add_next_faults(Fault("status", status=429, retry_after="0"), Fault("status", status=429))
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="x", concurrency=8,
                                backoff_base=0.001, backoff_max=0.002, rpm=60000)
        answers = backend.generate([PromptParts(f"p{i}", "") for i in range(4)], max_new_tokens=2)
    assert [getattr(a, "text", None) for a in answers] == ["2"] * 4
    assert backend.pacer.throttled == 2
    assert backend.pacer.limit < 8  # halved twice, grown back by less than the answers can add
    assert "/60000 req/min" in backend.pacer.status()


def test_the_progress_line_shows_the_rate_and_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.core.progress import GradingProgress

    clock = Clock()
    pacer = Pacer(8, rpm=600, clock=clock, sleep=clock.sleep)
    starts(pacer, clock, 11)
    with GradingProgress("grading with openai") as bar:
        bar.status = pacer.status
        bar.start(10)
        bar.advance(10)
    # 11 starts 60/570 s apart: the rate shown is the paced one (95% of rpm), against rpm
    assert "grading with openai (570/600 req/min, 8/8 in flight)" in capsys.readouterr().err


# -- issue 39, finding 8: a Retry-After the retrier refuses holds nothing past the pacer's cap ------------
HOSTILE_RETRY_AFTER = {"an hour": (429, "3600"), "a date in 2099": (429, "Thu, 01 Jan 2099 00:00:00 GMT"),
                       "inf": (429, "inf"), "1e308": (429, "1e308"), "400 nines": (429, "9" * 400),
                       "a 503 of an hour": (503, "3600")}


@pytest.mark.parametrize(("status", "header"), list(HOSTILE_RETRY_AFTER.values()), ids=list(HOSTILE_RETRY_AFTER))
def test_a_hostile_retry_after_holds_new_requests_at_most_the_cap(status: int, header: str) -> None:
    from exam_harness.llm.retry import parse_retry_after

    clock = Clock()
    pacer = Pacer(8, hold_max=120.0, clock=clock, sleep=clock.sleep)

    async def run() -> float:
        await pacer.start()
        await pacer.finish(status, retry_after=parse_retry_after(header))
        await pacer.start()
        return clock.now

    assert asyncio.run(run()) == pytest.approx(120.0)


@pytest.mark.parametrize("status", [429, 503])
def test_the_backend_s_other_requests_wait_no_longer_than_the_retrier_would(status: int) -> None:
    """A server asking one request to come back in an hour: the retrier fails that pair at once (more than
    retry_after_limit), and the other requests wait at most retry_after_max, not the hour (they waited it)."""
    import threading

    pytest.importorskip("openai")
    from exam_harness.llm.backend import PromptParts
    from exam_harness.llm.openai import OpenAIBackend
    from tests.fake_openai_server import FakeOpenAIServer, Fault

    with FakeOpenAIServer(lambda prompt: "2") as server:
        server.add_next_faults(Fault("status", status=status, retry_after="3600"))
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="x", concurrency=1, max_retries=0,
                                backoff_base=0.001, backoff_max=0.002, retry_after_max=0.2)
        answers: list[object] = []
        worker = threading.Thread(target=lambda: answers.extend(backend.generate(
            [PromptParts(f"p{i}", "") for i in range(4)], max_new_tokens=2)), daemon=True)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the other requests were held for the server's hour"
    assert [getattr(a, "text", None) for a in answers[1:]] == ["2"] * 3
    assert backend.pacer.hold_max == pytest.approx(0.2)
