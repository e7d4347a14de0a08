"""Declaring live systems: ``@exam_harness.system``, ``exam_harness.http_system``,
``exam_harness.command_system``, and what a system is asked and may answer.

A declaration registers the system under its name for the session (module-level, like a pytest
plugin registering itself on import). Its *fingerprint* is a hash of what decides its answers
(:mod:`exam_harness.features.live_systems.fingerprint`): the function and the project modules it reaches (or the
command and the project files it names, or the URL, method and body template), the ``files`` and the
``version`` the user gives; a recording made under another fingerprint is stale. Secrets a declaration
names stay out of it (:mod:`exam_harness.features.live_systems.secrets`).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from exam_harness.core.errors import ConfigError
from exam_harness.core.ids import name_problem
from exam_harness.core.models import Query
from exam_harness.core.paths import shown_path
from exam_harness.features.live_systems import fingerprint as covering
from exam_harness.features.live_systems.answers import Answer, Passage, Sentence
from exam_harness.features.live_systems.secrets import Secret, is_credential_name, remember, shown

Kind = Literal["answer", "ranking"]
KINDS: tuple[Kind, ...] = ("answer", "ranking")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0  # seconds per call
DEFAULT_BACKOFF = 0.5  # seconds before the first retry, doubled before each further one
MAX_TIMEOUT = 86_400.0  # a day: a longer deadline is a mistake (and inf overflows every wait)
MAX_BACKOFF = 3_600.0
Version = str | Callable[[], object] | None
Files = Sequence[str | Path] | str | Path

__all__ = ["Answer", "Passage", "Query", "Secret", "Sentence", "System", "command_system", "declared", "http_system",
           "system"]


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
    covers: Mapping[str, str] = field(default_factory=dict)  # what the fingerprint covers: label -> digest
    root: Path | None = None  # the project root its fingerprint and the files its calls read are relative to


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


def _check(name: str, kind: str, concurrency: int, timeout: float | None, retries: int, backoff: float) -> None:
    if (why := name_problem(name, "system name")) is not None:  # the one id rule: its files are named after it
        shown = name[:100] if isinstance(name, str) else name
        raise ConfigError(f"{why}, got {shown!a}")
    if kind not in KINDS:
        raise ConfigError(f"system {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"system {name!r}: concurrency must be an integer >= 1, got {concurrency!r}")
    if timeout is not None and not (_number(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise ConfigError(f"system {name!r}: timeout must be a number of seconds > 0 and at most {MAX_TIMEOUT:g} "
                          f"(or None), got {timeout!r}")
    if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 100:
        raise ConfigError(f"system {name!r}: retries must be an integer from 0 to 100, got {retries!r}")
    if not (_number(backoff) and 0 <= backoff <= MAX_BACKOFF):
        raise ConfigError(f"system {name!r}: backoff must be a number of seconds from 0 to {MAX_BACKOFF:g}, "
                          f"got {backoff!r}")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _shown(filename: str, line: int) -> str:
    """Where a declaration is, relative to the current folder when under it (manifests go into git)."""
    return f"{Path(shown_path(filename)).as_posix()}:{line}"


def _caller(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return _shown(frame.f_code.co_filename, frame.f_lineno)


def system(
    name: str, *, kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0, backoff: float = DEFAULT_BACKOFF,
    version: Version = None, files: Files = (),
) -> Callable[[F], F]:
    """Declare the decorated function (sync or async, taking a :class:`Query`) as a system taking the exam.

    ``kind="answer"``: it returns the generated text (a ``str``) or an :class:`Answer`.
    ``kind="ranking"``: it returns passages in rank order: texts, ``(id, text)`` pairs or :class:`Passage`.
    At most ``concurrency`` calls run at once; a call gets ``timeout`` seconds, retries included; a failed
    call is tried ``retries`` more times, waiting ``backoff`` seconds, then twice that, and so on.
    The fingerprint covers the function, the project modules it reaches, ``files`` (paths, folders or
    glob patterns under the project root) and ``version`` (a text, or a callable returning one).
    """
    _check(name, kind, concurrency, timeout, retries, backoff)

    def decorate(fn: F) -> F:
        code = getattr(fn, "__code__", None)
        origin = _shown(code.co_filename, code.co_firstlineno) if code is not None else repr(fn)
        text = covering.version_text(version, origin)
        covers = covering.python_covers(fn, _files(files), text, origin)
        _register(System(
            name=name, call=fn, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
            version=text, fingerprint=covering.combined(kind, covers), origin=origin,
            form="python", is_async=inspect.iscoroutinefunction(fn),
            describe={"function": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"},
            covers=covers, root=covering.project_root(Path(code.co_filename).parent if code is not None
                                                      else Path.cwd()),
        ))
        return fn

    return decorate


def _files(files: Files) -> list[str | Path]:
    return [files] if isinstance(files, (str, Path)) else list(files)


def _masked_url(url: str) -> str:
    """The URL with the values of credential-like query parameters (and a ``user:password@``) masked,
    each remembered as a secret."""
    parts = urllib.parse.urlsplit(url)
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    masked = []
    for key, value in pairs:
        if is_credential_name(key) and "{" not in value:
            remember(value)
            remember(urllib.parse.quote(value, safe=""))
            value = "***"
        masked.append((key, value))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        remember(userinfo.partition(":")[2])
        netloc = f"***@{host}"
    query = urllib.parse.urlencode(masked, safe="{}*") if pairs else parts.query
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked(template: Any) -> Any:
    """A body template as the manifest shows it: every :class:`Secret` masked."""
    if isinstance(template, str):
        return shown(template)
    if isinstance(template, list):
        return [_masked(item) for item in template]
    if isinstance(template, dict):
        return {key: _masked(value) for key, value in template.items()}
    return template


def http_system(
    name: str, url: str, *, body: Any = None, answer: str = "answer", method: str | None = None,
    headers: Mapping[str, str] | None = None, tokens: str | None = None, cost: str | None = None,
    kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY, timeout: float | None = DEFAULT_TIMEOUT,
    retries: int = 0, backoff: float = DEFAULT_BACKOFF, version: Version = None, files: Files = (),
) -> System:
    """Declare an HTTP endpoint as a system. ``url`` and every string in the JSON ``body`` template are
    formatted with the query (``{query.id}``, ``{query.text}``; values in the URL are percent-encoded);
    the request is a POST with that body (a GET without one); ``answer`` is the dotted JSON path of the
    answer in the reply (``data.answer``, ``hits.0.text``), ``tokens``/``cost`` those of the usage when the
    endpoint reports it. ``headers`` (e.g. an API key) are sent but left out of the fingerprint, the
    manifest and every message, as are credential-like URL query values and :class:`Secret` body values.
    """
    from exam_harness.features.live_systems.forms import HttpCall

    _check(name, kind, concurrency, timeout, retries, backoff)
    origin = _caller()
    for header, value in (headers or {}).items():
        if not isinstance(value, str) or "\r" in value or "\n" in value:
            raise ConfigError(f"system {name!r}: header {header!r} must be one line of text (a key read from a file "
                              "keeps its line break: .strip() it)")
        remember(value)
        remember(value.partition(" ")[2])  # the credential of 'Bearer <key>'
    verb = (method or ("POST" if body is not None else "GET")).upper()
    call = HttpCall(url=url, body=body, answer=answer, method=verb, headers=dict(headers or {}), tokens=tokens,
                    cost=cost, timeout=timeout)
    import json

    described = {"url": _masked_url(url), "method": verb, "body": _masked(body), "answer": answer}
    text = covering.version_text(version, origin)
    covers = {"request": _text_digest(json.dumps(described, sort_keys=True, default=str)),
              **covering.plain_covers(_files(files), text, origin)}
    return _register(System(
        name=name, call=call, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        version=text, fingerprint=covering.combined(kind, covers), origin=origin, form="http", own_deadline=True,
        describe=described, covers=covers,
    ))


def command_system(
    name: str, argv: Sequence[str], *, kind: Kind = "answer", concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_TIMEOUT, retries: int = 0, backoff: float = DEFAULT_BACKOFF,
    version: Version = None, cwd: str | None = None, files: Files = (),
) -> System:
    """Declare a command as a system: each argument is formatted with the query (``{query.id}``,
    ``{query.text}``), no shell; its standard output is the answer (for ``kind="ranking"``, a JSON array
    of passages). A non-zero exit fails the call with the end of its standard error. Arguments that
    name project files are covered by the fingerprint; a :class:`Secret` argument is not shown anywhere."""
    from exam_harness.features.live_systems.forms import CommandCall

    _check(name, kind, concurrency, timeout, retries, backoff)
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise ConfigError(f"system {name!r}: the command must be a list of strings (no shell), got {argv!r}")
    origin = _caller()
    call = CommandCall(argv=tuple(argv), timeout=timeout, cwd=cwd)
    described = [shown(a) for a in argv]
    text = covering.version_text(version, origin)
    covers = {"command": _text_digest("\0".join(described)),
              **covering.command_covers([a for a in argv if not isinstance(a, Secret)], cwd, _files(files), text,
                                        origin)}
    return _register(System(
        name=name, call=call, kind=kind, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        version=text, fingerprint=covering.combined(kind, covers), origin=origin, form="command", own_deadline=True,
        describe={"command": described}, covers=covers,
    ))
