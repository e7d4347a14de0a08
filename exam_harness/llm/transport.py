"""The grading hot loop's HTTP client: pooled HTTP/1.1 keep-alive connections to one server on asyncio streams.

Why not the ``openai`` SDK here: against a local server that answers at once, a request through
``AsyncOpenAI`` costs milliseconds of this process's CPU (the SDK's request transforms, httpx's connection
pool and anyio's socket layers: 2-3 ms measured on a loaded 2-core machine), a request through this pool
about a tenth of that (``benchmarks/grading_throughput.py --openai`` measures the grader on it beside an
SDK loop and a raw asyncio client). The SDK still gives the request headers (its
authentication, organisation, project and user agent: :func:`exam_harness.llm.openai.sdk_headers`), the
batch files and jobs, and the whole path when a proxy is configured (this pool speaks to the server
directly; :func:`proxy_for` says when one applies).

What it does: ``POST`` a JSON body, read the whole answer (``Content-Length``, chunked, or until the
server closes: h11 parses, it is the openai SDK's own HTTP/1.1 parser), keep the connection for the next
request when both sides allow it. It raises :class:`ConnectionFailed` when no HTTP answer came (refused,
reset, closed early, not HTTP, larger than :data:`MAX_RESPONSE_BYTES`); any status is a
:class:`Response`, judged by the caller. Deadlines are the caller's (``asyncio.timeout`` around
:meth:`HTTPPool.post`): a cancelled request closes its connection, which is never reused half-read.
No compression is asked for, no redirect followed, no HTTP/2.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import h11

from exam_harness.core.errors import ConfigError

# An answer is a few hundred bytes (a grade and its logprobs); a server sending more than this is refused
# rather than read into memory.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# A kept connection idle longer than this is closed rather than reused: servers close idle keep-alive
# connections after a few seconds (uvicorn, which vLLM runs on: 5 s), and a request sent just as the server
# closes would fail.
IDLE_SECONDS = 4.0
READ_CHUNK = 64 * 1024


class ConnectionFailed(Exception):
    """No HTTP answer to a request: the connection was refused, reset or closed before a whole answer,
    or what came back was not HTTP. ``connected``: the request reached an open connection (a server that
    accepts connections and then fails them is up; one that refuses them is not)."""

    def __init__(self, message: str, *, connected: bool) -> None:
        super().__init__(message)
        self.connected = connected


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # names lower-cased; a repeated header keeps its last value
    body: bytes


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    protocol: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    idle_since: float = 0.0
    answered: int = 0  # requests this connection answered

    def reusable(self, now: float) -> bool:
        return (self.protocol.our_state is h11.IDLE and not self.reader.at_eof()
                and not self.writer.is_closing() and now - self.idle_since < IDLE_SECONDS)

    def close(self) -> None:
        self.writer.close()  # no wait for the close handshake: the event loop finishes it


class HTTPPool:
    """Keep-alive connections to the server of ``base_url`` (``http`` or ``https``); at most ``limit`` are
    kept idle between requests (the caller bounds how many are in flight)."""

    def __init__(self, base_url: str, headers: Mapping[str, str], *, limit: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.tls = _tls_context() if parts.scheme == "https" else None
        authority = parts.netloc.rpartition("@")[2]  # no credentials in a Host header
        # the SDK's headers less those this pool writes per request
        kept = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length", "connection",
                                                                      "transfer-encoding", "accept-encoding")}
        self.headers: list[tuple[str, str]] = [("Host", authority), *kept.items()]
        try:  # h11 checks the headers as it would per request: a value with a line break is no header
            h11.Request(method="POST", target="/", headers=self.headers)
        except h11.LocalProtocolError:
            bad = [name for name, value in self.headers if "\n" in value or "\r" in value or "\0" in value]
            raise ConfigError(f"request header {', '.join(bad) or 'name'} is not a valid HTTP header value "
                              "(a line break or NUL in it; is the API key pasted whole?)") from None
        self.limit = max(1, limit)
        self.clock = clock
        self._idle: list[_Connection] = []
        self.opened = 0  # connections opened (reuse shows as opened < requests)

    def url(self, path: str) -> str:
        return self.prefix + path

    async def post(self, path: str, body: bytes) -> Response:
        """The server's answer to ``POST {base path}{path}`` with a JSON ``body``."""
        connection = self._take_idle()
        if connection is not None:
            try:
                return await self._exchange(connection, path, body)
            except _StaleConnection:
                pass  # the server closed a kept connection before reading the request: send it on a new one
        return await self._exchange(await self._open(), path, body)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        for connection in idle:
            # closing a connection the server already dropped: nothing left to release
            with contextlib.suppress(OSError, ssl.SSLError):
                await connection.writer.wait_closed()

    # -- connections -------------------------------------------------------------------------------
    def _take_idle(self) -> _Connection | None:
        now = self.clock()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now):
                return connection
            connection.close()
        return None

    async def _open(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None,
                limit=READ_CHUNK)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectionFailed(_describe(exc), connected=False) from exc
        self.opened += 1
        return _Connection(reader, writer)

    async def _exchange(self, connection: _Connection, path: str, body: bytes) -> Response:
        reused = connection.answered > 0
        protocol = connection.protocol
        done = False
        received = False
        try:
            head = h11.Request(method="POST", target=self.url(path),
                               headers=[*self.headers, ("Content-Length", str(len(body)))])
            connection.writer.write(_bytes(protocol.send(head)) + _bytes(protocol.send(h11.Data(data=body)))
                                    + _bytes(protocol.send(h11.EndOfMessage())))
            await connection.writer.drain()
            status, size = 0, 0
            headers: dict[str, str] = {}
            chunks: list[bytes] = []
            while True:
                event = protocol.next_event()
                if event is h11.NEED_DATA:
                    data = await connection.reader.read(READ_CHUNK)
                    received = received or bool(data)
                    protocol.receive_data(data)  # b"" is the server closing: h11 then knows what it means
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                    headers = {name.decode("latin-1").lower(): value.decode("latin-1")
                               for name, value in event.headers}
                elif isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > MAX_RESPONSE_BYTES:
                        raise ConnectionFailed(f"the answer is larger than {MAX_RESPONSE_BYTES} bytes",
                                               connected=True)
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise h11.RemoteProtocolError("the server closed the connection before a whole answer")
                # h11.InformationalResponse (100 Continue) and the like: read on
            done = True
        except h11.ProtocolError as exc:
            if reused and not received:
                raise _StaleConnection from exc
            raise ConnectionFailed(f"server closed the connection or sent no HTTP answer ({exc})",
                                   connected=True) from exc
        except (OSError, ssl.SSLError) as exc:
            if reused and not received:
                raise _StaleConnection from exc
            raise ConnectionFailed(_describe(exc), connected=True) from exc
        finally:
            if not done:  # failed or cancelled half-way: the connection's state is unknown, never reused
                connection.close()
        self._keep(connection)
        return Response(status, headers, b"".join(chunks))

    def _keep(self, connection: _Connection) -> None:
        """Keep an answered connection for the next request when both sides allow it (HTTP/1.1 without
        ``Connection: close``); close it otherwise."""
        connection.answered += 1
        protocol = connection.protocol
        if protocol.our_state is h11.DONE and protocol.their_state is h11.DONE and len(self._idle) < self.limit:
            protocol.start_next_cycle()
            connection.idle_since = self.clock()
            self._idle.append(connection)
        else:
            connection.close()


class _StaleConnection(Exception):
    """A kept connection the server had closed: nothing of the answer arrived, so the request goes again."""


def _bytes(data: bytes | None) -> bytes:
    return data or b""


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def _tls_context() -> ssl.SSLContext:
    """The system's trust store (OpenSSL honours SSL_CERT_FILE and SSL_CERT_DIR), with certifi's bundle beside
    it where it is installed (the openai SDK's own trust store, so a host it trusts is trusted here too)."""
    context = ssl.create_default_context()
    try:
        import certifi
    except ImportError:
        return context
    context.load_verify_locations(cafile=certifi.where())
    return context


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, less NO_PROXY), or None."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy
