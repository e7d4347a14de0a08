"""The bounded retry policy (backoff with full jitter, Retry-After) and the openai backend's option parsing."""

from __future__ import annotations

import asyncio
import email.utils
import random

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.llm.openai import OpenAIBackend, backend_from_options
from exam_harness.llm.retry import AsyncRetrier, RetryDecision, RetryExhausted, RetryPolicy, parse_retry_after


def test_full_jitter_stays_under_the_exponential_ceiling() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=4.0)
    rng = random.Random(7)
    for retry in range(8):
        ceiling = min(4.0, 0.5 * 2**retry)
        delays = [policy.delay(retry, rng=rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # spread over the whole range, not a constant
        assert min(delays) < ceiling * 0.2


def test_retry_after_is_a_floor_capped_by_retry_after_max() -> None:
    policy = RetryPolicy(backoff_base=0.001, backoff_max=0.001, retry_after_max=10.0)
    assert policy.delay(0, retry_after=3.0) == 3.0
    assert policy.delay(0, retry_after=500.0) == 10.0


@pytest.mark.parametrize(
    ("header", "expected"),
    [("2", 2.0), ("0.25", 0.25), (" 7 ", 7.0), ("-3", 0.0), ("", None), (None, None), ("soon", None), ("nan", None)],
)
def test_parse_retry_after_seconds(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(30.0)


def _run(retrier: AsyncRetrier[str], outcomes: list[object]) -> str:
    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return str(outcome)

    return asyncio.run(retrier.run(attempt))


class Transient(Exception):
    pass


class Permanent(Exception):
    pass


def classify(exc: BaseException) -> RetryDecision | None:
    if isinstance(exc, Transient):
        return RetryDecision(True, "transient", status=503, retry_after=0.0)
    if isinstance(exc, Permanent):
        return RetryDecision(False, "permanent", status=400)
    return None


def _retrier(max_retries: int, sleeps: list[float]) -> AsyncRetrier[str]:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return AsyncRetrier(RetryPolicy(max_retries=max_retries, backoff_base=1.0, backoff_max=8.0), classify, sleep=sleep)


def test_retrier_succeeds_after_transient_failures() -> None:
    sleeps: list[float] = []
    retrier = _retrier(3, sleeps)
    assert _run(retrier, [Transient(), Transient(), "ok"]) == "ok"
    assert retrier.counter.attempts == 3 and retrier.counter.retries == 2 and len(sleeps) == 2
    assert sleeps[0] <= 1.0 and sleeps[1] <= 2.0


def test_retrier_stops_after_max_retries() -> None:
    sleeps: list[float] = []
    retrier = _retrier(2, sleeps)
    with pytest.raises(RetryExhausted) as info:
        _run(retrier, [Transient()] * 10)
    assert info.value.attempts == 3 and retrier.counter.attempts == 3 and len(sleeps) == 2
    assert str(info.value) == "HTTP 503: transient (retries exhausted after 3 attempts)"


def test_retrier_does_not_retry_permanent_errors() -> None:
    retrier = _retrier(5, [])
    with pytest.raises(RetryExhausted, match=r"HTTP 400: permanent \(not retryable after 1 attempt\)"):
        _run(retrier, [Permanent(), "never"])
    assert retrier.counter.attempts == 1


def test_retrier_lets_unknown_errors_propagate() -> None:
    retrier = _retrier(5, [])
    with pytest.raises(ZeroDivisionError):
        _run(retrier, [ZeroDivisionError("a bug"), "never"])
    assert retrier.counter.retries == 0


def test_policy_rejects_negative_values() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)


# --- options from the command line ---------------------------------------------------------------


def test_backend_from_string_options() -> None:
    backend = backend_from_options(
        None,
        {
            "model": "llama-3-8b",
            "base_url": "http://127.0.0.1:8000/v1",
            "concurrency": "32",
            "temperature": "0.5",
            "logprobs": "yes",
            "max_context_tokens": "4096",
            "max_tokens": "none",
            "timeout": "2.5",
        },
    )
    assert isinstance(backend, OpenAIBackend)
    assert backend.model_id == "llama-3-8b" and backend.concurrency == 32 and backend.temperature == 0.5
    assert backend.logprobs is True and backend.max_context_tokens == 4096 and backend.max_tokens is None
    assert backend.timeout == 2.5 and backend.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": "many"}, "grader 'openai': option concurrency='many' must be an integer"),
        ({"logprobs": "maybe"}, "option logprobs='maybe' must be true or false"),
        ({"max_retries": "1.5"}, "option max_retries='1.5' must be an integer"),
        ({"concurrency": "0"}, "option concurrency='0' must be an integer in 1..1024"),
        ({"temperature": "3"}, "option temperature='3' must be <= 2"),
        ({"endpoint": "chatt"}, "option endpoint='chatt' must be one of chat, completions .did you mean 'chat'"),
        ({"prompt": "question-rating"}, "unknown option 'prompt'"),  # a grader option, not the backend's
    ],
)
def test_bad_string_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        backend_from_options("m", {"base_url": "http://127.0.0.1:9/v1", **options})


def test_model_is_required() -> None:
    with pytest.raises(ConfigError, match="model name"):
        backend_from_options(None, {"base_url": "http://127.0.0.1:9/v1"})
