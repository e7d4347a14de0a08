"""Merging grade caches: the shards of one grading pass (``--exam-shard``), graded on several machines.

:func:`merge_caches` reads every input cache (each opened, checked and migrated like any cache) and
writes their grades into a new cache file. A key two inputs both hold with the same grade is one grade
(the first input's row is kept); with different grades it is a conflict, refused with both files named,
and nothing is written. The output is built beside its final path and moved there when complete.
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
    for path in inputs:
        cache = GradeCache(path)
        try:
            rows = cache.rows()
        finally:
            cache.close()
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
    output = Path(output)
    partial = output.with_name(f".{output.name}.merging")
    partial.unlink(missing_ok=True)
    target = GradeCache(partial)
    try:
        stored = target.put_rows([row for row, _ in merged.values()])
    finally:
        target.close()
    if not stored:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"cache merge: could not write {output} (see the message above)")
    os.replace(partial, output)
    return len(merged), duplicates
