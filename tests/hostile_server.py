"""A hostile OpenAI-compatible server for tests, on 127.0.0.1: it echoes the request's credentials back in
its error bodies, drips its answer a byte at a time, asks for absurd Retry-After waits or sends logprobs
that are no log-probabilities. ``behave(handler, body) -> None`` writes the whole response itself.

Every connection it serves is bounded: a dripping answer stops when the client hangs up (``sent`` counts
the bytes that went out), and the server thread is stopped and joined on exit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[["Handler", dict[str, Any]], None]


class HostileServer:
    def __init__(self, behave: Behaviour) -> None:
        self.behave = behave
        self.requests = 0
        self.sent: list[int] = []  # bytes each dripping answer got out before the client hung up
        self.dripping = 0  # drips not yet ended
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> HostileServer:
        owner = self

        class Bound(Handler):
            server_owner = owner

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Bound)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None and self._thread is not None
        deadline = time.monotonic() + 5
        while self.dripping and time.monotonic() < deadline:  # a drip ends at its first write after a hang-up
            time.sleep(0.01)
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class Handler(BaseHTTPRequestHandler):
    server_owner: HostileServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # /v1/models
        self.server_owner.requests += 1
        self.server_owner.behave(self, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server_owner.requests += 1
        self.server_owner.behave(self, body)

    # -- what behaviours use ----------------------------------------------------------------
    def send(self, status: int, data: bytes, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(payload).encode(), headers=headers)

    def header_dump(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self.headers.items())

    def drip(self, data: bytes, every: float, *, headers_too: bool = False) -> None:
        """Send ``data`` (a whole HTTP response when ``headers_too``, else a 200 body) a byte every
        ``every`` seconds, until the client hangs up."""
        sent = 0
        with self.server_owner.lock:
            self.server_owner.dripping += 1
        try:
            if not headers_too:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                sent += 1
                time.sleep(every)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self.server_owner.lock:
                self.server_owner.sent.append(sent)
                self.server_owner.dripping -= 1
        self.close_connection = True


def completion(text: str, logprobs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chat completion answering ``text`` (with ``logprobs`` as the choice's logprobs)."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}
