"""Merging grade caches: the shards of one grading pass (``--exam-shard``), graded on several machines.

:func:`merge_caches` reads every input cache (each opened, checked and migrated like any cache) and
writes their grades into a new cache file. A key two inputs both hold with the same grade is one grade
(the first input's row is kept); with different grades it is a conflict, refused with both files named,
and nothing is written. The output is built beside its final path and moved there when complete. The shards the
inputs record (each ``--exam-shard`` session notes its own) are recorded in the output: a session over it that
lacks pairs names the shards they are of, and refuses to grade them unless told to (grading/passes.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from exam_harness.core.errors import ConfigError
from exam_harness.grading.cache import GradeCache, Row


def merge_caches(inputs: Sequence[Path], output: Path) -> tuple[int, int]:
    """Merge ``inputs`` into a new cache at ``output``: ``(grades written, duplicates of one grade)``.
    Conflicting grades for one key are a ConfigError naming the key, both files and both grades."""
    if not inputs:
        raise ConfigError("cache merge needs at least one input cache")
    for path in inputs:
        if not Path(path).is_file():
            raise ConfigError(f"cache merge: {path} is not a file")
        if Path(path).resolve() == Path(output).resolve():
            raise ConfigError(f"cache merge: the output {output} is also an input; write to a new file")
    merged: dict[bytes, tuple[Row, Path]] = {}
    duplicates = 0
    shards: dict[Path, tuple[int, frozenset[int]]] = {}
    for path in inputs:
        cache = GradeCache(path)
        try:
            rows = cache.rows()
            spec = cache.shards()
        finally:
            cache.close()
        if spec is not None:
            shards[Path(path)] = spec
        for row in rows:
            seen = merged.get(row[0])
            if seen is None:
                merged[row[0]] = (row, Path(path))
            elif seen[0][1] != row[1]:
                raise ConfigError(f"cache merge: conflicting grades for key {row[0].hex()}: {seen[0][1]} in {seen[1]}, "
                                  f"{row[1]} in {path}; nothing was written (were the shards graded with different "
                                  "models or settings under one grader name?)")
            else:
                duplicates += 1
    counts = {count for count, _ in shards.values()}
    if len(counts) > 1:
        shown = ", ".join(f"{path} of {count} shards" for path, (count, _) in shards.items())
        raise ConfigError(f"cache merge: the inputs are shards of passes split differently ({shown}); nothing was "
                          "written (merge the shards of one --exam-shard=I/N split)")
    output = Path(output)
    partial = output.with_name(f".{output.name}.merging")
    partial.unlink(missing_ok=True)
    target = GradeCache(partial)
    try:
        stored = target.put_rows([row for row, _ in merged.values()])
        if stored and counts:  # the shards it holds: a session over it names the ones missing (passes.py)
            target.record_shards(counts.pop(), (i for _, graded in shards.values() for i in graded))
    finally:
        target.close()
    if not stored:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"cache merge: could not write {output} (see the message above)")
    os.replace(partial, output)
    return len(merged), duplicates
