"""One registry type for every extension point: graders, bank formats, run formats, measures, reporters.

Entries are objects or lazy ``"module:attr"`` strings, imported on first use, so importing the
package never imports a model library. Unknown names answer "Did you mean ...? Available: ...".
Plugins fill the registries through the ``pytest_exam_register_*`` hooks (``hookspecs.py``), the
same way in a pytest session and in the ``exam-harness`` command line (``extensions.py``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, cast

from exam_harness.core.errors import ConfigError

T = TypeVar("T")


def unknown_name_message(what: str, name: str, available: list[str]) -> str:
    close = difflib.get_close_matches(name, available, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {what} {name!r}.{hint} Available: {', '.join(available) or '(none)'}"


class Registry(Generic[T]):
    """Name -> entry, in registration order; ``kind`` names the extension point in messages.

    ``problem``, when given, says why an entry cannot serve (None when it can); it is asked on register
    and, for a lazy ``"module:attr"`` entry, when the entry is imported, so that a wrong entry fails
    where it is registered or named, not in the middle of a run (lm-eval's registry checks the base
    class the same way)."""

    def __init__(self, kind: str, *, install_hint: str = "", problem: Callable[[object], str | None] | None = None
                 ) -> None:
        self.kind = kind
        self.install_hint = install_hint
        self._problem = problem
        self._entries: dict[str, T | str] = {}
        self._descriptions: dict[str, str] = {}

    def register(self, name: str, entry: T | str, description: str = "", *, replace: bool = False,
                 before: str | None = None) -> None:
        """Add ``entry`` under ``name``, last, or just ``before`` that name where it is registered (an in-tree
        feature's section keeps the place among the built-in ones that documents and views have shown it in)."""
        if not name or any(ch.isspace() for ch in name):
            raise ConfigError(f"{self.kind} name must be a non-empty word, got {name!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"{self.kind} {name!r} is registered twice; pass replace=True to override it")
        if not isinstance(entry, str):
            self._check(name, entry)
        self._entries[name] = entry
        self._descriptions[name] = description
        if before is not None and before in self._entries and before != name:
            order = list(self._entries)
            order.remove(name)
            order.insert(order.index(before), name)
            self._entries = {key: self._entries[key] for key in order}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def describe(self) -> dict[str, str]:
        return {name: self._descriptions.get(name, "") for name in self._entries}

    def get(self, name: str) -> T:
        """The entry (imported if it was given as ``"module:attr"``); ConfigError for an unknown name."""
        try:
            entry = self._entries[name]
        except KeyError:
            raise ConfigError(unknown_name_message(self.kind, name, sorted(self._entries))) from None
        if isinstance(entry, str):
            entry = cast(T, self._import(name, entry))
            self._check(name, entry)
            self._entries[name] = entry
        return entry

    def _check(self, name: str, entry: object) -> None:
        problem = self._problem(entry) if self._problem is not None else None
        if problem is not None:
            raise ConfigError(f"{self.kind} {name!r}: {problem}")

    def values(self) -> Iterator[T]:
        """Every entry in registration order, imported (for registries whose entries are all used)."""
        for name in list(self._entries):
            yield self.get(name)

    def _import(self, name: str, ref: str) -> object:
        module_name, _, attr = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f"; {self.install_hint}" if self.install_hint else ""
            raise ConfigError(
                f"{self.kind} {name!r} needs a package that is not installed ({exc.name or exc}){hint}"
            ) from exc
        try:
            return cast(object, getattr(module, attr))
        except AttributeError:
            raise ConfigError(f"{self.kind} {name!r}: {module_name} has no attribute {attr!r}") from None
