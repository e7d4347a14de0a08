"""Timeouts told apart (issue 38 item 2, issue 39 finding 10): a live server slow on some calls fails those
pairs and grades the rest; a server that answers nothing stops grading after ``max_consecutive_failures``
waves of silence, saying so; a deadline that fires late (this process starved) is said as such and is no
evidence against the server."""

from __future__ import annotations

import asyncio
import time

import pytest

from exam_harness.graders.base import GradeFailure
from exam_harness.llm.backend import Generation, PromptParts
from exam_harness.llm.openai import OpenAIBackend
from exam_harness.llm.prompts import QUESTION_SELF_RATING
from exam_harness.llm.retry import Breaker, RetryDecision, ServerUnreachable, TimedOut
from tests.fake_openai_server import FakeOpenAIServer, Fault

pytest.importorskip("openai")


def _prompt(i: int) -> PromptParts:
    before, after = QUESTION_SELF_RATING.split(question=f"question {i}?")
    return PromptParts(before, f"passage {i}. GRADE={i % 6}", after)


def _backend(server: FakeOpenAIServer, **options: object) -> OpenAIBackend:
    values: dict[str, object] = {"base_url": server.base_url, "api_key": "k", "backoff_base": 0.001,
                                 "backoff_max": 0.002}
    values.update(options)
    return OpenAIBackend("fake-model", **values)  # type: ignore[arg-type]


def test_a_server_slow_on_a_third_of_its_calls_fails_those_pairs_and_grades_the_rest() -> None:
    """Finding 10: the slow calls pile up in the slots the fast ones leave and time out together; that is
    one wave, while the server answers the others in between: no stop (exit 75), each slow pair a failure
    (exit 1), every other pair graded."""
    prompts = [_prompt(i) for i in range(30)]
    slow = {i for i in range(30) if i % 3 == 0}
    with FakeOpenAIServer() as server:
        for i in slow:
            server.add_faults(f"passage {i}.", Fault("slow", delay=5.0), Fault("slow", delay=5.0))
        backend = _backend(server, timeout=0.4, max_retries=1, concurrency=8, max_consecutive_failures=3)
        results = backend.generate(prompts, max_new_tokens=1, rating_scale=5)
    assert backend.stopped is None
    for i, result in enumerate(results):
        if i in slow:
            assert isinstance(result, GradeFailure) and "request timed out" in result.message, result
            assert "is the server up" not in result.message and "not sent" not in result.message
        else:
            assert isinstance(result, Generation) and result.text == str(i % 6), (i, result)
    assert backend.stats.failures == len(slow)


def test_a_server_that_answers_nothing_stops_grading_after_waves_of_silence() -> None:
    """It accepts every connection and never answers: requests sent together time out together, one wave
    each; after max_consecutive_failures waves grading stops with one message that says what happened,
    instead of retrying every pair to exhaustion."""
    with FakeOpenAIServer() as server:
        server.add_next_faults(*[Fault("slow", delay=30.0)] * 200)
        backend = _backend(server, timeout=0.2, max_retries=5, concurrency=4, max_consecutive_failures=3)
        results = backend.generate([_prompt(i) for i in range(12)], max_new_tokens=1, rating_scale=5)
        sent = server.count()
    assert backend.stopped is not None
    assert backend.stopped.startswith("3 waves of requests in a row timed out with no answer from openai chat call")
    assert "each waited 0.2 s" in backend.stopped and backend.stopped.endswith("is the server up?")
    assert all(isinstance(r, GradeFailure) for r in results)
    # three waves of at most 4 requests, and each other request in flight at the stop once more at most;
    # retried to exhaustion the 12 pairs would have made 72
    assert 3 <= sent <= 4 * 3 + 4, sent


def _breaker_timeout(breaker: Breaker, started: float, *, answered: int = 0, waited: float = 1.0) -> None:
    exc = TimedOut(1.0, started=started, waited=waited, answered_meanwhile=answered)
    breaker.watch(lambda e: RetryDecision(True, str(e)))(exc)


def test_timeouts_count_once_per_wave_and_never_while_the_server_answers_others() -> None:
    now = [100.0]
    breaker = Breaker(2, "the server", clock=lambda: now[0])
    _breaker_timeout(breaker, started=99.0)  # first wave: counted
    _breaker_timeout(breaker, started=99.5)  # was waiting when the first fired: the same silence
    _breaker_timeout(breaker, started=99.0, answered=4)  # others were answered meanwhile: a slow call
    assert breaker.failures == 1
    _breaker_timeout(breaker, started=100.0, waited=2.0)  # fired a second late: the loop was starved
    assert breaker.failures == 1
    now[0] = 101.0
    with pytest.raises(ServerUnreachable, match="2 waves of requests in a row timed out"):
        _breaker_timeout(breaker, started=100.0)  # sent after the first wave was seen: more evidence


def test_a_connection_refused_counts_each_time() -> None:
    breaker = Breaker(2, "the server")
    classify = breaker.watch(lambda e: RetryDecision(True, "connection error (refused)", unreachable=True))
    classify(ConnectionRefusedError())
    with pytest.raises(ServerUnreachable, match="2 connection failures in a row to the server"):
        classify(ConnectionRefusedError())


def test_a_deadline_that_fires_late_says_the_client_was_starved() -> None:
    """A task that holds the event loop (CPU work in it, a loaded machine) delays every deadline; the
    timeout that fires late says so, and is not held against the server."""
    breaker = Breaker(1, "the server")

    async def run() -> BaseException:
        async def hog() -> None:
            await asyncio.sleep(0.01)
            time.sleep(0.6)  # the loop cannot run meanwhile

        async def call() -> str:
            await asyncio.sleep(5)
            return "never"

        hogging = asyncio.create_task(hog())
        try:
            await breaker.passed(call(), 0.05)
        except TimedOut as exc:
            await hogging
            return exc
        raise AssertionError("no timeout")

    exc = asyncio.run(run())
    assert isinstance(exc, TimedOut) and exc.starved and exc.late > 0.3
    assert "the timeout fired" in str(exc) and "this client's event loop could not run on time" in str(exc)
    decision = breaker.watch(lambda e: RetryDecision(True, str(e)))(exc)  # limit 1, yet no stop
    assert decision is not None and breaker.failures == 0


def test_a_timeout_while_others_are_answered_says_the_server_is_slow_or_the_client_sends_too_much() -> None:
    exc = TimedOut(60.0, started=0.0, waited=60.0, answered_meanwhile=37)
    assert str(exc) == ("request timed out (no whole answer within 60 s) while the server answered 37 other "
                        "requests: it is slow on this one or gets more at once than it answers in time (lower "
                        "concurrency or raise timeout)")
