"""The OpenAI backend against hostile servers on 127.0.0.1 (tests/hostile_server.py):

* echoing servers: whatever a server sends back (a 401 or 500 body quoting the request's headers, a
  malformed answer, a model list) reaches no message with the API key or an ``Authorization`` /
  ``api-key`` value in it, in any encoding or cut short;
* drip-feeding servers: ``timeout`` is a deadline for the whole request, so a server that sends a byte
  at a time is left once it is spent (the bytes it got out are counted, not the seconds);
* absurd ``Retry-After``: beyond ``retry_after_limit`` the pair fails at once, saying why; a long wait
  within it is said with its reason;
* logprobs that are no log-probabilities (1e308, NaN, infinities) are a malformed response, not an
  ``OverflowError``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.graders.base import GradeFailure
from exam_harness.llm.backend import Generation, GenerationResult, PromptParts
from exam_harness.llm.openai import OpenAIBackend, backend_from_options
from exam_harness.llm.prompts import QUESTION_SELF_RATING
from tests.hostile_server import Handler, HostileServer, completion

pytest.importorskip("openai")

KEY = "sk-live-0123456789abcdefSECRETKEY"


def _backend(server: HostileServer, **options: Any) -> OpenAIBackend:
    values: dict[str, Any] = {"base_url": server.base_url, "api_key": KEY, "backoff_base": 0.001,
                              "backoff_max": 0.002, "timeout": 5.0, "max_retries": 0}
    values.update(options)
    return OpenAIBackend("m", **values)


def _prompt(context: str = "passage") -> PromptParts:
    before, after = QUESTION_SELF_RATING.split(question="What pulls the tides?")
    return PromptParts(before, context, after)


def _one(server: HostileServer, **options: Any) -> GenerationResult:
    backend = _backend(server, **options)
    return backend.generate([_prompt()], max_new_tokens=1, rating_scale=5)[0]


def _assert_no_secret(text: str) -> None:
    folded = text.casefold()
    assert KEY.casefold() not in folded and KEY[:16].casefold() not in folded, text
    assert urllib.parse.quote(KEY).casefold() not in folded
    assert "bearer sk" not in folded and "sk-live" not in folded, text


# --- echoing servers --------------------------------------------------------------------------------------
def _json_error(status: int, message: Callable[[Handler], str]) -> Callable[[Handler, dict[str, Any]], None]:
    return lambda h, _b: h.send_json(status, {"error": {"message": message(h), "type": "x"}})


ECHOES: dict[str, Callable[[Handler, dict[str, Any]], None]] = {
    "401-json-authorization": _json_error(401, lambda h: f"bad credentials: Authorization: {h.headers['authorization']}"),
    "500-json-header-dump": _json_error(500, lambda h: f"internal error for request\n{h.header_dump()}"),
    "400-json-key-alone": _json_error(400, lambda h: f"the key {KEY} has no access to model m"),
    "403-json-key-upper-case": _json_error(403, lambda h: f"KEY {KEY.upper()} REVOKED"),
    "500-json-key-cut-short": _json_error(500, lambda h: f"key {KEY[:20]}... unknown"),
    "429-json-key-url-encoded": _json_error(429, lambda h: f"see /keys?k={urllib.parse.quote(KEY)}"),
    "400-json-headers-as-json": _json_error(400, lambda h: json.dumps(dict(h.headers.items()))),
    "401-json-azure-api-key": _json_error(401, lambda h: "api-key: azure-0123456789abcdef-other-secret is wrong"),
    "500-text-header-dump": lambda h, _b: h.send(500, h.header_dump().encode(), "text/plain"),
    "502-html-echo": lambda h, _b: h.send(502, f"<html><pre>{h.header_dump()}</pre></html>".encode(), "text/html"),
    "401-no-message-body-echo": lambda h, _b: h.send_json(401, {"detail": dict(h.headers.items())}),
    "200-not-json-echo": lambda h, _b: h.send(200, f"oops {h.header_dump()}".encode(), "text/plain"),
    "200-no-choices-echo": lambda h, _b: h.send_json(200, {"choices": [], "echo": h.headers["authorization"]}),
    "500-json-double-escaped": _json_error(500, lambda h: json.dumps(json.dumps({"headers": dict(h.headers.items())}))),
    "200-choice-without-text-echo": lambda h, _b: h.send_json(
        200, {"choices": [{"message": {"role": "assistant"}, "authorization": h.headers["authorization"]}]}),
}


@pytest.mark.parametrize("behaviour", list(ECHOES), ids=list(ECHOES))
def test_an_echoing_server_never_gets_the_key_into_a_message(behaviour: str) -> None:
    with HostileServer(ECHOES[behaviour]) as server:
        result = _one(server)
    assert isinstance(result, GradeFailure)
    _assert_no_secret(str(result))
    if behaviour not in BODY_NOT_SHOWN:
        assert "[redacted]" in str(result)  # the body is shown, less what it must not carry


# error bodies that are not JSON with a message: the message says the status alone
BODY_NOT_SHOWN = {"500-text-header-dump", "502-html-echo", "401-no-message-body-echo"}


@pytest.mark.parametrize("behaviour", ["403-echo", "model-list-names-the-key"])
def test_the_probe_says_what_failed_without_the_key(behaviour: str) -> None:
    def behave(h: Handler, _b: dict[str, Any]) -> None:
        if behaviour == "403-echo":
            h.send_json(403, {"error": {"message": f"forbidden for {h.header_dump()}"}})
        else:
            h.send_json(200, {"object": "list", "data": [{"id": KEY, "object": "model"}]})

    with HostileServer(behave) as server, pytest.raises(ConfigError) as caught:
        _backend(server).probe()
    _assert_no_secret(str(caught.value))


def test_a_key_from_the_environment_is_scrubbed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with HostileServer(ECHOES["500-json-header-dump"]) as server:
        result = _backend(server, api_key=None).generate([_prompt()], max_new_tokens=1)[0]
    assert isinstance(result, GradeFailure)
    _assert_no_secret(str(result))


# --- drip-feeding servers ---------------------------------------------------------------------------------
ANSWER = json.dumps(completion("3")).encode()
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)
DRIPS: dict[str, Callable[[Handler, dict[str, Any]], None]] = {
    "body": lambda h, _b: h.drip(ANSWER, 0.05),
    "status-line-and-headers": lambda h, _b: h.drip(RESPONSE, 0.05, headers_too=True),
}


@pytest.mark.parametrize("how", list(DRIPS), ids=list(DRIPS))
@pytest.mark.parametrize("retries", [0, 2])
def test_a_dripping_server_cannot_hold_a_request_past_the_timeout(how: str, retries: int) -> None:
    """At a byte per 50 ms the answer takes 10 s and more; with timeout=0.3 s each attempt is left after
    a handful of bytes (each read alone comes well within the timeout, so only a deadline ends it)."""
    with HostileServer(DRIPS[how]) as server:
        result = _one(server, timeout=0.3, max_retries=retries)
        assert isinstance(result, GradeFailure) and "request timed out" in str(result)
        assert server.requests == retries + 1
    assert len(server.sent) == retries + 1
    assert all(sent < len(ANSWER) // 4 for sent in server.sent), server.sent


def test_dripping_answers_in_flight_at_once_are_each_bounded() -> None:
    with HostileServer(DRIPS["body"]) as server:
        backend = _backend(server, timeout=0.3, concurrency=4)
        results = backend.generate([_prompt(f"passage {i}") for i in range(4)], max_new_tokens=1)
    assert all(isinstance(r, GradeFailure) and "timed out" in str(r) for r in results)
    assert len(server.sent) == 4 and all(sent < len(ANSWER) // 4 for sent in server.sent)


def test_a_slow_but_whole_answer_within_the_timeout_is_taken() -> None:
    with HostileServer(lambda h, _b: h.drip(ANSWER, 0.0005)) as server:
        result = _one(server, timeout=10.0)
    assert isinstance(result, Generation) and result.text == "3"


# --- Retry-After ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "after"), [
    (429, "3600"), (503, "1000"), (429, "86400.5"), (429, "Wed, 21 Oct 2099 07:28:00 GMT"),
], ids=["429-hour", "503-1000s", "429-day", "429-http-date"])
def test_a_retry_after_beyond_the_limit_fails_at_once_saying_why(status: int, after: str) -> None:
    with HostileServer(lambda h, _b: h.send_json(status, {"error": {"message": "slow down"}},
                                                 headers={"Retry-After": after})) as server:
        result = _one(server, max_retries=5)
        assert server.requests == 1  # no retry, no wait
    assert isinstance(result, GradeFailure)
    assert f"HTTP {status}" in str(result) and "(Retry-After), more than retry_after_limit=300 s" in str(result)


def test_a_long_wait_is_said_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def behave(h: Handler, _b: dict[str, Any]) -> None:
        calls.append(1)
        if len(calls) == 1:
            h.send_json(429, {"error": {"message": f"rate limited for {KEY}"}}, headers={"Retry-After": "0.2"})
        else:
            h.send_json(200, completion("4"))

    with HostileServer(behave) as server:
        backend = _backend(server, max_retries=2)
        backend.policy = dataclasses.replace(backend.policy, say_after=0.1)  # "a few seconds", made short
        with caplog.at_level(logging.WARNING, logger="exam_harness.openai"):
            result = backend.generate([_prompt()], max_new_tokens=1, rating_scale=5)[0]
    assert isinstance(result, Generation) and result.text == "4"
    said = [r.getMessage() for r in caplog.records if r.name == "exam_harness.openai"]
    assert len(said) == 1 and "waiting 0.2 s as the server asked (Retry-After) before retry 1 of 2" in said[0]
    assert "HTTP 429: rate limited" in said[0]
    _assert_no_secret(said[0])


@pytest.mark.parametrize("raw", ["-1", "soon"])
def test_retry_after_limit_is_a_checked_option(raw: str) -> None:
    with pytest.raises(ConfigError, match="retry_after_limit"):
        backend_from_options("m", {"base_url": "http://127.0.0.1:9/v1", "retry_after_limit": raw})


# --- logprobs that are no log-probabilities --------------------------------------------------------------
def _logprob_answer(value: str) -> Callable[[Handler, dict[str, Any]], None]:
    def behave(h: Handler, _b: dict[str, Any]) -> None:
        top = '[{"token": "3", "logprob": ' + value + '}, {"token": "2", "logprob": -2.0}]'  # as sent, not as json.dumps writes
        body = json.dumps(completion("3", {"content": [{"token": "3", "logprob": 0.0, "top_logprobs": []}]}))
        h.send(200, body.replace('"top_logprobs": []', '"top_logprobs": ' + top).encode())
    return behave


@pytest.mark.parametrize("value", ["1e308", "NaN", "Infinity", "-Infinity", "1" + "0" * 400, "5.0"])
def test_a_logprob_that_is_no_log_probability_is_a_malformed_response(value: str) -> None:
    with HostileServer(_logprob_answer(value)) as server:
        result = _one(server, logprobs=True)
    assert isinstance(result, GradeFailure), result
    assert "malformed response: logprob" in str(result) and "is not a log-probability" in str(result)


def test_a_logprob_a_rounding_error_above_zero_is_read_as_zero() -> None:
    with HostileServer(_logprob_answer("1e-7")) as server:
        result = _one(server, logprobs=True)
    assert isinstance(result, Generation) and result.grade_probabilities is not None
    assert result.grade_probabilities[3] > 0.8


@pytest.mark.parametrize(("text", "kept"), [
    ("GET http://admin:hunter2-secret@proxy:8080/v1 failed", "http://[redacted]@proxy:8080/v1"),
    ('{"Proxy-Authorization": "Basic dXNlcjpwYXNz"}', '"Proxy-Authorization": "Basic [redacted]"'),
    ("x-api-key=abc123 rejected", "x-api-key=[redacted] rejected"),
])
def test_the_scrubber_removes_credentials_of_any_form(text: str, kept: str) -> None:
    from exam_harness.core.redaction import credential_scrubber

    assert kept in credential_scrubber(KEY)(text)
