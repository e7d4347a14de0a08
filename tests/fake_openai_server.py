"""A local OpenAI-compatible HTTP server for tests, with scripted faults.

Serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` on 127.0.0.1 (a free port) from
a background thread. Answers come from a ``responder(prompt) -> str | FakeAnswer``; faults are
scripted per prompt substring (the first N matching requests get the faults in order) or for the
next requests regardless of prompt. Every request is recorded so tests can count attempts.

Usage::

    with FakeOpenAIServer(responder) as server:
        server.add_faults("GRADE=3", Fault("status", status=429, retry_after="0.1"))
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

FaultKind = Literal["status", "slow", "garbage", "truncated", "empty_choices", "missing_content", "drop"]


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, applied to one request.

    status: an HTTP error ``status`` with a JSON error body (and ``Retry-After`` when given);
    slow: answer correctly after ``delay`` seconds (past the client's timeout in tests);
    garbage: 200 with an HTML body; truncated: 200 with half a JSON body;
    empty_choices / missing_content: 200 with well-formed JSON lacking the answer;
    drop: close the connection without answering.
    """

    kind: FaultKind
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class FakeAnswer:
    text: str
    # token -> probability at the first generated position (sent as logprobs when asked)
    first_token_probs: dict[str, float] | None = None


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    prompt: str
    fault: Fault | None
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased


Responder = Callable[[str], "str | FakeAnswer"]


def grade_marker_responder(prompt: str) -> FakeAnswer:
    """Answers the digit N of a ``GRADE=N`` marker in the prompt (``0`` without one), with logprobs
    that put 0.7 on N and share the rest over the other digits 0..5."""
    digit = "0"
    at = prompt.find("GRADE=")
    if at >= 0 and at + 6 < len(prompt) and prompt[at + 6].isdigit():
        digit = prompt[at + 6]
    probs = {d: (0.7 if d == digit else 0.3 / 5) for d in "012345"}
    return FakeAnswer(digit, probs)


class FakeOpenAIServer:
    def __init__(self, responder: Responder = grade_marker_responder, *, model: str = "fake-model") -> None:
        self.responder = responder
        self.model = model
        self.model_listings = 0  # GET /v1/models calls (probes)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._prompt_faults: list[tuple[str, list[Fault]]] = []
        self._next_faults: list[Fault] = []
        self._stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------
    def add_faults(self, prompt_substring: str, *faults: Fault) -> None:
        """The next ``len(faults)`` requests whose prompt contains the substring get these faults."""
        with self._lock:
            self._prompt_faults.append((prompt_substring, list(faults)))

    def add_next_faults(self, *faults: Fault) -> None:
        """The next requests, whatever their prompt, get these faults (before prompt faults)."""
        with self._lock:
            self._next_faults.extend(faults)

    def count(self, prompt_substring: str = "") -> int:
        with self._lock:
            return sum(1 for r in self.requests if prompt_substring in r.prompt)

    def _take_fault(self, prompt: str) -> Fault | None:
        with self._lock:
            if self._next_faults:
                return self._next_faults.pop(0)
            for substring, faults in self._prompt_faults:
                if faults and substring in prompt:
                    return faults.pop(0)
        return None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> Self:
        server: FakeOpenAIServer = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a "slow" fault
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering -------------------------------------------------------------------------
    def answer_body(self, path: str, body: dict[str, Any], prompt: str, fault: Fault | None) -> dict[str, Any]:
        answer = self.responder(prompt)
        if isinstance(answer, str):
            answer = FakeAnswer(answer)
        usage = {
            "prompt_tokens": max(1, len(prompt) // 4),
            "completion_tokens": 1,
            "total_tokens": max(1, len(prompt) // 4) + 1,
        }
        first = answer.text[:1] if answer.text else ""
        if path.endswith("/chat/completions"):
            message: dict[str, Any] = {"role": "assistant"}
            if not (fault and fault.kind == "missing_content"):
                message["content"] = answer.text
            choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
            if body.get("logprobs") and answer.first_token_probs:
                top = [
                    {"token": tok, "logprob": math.log(p), "bytes": list(tok.encode())}
                    for tok, p in sorted(answer.first_token_probs.items(), key=lambda kv: -kv[1])
                ][: int(body.get("top_logprobs") or 1)]
                lp = top[0]["logprob"] if top else 0.0
                choice["logprobs"] = {
                    "content": [{"token": first, "logprob": lp, "bytes": list(first.encode()), "top_logprobs": top}]
                }
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": answer.text, "finish_reason": "stop", "logprobs": None}
            if fault and fault.kind == "missing_content":
                del choice["text"]
            if body.get("logprobs") and answer.first_token_probs:
                n = int(body["logprobs"])
                likeliest = sorted(answer.first_token_probs.items(), key=lambda kv: -kv[1])[:n]
                top_logprobs = {tok: math.log(p) for tok, p in likeliest}
                choice["logprobs"] = {"tokens": [first], "token_logprobs": [top_logprobs.get(first, 0.0)],
                                      "top_logprobs": [top_logprobs]}
            obj = "text_completion"
        choices = [] if fault and fault.kind == "empty_choices" else [choice]
        return {"id": "cmpl-fake", "object": obj, "created": 0, "model": self.model, "choices": choices, "usage": usage}


def _prompt_of(path: str, body: dict[str, Any]) -> str:
    if path.endswith("/chat/completions"):
        return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else json.dumps(prompt)


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: a client opening more connections at once than that has its SYNs
    # dropped and retried by the kernel after a second, so every burst of 6+ requests waited ~1 s (a server
    # under test answers at once; a real one, e.g. uvicorn's 2048, has a deep backlog)
    request_queue_size = 1024


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAIServer
    disable_nagle_algorithm = True  # an answer is two writes (head, body): the body is not held back for an ACK

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        """``GET /v1/models``: the one model this server serves (what a grader's probe asks first)."""
        if self.path != "/v1/models":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        self.owner.model_listings += 1
        self._send(200, {"object": "list", "data": [{"id": self.owner.model, "object": "model", "created": 0,
                                                     "owned_by": "fake"}]})

    def do_POST(self) -> None:
        server = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        prompt = _prompt_of(self.path, body)
        fault = server._take_fault(prompt)
        with server._lock:
            server.requests.append(RecordedRequest(self.path, body, prompt, fault, {k.lower(): v for k, v in self.headers.items()}))
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        self._in_flight = True
        try:
            self._answer(server, body, prompt, fault)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer
        finally:
            self._leave_flight()

    def _leave_flight(self) -> None:
        """A request stops counting as in flight before its answer is written: once the client has the
        answer it may start the next request before this thread runs again."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            with self.owner._lock:
                self.owner.in_flight -= 1

    def _answer(self, server: FakeOpenAIServer, body: dict[str, Any], prompt: str, fault: Fault | None) -> None:
        if fault is not None:
            if fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                self._send(fault.status, {"error": {"message": f"scripted {fault.status}", "type": "server_error"}}, headers)
                return
            if fault.kind == "slow":
                if server._stopping.wait(fault.delay):
                    return
            elif fault.kind == "garbage":
                self._send_raw(200, b"<html><body>502 Bad Gateway (proxy)</body></html>", "text/html")
                return
            elif fault.kind == "truncated":
                whole = json.dumps(server.answer_body(self.path, body, prompt, None)).encode()
                self._send_raw(200, whole[: len(whole) // 2], "application/json")
                return
            elif fault.kind == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
        self._send(200, server.answer_body(self.path, body, prompt, fault))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self._leave_flight()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
