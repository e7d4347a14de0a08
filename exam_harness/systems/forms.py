"""The HTTP and command forms of a system: callables taking a :class:`Query`, built by the declarations."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from exam_harness.models import Query
from exam_harness.systems.declare import Answer


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

    def __call__(self, query: Query) -> Any:
        url = self.url.format(query=_Quoted(query))
        data = None if self.body is None else json.dumps(fill(self.body, query)).encode("utf-8")
        headers = {"Accept": "application/json", **self.headers}
        if data is not None:
            headers.setdefault("Content-Type", "application/json")
        request = urllib.request.Request(url, data=data, method=self.method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace").strip()
            raise RuntimeError(f"HTTP {exc.code} {exc.reason} from {self.method} {url}: {detail}") from None
        try:
            reply = json.loads(raw)
        except ValueError:
            raise ValueError(f"the reply of {self.method} {url} is not JSON: {raw[:120]!r}") from None
        value = at_path(reply, self.answer)
        if isinstance(value, str):
            return Answer(value, tokens=self._number(reply, self.tokens, int),
                          cost=self._number(reply, self.cost, float))
        return value

    @staticmethod
    def _number(reply: Any, path: str | None, kind: type[int] | type[float]) -> Any:
        if path is None:
            return None
        try:
            value = at_path(reply, path)
        except KeyError:
            return None  # usage is optional: an endpoint reports it on some replies only
        return kind(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CommandCall:
    argv: tuple[str, ...]
    timeout: float | None = None
    cwd: str | None = None

    def __call__(self, query: Query) -> Any:
        argv = [fill(arg, query) for arg in self.argv]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, cwd=self.cwd, check=False)
        except FileNotFoundError:
            raise FileNotFoundError(f"command not found: {argv[0]!r}") from None
        if done.returncode != 0:
            tail = " / ".join(line.strip() for line in done.stderr.strip().splitlines()[-3:]) or "(no stderr)"
            raise RuntimeError(f"command {argv[0]!r} exited with {done.returncode}: {tail}")
        return done.stdout.strip()
