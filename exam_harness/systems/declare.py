"""Declaring live systems: ``@exam_harness.system``, ``exam_harness.http_system``,
``exam_harness.command_system``, and what a system is asked and may answer.

A declaration registers the system under its name for the session (module-level, like a pytest
plugin registering itself on import). Its *fingerprint* is a hash of what decides its answers: the
function's source (or the command, or the URL, method and body template) plus the ``version`` the
user gives; a recording made under another fingerprint is stale.
"""

from __future__ import annotations

import hashlib
import inspect
import marshal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from exam_harness.errors import ConfigError
from exam_harness.models import Query
from exam_harness.paths import shown_path
from exam_harness.systems.answers import Answer, Passage, Sentence

Kind = Literal["answer", "ranking"]
KINDS: tuple[Kind, ...] = ("answer", "ranking")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0  # seconds per call
DEFAULT_BACKOFF = 0.5  # seconds before the first retry, doubled before each further one

__all__ = ["Answer", "Passage", "Query", "Sentence", "System", "command_system", "declared", "http_system", "system"]


@dataclass(frozen=True)
class System:
    """A declared system: how to call it, and the fingerprint of what decides its answers."""

    name: str
    call: Callable[[Query], Any]
    kind: Kind
    concurrency: int
    timeout: float | None
    retries: int
    backoff: float
    version: str | None
    fingerprint: str
    origin: str  # where it was declared, for messages
    form: str  # "python", "http" or "command"
    is_async: bool = False
    own_deadline: bool = False  # the call keeps the deadline itself (socket or process timeout)
    describe: Mapping[str, Any] = field(default_factory=dict)  # shown in the manifest (no secrets)


_SYSTEMS: dict[str, System] = {}


def declared() -> list[System]:
    """The systems declared so far, in declaration order."""
    return list(_SYSTEMS.values())


def clear() -> None:
    """Forget every declaration (the plugin does this when a session ends)."""
    _SYSTEMS.clear()


def _register(found: System) -> System:
    known = _SYSTEMS.get(found.name)
    if known is not None and known.origin != found.origin:
        raise ConfigError(f"system {found.name!r} is declared twice: at {known.origin} and at {found.origin}; "
                          "give each system its own name")
    _SYSTEMS[found.name] = found  # the same declaration again (a re-imported conftest) replaces itself
    return found


def _check(name: str, kind: str, concurrency: int, timeout: float | None, retries: int) -> None:
    if not isinstance(name, str) or not name.strip() or any(ch.isspace() or ch in "/\\" for ch in name):
        raise ConfigError(f"system name must be a name without spaces or slashes, got {name!r}")
    if kind not in KINDS:
        raise ConfigError(f"system {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"system {name!r}: concurrency must be an integer >= 1, got {concurrency!r}")
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"system {name!r}: timeout must be a number of seconds > 0 (or None), got {timeout!r}")
    if not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"system {name!r}: retries must be an integer >= 0, got {retries!r}")


def fingerprint(kind: str, *parts: str, version: str | None) -> str:
    digest = hashlib.sha256()
    for part in (kind, *parts, version or ""):
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()[:16]


def _source_of(fn: Callable[..., Any]) -> str:
    """The function's source; without one (defined in a REPL) its compiled code."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return marshal.dumps(code).hex() if code is not None else repr(fn)


def _shown(filename: str, line: int) -> str:
    """Where a declaration is, relative to the current folder when under it (manifests go into git)."""
    return f"{Path(shown_path(filename)).as_posix()}:{line}"


def _caller(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return _shown(frame.f_code.co_filename, frame.f_lineno)


def system(
    name: str, *, kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0, backoff: float = DEFAULT_BACKOFF,
    version: str | None = None,
) -> Callable[[F], F]:
    """Declare the decorated function (sync or async, taking a :class:`Query`) as a system taking the exam.

    ``kind="answer"``: it returns the generated text (a ``str``) or an :class:`Answer`.
    ``kind="ranking"``: it returns passages in rank order: texts, ``(id, text)`` pairs or :class:`Passage`.
    At most ``concurrency`` calls run at once; a call past ``timeout`` seconds fails; a failed call is
    tried ``retries`` more times, waiting ``backoff`` seconds, then twice that, and so on.
    """
    _check(name, kind, concurrency, timeout, retries)

    def decorate(fn: F) -> F:
        code = getattr(fn, "__code__", None)
        origin = _shown(code.co_filename, code.co_firstlineno) if code is not None else repr(fn)
        _register(System(
            name=name, call=fn, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
            version=version, fingerprint=fingerprint(kind, _source_of(fn), version=version), origin=origin,
            form="python", is_async=inspect.iscoroutinefunction(fn),
            describe={"function": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"},
        ))
        return fn

    return decorate


def http_system(
    name: str, url: str, *, body: Any = None, answer: str = "answer", method: str | None = None,
    headers: Mapping[str, str] | None = None, tokens: str | None = None, cost: str | None = None,
    kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY, timeout: float | None = DEFAULT_TIMEOUT,
    retries: int = 0, backoff: float = DEFAULT_BACKOFF, version: str | None = None,
) -> System:
    """Declare an HTTP endpoint as a system. ``url`` and every string in the JSON ``body`` template are
    formatted with the query (``{query.id}``, ``{query.text}``; values in the URL are percent-encoded);
    the request is a POST with that body (a GET without one); ``answer`` is the dotted JSON path of the
    answer in the reply (``data.answer``, ``hits.0.text``), ``tokens``/``cost`` those of the usage when the
    endpoint reports it. ``headers`` (e.g. an API key) are sent but left out of the fingerprint and manifest.
    """
    from exam_harness.systems.forms import HttpCall

    _check(name, kind, concurrency, timeout, retries)
    verb = (method or ("POST" if body is not None else "GET")).upper()
    call = HttpCall(url=url, body=body, answer=answer, method=verb, headers=dict(headers or {}), tokens=tokens,
                    cost=cost, timeout=timeout)
    import json

    shown = {"url": url, "method": verb, "body": body, "answer": answer}
    return _register(System(
        name=name, call=call, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        version=version, fingerprint=fingerprint(kind, "http", json.dumps(shown, sort_keys=True, default=str),
                                                 version=version),
        origin=_caller(), form="http", own_deadline=True, describe=shown,
    ))


def command_system(
    name: str, argv: Sequence[str], *, kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0, backoff: float = DEFAULT_BACKOFF,
    version: str | None = None, cwd: str | None = None,
) -> System:
    """Declare a command as a system: each argument is formatted with the query (``{query.id}``,
    ``{query.text}``), no shell; its standard output is the answer (for ``kind="ranking"``, a JSON array
    of passages). A non-zero exit fails the call with the end of its standard error."""
    from exam_harness.systems.forms import CommandCall

    _check(name, kind, concurrency, timeout, retries)
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise ConfigError(f"system {name!r}: the command must be a list of strings (no shell), got {argv!r}")
    call = CommandCall(argv=tuple(argv), timeout=timeout, cwd=cwd)
    return _register(System(
        name=name, call=call, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        version=version, fingerprint=fingerprint(kind, "command", "\0".join(argv), version=version),
        origin=_caller(), form="command", own_deadline=True, describe={"command": list(argv)},
    ))
