"""The grading hot loop's HTTP client (llm/transport.py) as the OpenAI backend uses it: connections kept
alive and reused, every framing of an answer read (Content-Length, chunked, until close), an answer too
large refused, a header that is no header refused before anything is sent, and a configured proxy honoured
(the backend then takes the SDK's path)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.graders.base import GradeFailure
from exam_harness.llm.backend import Generation, PromptParts
from exam_harness.llm.openai import OpenAIBackend
from exam_harness.llm.prompts import QUESTION_SELF_RATING
from exam_harness.llm.transport import MAX_RESPONSE_BYTES, ConnectionFailed, HTTPPool
from tests.fake_openai_server import FakeOpenAIServer
from tests.hostile_server import Handler, HostileServer, completion

pytest.importorskip("openai")

ANSWER = json.dumps(completion("3")).encode()


def _prompt(i: int = 0) -> PromptParts:
    before, after = QUESTION_SELF_RATING.split(question=f"question {i}?")
    return PromptParts(before, f"passage {i}", after)


def _generate(base_url: str, n: int = 1, **options: Any) -> list[Generation | GradeFailure]:
    values: dict[str, Any] = {"base_url": base_url, "api_key": "k", "backoff_base": 0.001, "backoff_max": 0.002,
                              "timeout": 5.0, "max_retries": 0}
    values.update(options)
    backend = OpenAIBackend("m", **values)
    return backend.generate([_prompt(i) for i in range(n)], max_new_tokens=1, rating_scale=5)


def _posts(base_url: str, n: int) -> tuple[list[int], int]:
    """``n`` requests one after another through one pool: their statuses and the connections it opened."""
    async def run() -> tuple[list[int], int]:
        pool = HTTPPool(base_url, {"Authorization": "Bearer k"}, limit=4)
        try:
            statuses = [(await pool.post("/chat/completions", b"{}")).status for _ in range(n)]
        finally:
            await pool.aclose()
        return statuses, pool.opened

    return asyncio.run(run())


def test_a_keep_alive_server_gets_every_request_on_one_connection() -> None:
    with HostileServer(lambda h, _b: h.send(200, ANSWER)) as server:
        statuses, opened = _posts(server.base_url, 10)
        results = _generate(server.base_url, n=12, concurrency=3)
    assert statuses == [200] * 10 and opened == 1
    assert [r.text for r in results if isinstance(r, Generation)] == ["3"] * 12


def test_a_server_that_closes_after_each_answer_gets_a_connection_per_request() -> None:
    """HTTP/1.0 (the fake server's): no keep-alive, a new connection each time, every answer read."""
    with FakeOpenAIServer() as server:
        statuses, opened = _posts(server.base_url, 5)
    assert statuses == [200] * 5 and opened == 5


def _chunked(h: Handler, _b: dict[str, Any]) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for start in range(0, len(ANSWER), 7):
        piece = ANSWER[start:start + 7]
        h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
    h.wfile.write(b"0\r\n\r\n")
    h.wfile.flush()


def _until_close(h: Handler, _b: dict[str, Any]) -> None:
    h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + ANSWER)
    h.wfile.flush()
    h.close_connection = True


@pytest.mark.parametrize("behave", [_chunked, _until_close], ids=["chunked", "until-close"])
def test_every_framing_of_an_answer_is_read_whole(behave: Any) -> None:
    with HostileServer(behave) as server:
        results = _generate(server.base_url, n=3, concurrency=1)
    assert [r.text if isinstance(r, Generation) else r for r in results] == ["3"] * 3


def test_an_answer_larger_than_the_limit_is_refused_not_read_into_memory() -> None:
    with HostileServer(lambda h, _b: h.send(200, b" " * (MAX_RESPONSE_BYTES + 1))) as server:
        [result] = _generate(server.base_url)
    assert isinstance(result, GradeFailure)
    assert f"connection error (the answer is larger than {MAX_RESPONSE_BYTES} bytes)" in result.message


def test_a_server_that_closes_without_answering_is_a_connection_error() -> None:
    def hang_up(h: Handler, _b: dict[str, Any]) -> None:
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    with HostileServer(hang_up) as server:
        [result] = _generate(server.base_url, max_retries=1)
        asked = server.requests
    assert isinstance(result, GradeFailure) and "connection error" in result.message and asked == 2


def test_nothing_listening_is_a_connection_failure_before_connecting() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def run() -> None:
        await HTTPPool(f"http://127.0.0.1:{port}/v1", {}, limit=1).post("/chat/completions", b"{}")

    with pytest.raises(ConnectionFailed) as caught:
        asyncio.run(run())
    assert caught.value.connected is False


def test_a_key_with_a_line_break_is_refused_without_showing_it() -> None:
    with FakeOpenAIServer() as server:
        with pytest.raises(ConfigError) as caught:
            _generate(server.base_url, api_key="sk-secret-part-one\nX-Injected: yes")
        assert server.count() == 0
    assert "Authorization" in str(caught.value) and "sk-secret" not in str(caught.value)


def test_a_configured_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keep-alive pool speaks to the server directly; where the environment names a proxy for it, the
    requests go through the SDK, which honours it: a proxy where nothing listens fails every request, and
    NO_PROXY naming the host sends them straight again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", dead_proxy)
    with FakeOpenAIServer() as server:
        [through_proxy] = _generate(server.base_url)
        assert server.count() == 0
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        [direct] = _generate(server.base_url)
        assert server.count() == 1
    assert isinstance(through_proxy, GradeFailure) and "connection error" in through_proxy.message
    assert isinstance(direct, Generation) and direct.text == "0"
