"""Merging grade caches: the shards of one grading pass (``--exam-shard``), graded on several machines.

:func:`merge_caches` reads every input cache (each opened, checked and migrated like any cache) and writes
their grades, with those the output already holds, into the output (docs/shards.md):

* **The output is merged into, never replaced.** An output that is a grade cache is one more input, read
  first: every grade it held is kept. An output that is anything else (a user's text file, another
  program's database, a folder, a device) is refused before any input is read, and so is a place that
  cannot be written (a read-only file or folder); all are usage errors (exit status 4).
* **Every row is checked** by the cache's own row rules (:meth:`GradeCache.checked_rows`: a grade in range,
  a record that is a grade's JSON, a 32-byte key); a damaged row is left out and said, naming its file, its
  position and key and why (it is graded again where it is needed), never copied.
* **Conflicts are refused**: a key two inputs hold with different grades names the key, both files and
  both grades, and nothing is written. A key held twice with one grade is one grade (the first's row).
* **One merge at a time per folder.** The output's folder is locked (a lock on the folder itself, as the
  report writers take it) for the whole merge: a second merge into it waits, then merges into what the first
  wrote. The output is built beside its path under a name unique to the process
  (``.NAME.merging-PID``), moved into place when complete, and opened again to check that it holds what was
  written; partial files a killed merge left are removed by the next merge into that folder.
* **The shards are recorded.** Each ``--exam-shard`` session notes its shard in its cache; the output records the
  shards its inputs held (inputs of different splits are refused), so a session over it that lacks pairs names the
  shards they are of and grades nothing unless told to (grading/passes.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness.core.display import print_notice
from exam_harness.core.errors import ConfigError
from exam_harness.grading.cache import GradeCache, Row, inspect_cache_file
from exam_harness.io.textio import locked_folder, output_target

_SHOWN_PER_INPUT = 10  # damaged rows named per input; the rest are counted


@dataclass
class MergeResult:
    """What one merge wrote."""

    written: int  # grades the output holds now
    duplicates: int  # keys held by more than one input (the output included) with the same grade
    kept: int  # grades the output held before the merge (all kept)
    left_out: list[str] = field(default_factory=list)  # one line per damaged row left out


def merge_caches(inputs: Sequence[Path], output: Path, *, notify: Callable[[str], None] = print_notice
                 ) -> MergeResult:
    """Merge ``inputs`` into the grade cache at ``output`` (created when missing). Conflicting grades for one
    key, an output that is no grade cache, or one that cannot be written: a ConfigError, nothing written."""
    if not inputs:
        raise ConfigError("cache merge needs at least one input cache")
    target = _output_target(Path(output))
    for path in inputs:
        if not Path(path).is_file():
            raise ConfigError(f"cache merge: {path} is not a file")
    with locked_folder(target.parent, on_wait=lambda: notify(
            f"cache merge: another merge into {target.parent} is running; waiting for it to finish")):
        _remove_partials(target)
        base = inspect_cache_file(target) is not None  # checked again under the lock: another merge made it
        sources = [target] if base else []
        sources += [Path(p) for p in inputs if Path(os.path.realpath(p)) != target]  # the output is read once
        merged: dict[bytes, tuple[Row, Path]] = {}
        duplicates = kept = 0
        left_out: list[str] = []
        shards: dict[Path, tuple[int, frozenset[int]]] = {}
        for number, path in enumerate(sources):
            rows = _rows_of(path, left_out, notify, shards)
            if number == 0 and base:
                kept = len(rows)
            for row in rows:
                seen = merged.get(row[0])
                if seen is None:
                    merged[row[0]] = (row, path)
                elif seen[0][1] != row[1]:
                    raise ConfigError(
                        f"cache merge: conflicting grades for key {row[0].hex()}: {seen[0][1]} in {seen[1]}, {row[1]} "
                        f"in {path}; nothing was written (were the shards graded with different models or settings "
                        "under one grader name?)")
                else:
                    duplicates += 1
        _write(target, [row for row, _ in merged.values()], _joined(shards))
    return MergeResult(len(merged), duplicates, kept, left_out)


def _output_target(output: Path) -> Path:
    """The file the merged cache replaces (a symlink is written through), checked before any input is read:
    a place that is no grade cache or cannot be written is a usage error naming it."""
    target = output_target(output)  # a folder, a socket: an OutputError (a usage error) naming it
    if target is None:
        raise ConfigError(f"cache merge: -o {output} is a device or a FIFO, not a grade cache file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cache merge: cannot create the folder of -o {output}: {exc.strerror or exc}") from None
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise ConfigError(f"cache merge: cannot write -o {output}: its folder {target.parent} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"cache merge: -o {output} is read-only; it is never replaced (make it writable, or give "
                          "another path)")
    try:
        inspect_cache_file(target)  # an empty file is a new cache; anything but a grade cache is refused
    except ConfigError as exc:
        raise ConfigError(f"cache merge: -o {output} is merged into, never replaced, and it is no grade cache: "
                          f"{exc}") from None
    return target


def _rows_of(path: Path, left_out: list[str], notify: Callable[[str], None],
             shards: dict[Path, tuple[int, frozenset[int]]]) -> list[Row]:
    """The sound rows of the cache at ``path``; its damaged rows are said and added to ``left_out``, the shards it
    records to ``shards``."""
    cache = GradeCache(path, notify=notify)
    try:
        rows, damaged = cache.checked_rows()
        spec = cache.shards()
        if spec is not None:
            shards[path] = spec
    finally:
        cache.close()
    for position, key, why in damaged:
        left_out.append(f"{path}: row {position} (key {key[:16]}...): {why}")
    for line in left_out[len(left_out) - len(damaged):][:_SHOWN_PER_INPUT]:
        notify(f"cache merge: {line}; left out (graded again where needed)")
    if len(damaged) > _SHOWN_PER_INPUT:
        notify(f"cache merge: {path}: and {len(damaged) - _SHOWN_PER_INPUT} more damaged rows left out")
    return rows


def _partial_name(target: Path) -> str:
    return f".{target.name}.merging-{os.getpid()}"


def _remove_partials(target: Path) -> None:
    """Remove what merges killed in this folder left (the lock is held: no merge into it runs now): only
    names of the exact partial pattern, with SQLite's -wal and -shm beside them."""
    pattern = re.compile(re.escape(f".{target.name}.merging-") + r"\d+(-wal|-shm|-journal)?")
    for entry in target.parent.iterdir():
        if pattern.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink():
            entry.unlink()


def _joined(shards: dict[Path, tuple[int, frozenset[int]]]) -> tuple[int, frozenset[int]] | None:
    """The shards the inputs hold together; inputs of different splits are a ConfigError (nothing written)."""
    counts = {count for count, _ in shards.values()}
    if len(counts) > 1:
        shown = ", ".join(f"{path} of {count} shards" for path, (count, _) in shards.items())
        raise ConfigError(f"cache merge: the inputs are shards of passes split differently ({shown}); nothing was "
                          "written (merge the shards of one --exam-shard=I/N split)")
    if not counts:
        return None
    return counts.pop(), frozenset(i for _, held in shards.values() for i in held)


def _write(target: Path, rows: list[Row], shards: tuple[int, frozenset[int]] | None = None) -> None:
    """``rows`` (and the ``shards`` they are of) as a new cache beside ``target``, moved over it when complete and
    checked there."""
    partial = target.with_name(_partial_name(target))
    cache = GradeCache(partial)
    try:
        stored = cache.put_rows(rows)
        if stored and shards is not None:
            cache.record_shards(*shards)
    finally:
        cache.close()
    if not stored:
        _remove_partials(target)
        raise ConfigError(f"cache merge: could not write {target} (see the message above); it is as it was")
    os.replace(partial, target)
    check = GradeCache(target)
    try:
        held = len(check)
    finally:
        check.close()
    if held != len(rows):
        raise ConfigError(f"cache merge: {target} holds {held} grades after the merge, not the {len(rows)} written; "
                          "another program changed it meanwhile")
