"""Grade cache size and speed: schema 1 (before) and schema 2 (now), side by side.

    .venv/bin/python benchmarks/cache_speed.py                      # 10k and 1M rows, 100k-key lookup
    .venv/bin/python benchmarks/cache_speed.py --large 200000       # a quicker run

Schema 1 is rebuilt here with raw SQL exactly as its cache.py wrote and read it: ``key TEXT PRIMARY
KEY`` (64 hex characters, in the table and again in the primary key's index), a ``grader`` column,
the whole Grade as JSON, a timestamp; each lookup parsed the JSON into a pydantic ``Grade``. Schema 2
is :class:`exam_harness.grading.cache.GradeCache` itself. The rows are grades of the offline default grader
(``embedding``: grade, cosine as raw response and as detail), under keys made by ``cache_key``.

For each schema:

* inserts/s when the table holds ``--small`` rows and when it holds ``--large`` rows: the rate of the
  ``--window`` grades inserted from that size on (the large one: up to it), in batches of ``--batch``
  grades, one transaction each, as a grading pass commits them;
* bytes per row: the file's size over its rows once ``--large`` rows are in (WAL checkpointed);
* warm lookup: ``--lookups`` keys, all cached, looked up as a warm grading pass does (schema 1:
  ``get_many``, a Grade per row; schema 2: the lean ``get_grades``, grade and answer text), and, for
  reference, schema 2's full ``get_many``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from exam_harness.core.models import Grade
from exam_harness.grading.cache import GradeCache, cache_key

SCHEMA1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grades (
    key TEXT PRIMARY KEY,
    grader TEXT NOT NULL,
    grade INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class Store(Protocol):
    def put_many(self, grades: Mapping[str, Grade]) -> Any: ...
    def close(self) -> None: ...


class Schema1Cache:
    """The grade cache before schema 2, as its cache.py was (writes, full lookups, pydantic per row)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA1)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', '1')")

    def get_many(self, keys: Iterable[str]) -> dict[str, Grade]:
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Grade] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, payload in self._db.execute(f"SELECT key, payload FROM grades WHERE key IN ({marks})", chunk):
                found[key] = Grade.model_validate_json(payload)
        return found

    def put_many(self, grades: Mapping[str, Grade]) -> None:
        now = time.time()
        rows = [(key, g.grader, g.grade, g.model_dump_json(), now) for key, g in grades.items()]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?)", rows)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()


def key_of(i: int) -> str:
    return cache_key("benchmark-embedding-grader", {"pair": i})


def batch_of(start: int, size: int) -> dict[str, Grade]:
    """Embedding-grader grades of pairs start..start+size, as the grader makes them."""
    rng = random.Random(start)
    grades = {}
    for i in range(start, start + size):
        cosine = rng.uniform(-0.1, 0.9)
        grades[key_of(i)] = Grade(grade=min(5, max(0, int(cosine * 10) - 2)), grader="embedding",
                                  raw_response=f"{cosine:.4f}", details={"cosine": round(cosine, 6)})
    return grades


def fill(store: Store, rows: int, batch: int, windows: list[tuple[int, int]]) -> list[float]:
    """Insert ``rows`` grades in batches; the insert rate (grades/s) within each (start, end) window."""
    spent = [0.0] * len(windows)
    for start in range(0, rows, batch):
        grades = batch_of(start, min(batch, rows - start))
        began = time.perf_counter()
        store.put_many(grades)
        seconds = time.perf_counter() - began
        for w, (low, high) in enumerate(windows):
            if low <= start < high:
                spent[w] += seconds
    return [(high - low) / s if s else float("nan") for (low, high), s in zip(windows, spent)]


def timed(call: Callable[[], object]) -> tuple[float, object]:
    began = time.perf_counter()
    result = call()
    return time.perf_counter() - began, result


def measure(name: str, folder: Path, args: argparse.Namespace) -> dict[str, float]:
    path = folder / f"{name}.sqlite"
    store: Schema1Cache | GradeCache = Schema1Cache(path) if name == "schema1" else GradeCache(path)
    windows = [(args.small, args.small + args.window), (args.large - args.window, args.large)]
    small_rate, large_rate = fill(store, args.large, args.batch, windows)
    store.close()  # checkpoints the WAL into the file
    result = {"bytes": path.stat().st_size / args.large, "small": small_rate, "large": large_rate}
    keys = [key_of(i) for i in random.Random(1).sample(range(args.large), args.lookups)]
    if isinstance(store, Schema1Cache):
        reader = Schema1Cache(path)
        result["lookup"], found = timed(lambda: reader.get_many(keys))
    else:
        reader = GradeCache(path)
        result["lookup"], found = timed(lambda: reader.get_grades(keys))
        result["full"], _ = timed(lambda: reader.get_many(keys))
    assert isinstance(found, dict) and len(found) == len(keys), f"{name}: {len(found)} of {len(keys)} keys found"
    reader.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="First table size measured (default: 10000).")
    parser.add_argument("--large", type=int, default=1_000_000, help="Second table size (default: 1000000).")
    parser.add_argument("--window", type=int, default=25_600, help="Grades timed at each size (default: 25600).")
    parser.add_argument("--batch", type=int, default=256, help="Grades per transaction (default: 256).")
    parser.add_argument("--lookups", type=int, default=100_000, help="Keys of the warm lookup (default: 100000).")
    parser.add_argument("--keep", type=Path, help="Write the cache files here and keep them (default: a temp folder).")
    args = parser.parse_args(argv)
    if not args.small + args.window <= args.large - args.window or args.lookups > args.large:
        parser.error("need small + window <= large - window and lookups <= large")

    with contextlib.ExitStack() as stack:
        folder = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cache-speed-")))
        folder.mkdir(parents=True, exist_ok=True)
        before = measure("schema1", folder, args)
        now = measure("schema2", folder, args)
    rows = [
        (f"bytes per row ({args.large:,} rows)", f"{before['bytes']:.1f}", f"{now['bytes']:.1f}"),
        (f"inserts/s at {args.small:,} rows", f"{before['small']:,.0f}", f"{now['small']:,.0f}"),
        (f"inserts/s at {args.large:,} rows", f"{before['large']:,.0f}", f"{now['large']:,.0f}"),
        (f"warm lookup of {args.lookups:,} keys", f"{before['lookup']:.3f} s", f"{now['lookup']:.3f} s"),
        ("  (schema 2's full get_many)", "", f"{now['full']:.3f} s"),
    ]
    print(f"{'':36s} {'schema 1 (before)':>18s} {'schema 2 (now)':>16s}")
    for label, old, new in rows:
        print(f"{label:36s} {old:>18s} {new:>16s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
