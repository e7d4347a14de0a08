"""The HTTP and command forms of a system: callables taking a :class:`Query`, built by the declarations."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from exam_harness.core.models import Query
from exam_harness.features.live_systems.answers import Answer
from exam_harness.io import limits

MAX_REPLY_BYTES = limits.MAX_FILE_BYTES  # an HTTP reply or a command's output longer than this fails the call
_LOCAL = threading.local()  # per calling thread: its kept-alive HTTP connections


class _Quoted:
    """The query with every field percent-encoded, for placeholders in a URL."""

    def __init__(self, query: Query) -> None:
        self.id = urllib.parse.quote(query.id, safe="")
        self.text = urllib.parse.quote(query.text, safe="")


def fill(template: Any, query: Query) -> Any:
    """``template`` with ``{query.id}``/``{query.text}`` filled in every string (lists and objects walked)."""
    if isinstance(template, str):
        return template.format(query=query)
    if isinstance(template, list):
        return [fill(item, query) for item in template]
    if isinstance(template, dict):
        return {key: fill(value, query) for key, value in template.items()}
    return template


def at_path(reply: Any, path: str) -> Any:
    """The value at a dotted JSON path (``data.answer``, ``hits.0.text``); KeyError naming the step."""
    value = reply
    for step in path.split(".") if path else ():
        if isinstance(value, list) and step.lstrip("-").isdigit() and -len(value) <= int(step) < len(value):
            value = value[int(step)]
        elif isinstance(value, dict) and step in value:
            value = value[step]
        else:
            keys = sorted(value)[:8] if isinstance(value, dict) else f"a {type(value).__name__}"
            raise KeyError(f"the reply has no {step!r} on the path {path!r} (found {keys})")
    return value


@dataclass(frozen=True)
class HttpCall:
    url: str
    body: Any
    answer: str
    method: str
    headers: dict[str, str] = field(default_factory=dict)
    tokens: str | None = None
    cost: str | None = None
    timeout: float | None = None
    opened: list[http.client.HTTPConnection] = field(default_factory=list, compare=False, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def close(self) -> None:
        """Close every connection the calling threads opened (the caller does, after its calls)."""
        with self.lock:
            for conn in self.opened:
                conn.close()
            self.opened.clear()

    def __call__(self, query: Query) -> Any:
        url = self.url.format(query=_Quoted(query))
        data = None if self.body is None else json.dumps(fill(self.body, query)).encode("utf-8")
        headers = {"Accept": "application/json", **self.headers}
        if data is not None:
            headers.setdefault("Content-Type", "application/json")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {url!r}")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        status, reason, raw = self._send(parts, target, data, headers)
        if status >= 400:
            detail = raw[:300].decode("utf-8", "replace").strip()
            raise RuntimeError(f"HTTP {status} {reason} from {self.method} {url}: {detail}")
        try:
            reply = json.loads(raw)
        except ValueError:
            raise ValueError(f"the reply of {self.method} {url} is not JSON: {raw[:120]!r}") from None
        value = at_path(reply, self.answer)
        if isinstance(value, str):
            return Answer(value, tokens=self._number(reply, self.tokens, int),
                          cost=self._number(reply, self.cost, float))
        return value

    def _send(self, parts: urllib.parse.SplitResult, target: str, data: bytes | None,
              headers: dict[str, str]) -> tuple[int, str, bytes]:
        """One request over this thread's kept-alive connection to the host (a connection the server
        closed meanwhile is opened again, once); any other failure drops the connection."""
        key = (id(self), parts.scheme, parts.netloc)
        pool: dict[tuple[int, str, str], http.client.HTTPConnection] = _LOCAL.__dict__.setdefault("connections", {})
        for attempt in (1, 2):
            conn = pool.get(key)
            if conn is None:
                kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
                conn = pool[key] = kind(parts.netloc, timeout=self.timeout)
                with self.lock:
                    self.opened.append(conn)
            try:
                deadline = None if self.timeout is None else time.monotonic() + self.timeout
                conn.request(self.method, target, body=data, headers=headers)
                response = conn.getresponse()
                return response.status, response.reason, _read_bounded(conn, response, deadline)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                pool.pop(key, None)
                if attempt == 2:
                    raise ConnectionError(f"{self.method} {parts.geturl()}: {exc}") from None
            except ConnectionRefusedError as exc:  # say where: "[Errno 111] Connection refused" alone names nothing
                conn.close()
                pool.pop(key, None)
                raise ConnectionError(f"{self.method} {parts.geturl()}: {exc.strerror or exc}") from None
            except BaseException:
                conn.close()
                pool.pop(key, None)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _number(reply: Any, path: str | None, kind: type[int] | type[float]) -> Any:
        if path is None:
            return None
        try:
            value = at_path(reply, path)
        except KeyError:
            return None  # usage is optional: an endpoint reports it on some replies only
        return kind(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _read_bounded(conn: http.client.HTTPConnection, response: http.client.HTTPResponse,
                  deadline: float | None) -> bytes:
    """The reply's body by the deadline of the whole reply (not of each wait: a server dripping bytes
    would renew that forever) and at most :data:`MAX_REPLY_BYTES` of it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the reply did not end within the deadline")
            if conn.sock is not None:
                conn.sock.settimeout(left)
        chunk = response.read1(65536)
        if not chunk:
            response.read()  # closes the exchange (read1 does not at the end of a sized body)
            if conn.sock is not None:
                conn.sock.settimeout(conn.timeout)  # the kept-alive connection's next request waits as declared
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise ValueError(f"the reply is longer than {limits.size_text(MAX_REPLY_BYTES)}")
        chunks.append(chunk)


@dataclass(frozen=True)
class CommandCall:
    argv: tuple[str, ...]
    timeout: float | None = None
    cwd: str | None = None

    def __call__(self, query: Query) -> Any:
        argv = [fill(arg, query) for arg in self.argv]
        try:
            # its own process group: a deadline ends the command and every process it started
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.cwd,
                                       start_new_session=True)
        except FileNotFoundError:
            raise FileNotFoundError(f"command not found: {argv[0]!r}") from None
        try:
            out, err = process.communicate(timeout=self.timeout)
        except BaseException:
            _kill_group(process)
            raise
        finally:
            _kill_group(process)  # children left running after the command exited
        if len(out) > MAX_REPLY_BYTES:
            raise ValueError(f"the command's output is longer than {limits.size_text(MAX_REPLY_BYTES)}")
        if process.returncode != 0:
            lines = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            tail = " / ".join(line.strip() for line in lines) or "(no stderr)"
            raise RuntimeError(f"command {argv[0]!r} exited with {process.returncode}: {tail}")
        return out.decode("utf-8", "replace").strip()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        process.kill()
        process.communicate()
