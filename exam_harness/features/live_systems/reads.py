"""The files a Python system opens while it is called, seen through an audit hook (PEP 578, ``open`` events),
so that a config or a prompt template it reads from disk without ``files=`` is covered all the same.

Each call of a Python system runs with its own :class:`Opened` in a context variable (a sync call in its
worker thread, an async one in its task); the hook, installed once per process, notes every file opened
while one is set: opened for reading, or for writing. What a call read and never wrote is an input of its
answer; :func:`project_reads` keeps those under the project root (not the runs folder, not the harness's
or an installed package's files, not compiled modules) with their digests, which the recording keeps per
query (recording.py), so an edited file makes the answers that read it stale. Files opened by
threads the system starts itself, or by a command system's process, are not seen.
"""

from __future__ import annotations

import contextvars
import inspect
import os
import sys
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
A = TypeVar("A")
_THIRD_PARTY = ("site-packages", "dist-packages", "__pycache__", ".git")
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


@dataclass
class Opened:
    """The paths one call opened: for reading, and for writing (a file it writes is its state, not an input)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)

    def inputs(self) -> frozenset[str]:
        return frozenset(self.read - self.written)


_CURRENT: contextvars.ContextVar[Opened | None] = contextvars.ContextVar("exam_harness_opened", default=None)
_installed = threading.Lock()
_hooked: list[bool] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open":
        return
    opened = _CURRENT.get()
    if opened is None or not args:
        return
    path, mode, flags = (*args, None, None)[:3]
    if isinstance(path, int) or path is None:
        return  # an open file descriptor: opened before, by its path
    try:
        name = os.fsdecode(path)
    except (TypeError, ValueError):
        return
    writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        mode is None and isinstance(flags, int) and bool(flags & _WRITES))
    (opened.written if writes else opened.read).add(os.path.abspath(name))


def install() -> None:
    """The audit hook, once per process (an audit hook cannot be removed: it does nothing unless a call is
    being watched)."""
    with _installed:
        if not _hooked:
            sys.addaudithook(_hook)
            _hooked.append(True)


def watched(call: Callable[[A], T], argument: A, opened: Opened) -> T:
    """``call(argument)`` with what it opens noted in ``opened`` (a sync call, in the thread that runs it)."""
    token = _CURRENT.set(opened)
    try:
        return call(argument)
    finally:
        _CURRENT.reset(token)


async def watched_async(make: Callable[[], Any], opened: Opened) -> Any:
    """``await make()`` with what it opens noted in ``opened`` (its task's own context). The system's coroutine
    is made here, when the task first runs: a task cancelled before that (its deadline passed while the system
    blocked its loop) then leaves no coroutine of the system's behind that was never awaited."""
    _CURRENT.set(opened)
    awaitable = make()
    if not inspect.isawaitable(awaitable):
        raise TypeError(f"an async system returned {type(awaitable).__name__}, not an awaitable")
    return await awaitable


def project_reads(paths: Collection[str], root: Path, *, skip: Collection[Path] = (),
                  covered: Collection[str] = (), digest: Callable[[Path], str]) -> dict[str, str]:
    """``paths`` (opened for reading) that are project files: regular files under ``root``, not under a
    folder of ``skip`` (the runs folder) nor a package's or the harness's own, not compiled modules, not
    already covered by the fingerprint (``covered``: its labels); path relative to ``root`` -> digest."""
    harness = Path(__file__).resolve().parents[2]  # the exam_harness package: the harness's own files
    skipped = [Path(p).resolve() for p in skip]
    found: dict[str, str] = {}
    for name in sorted(paths):
        path = Path(name)
        try:
            resolved = path.resolve()
            rel = resolved.relative_to(root)
        except (ValueError, OSError, RuntimeError):
            continue
        label = rel.as_posix()
        if (any(part in _THIRD_PARTY for part in rel.parts) or resolved.suffix in (".pyc", ".pyo")
                or resolved.is_relative_to(harness) or any(resolved.is_relative_to(s) for s in skipped)
                or f"file {label}" in covered or f"module {label}" in covered):
            continue
        try:
            if not resolved.is_file():
                continue
            found[label] = digest(resolved)
        except OSError:
            continue
    return found
