"""Content-addressed grade store on SQLite (embedded, no server).

The key of a grade is the SHA-256 of everything that shapes it: the grader's spec (name, version,
model, revision, prompt class and text, decoding settings) and the request content the grader
declares (test point text, gold answers, passage text, ...). Ids play no part, so renaming a
passage costs nothing and editing a question regrades exactly that question's pairs.

Writes go in one transaction per batch in WAL mode, so a killed process loses at most the batch in
flight and concurrent sessions (pytest-xdist workers) can share one file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from exam_harness.errors import ConfigError
from exam_harness.models import Grade

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grades (
    key TEXT PRIMARY KEY,
    grader TEXT NOT NULL,
    grade INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def cache_key(grader_fingerprint: str, content: Mapping[str, Any]) -> str:
    body = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256()
    digest.update(grader_fingerprint.encode("ascii"))
    digest.update(b"\x00")
    digest.update(body.encode("utf-8"))
    return digest.hexdigest()


class GradeCache:
    """Grade store keyed by :func:`cache_key`. ``path=None`` keeps grades in memory only."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        target = ":memory:"
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot create the grade cache folder {self.path.parent}: {exc}") from exc
            target = str(self.path)
        try:
            self._db = sqlite3.connect(target, timeout=60.0, check_same_thread=False, isolation_level=None)
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"grade cache {target} is not a readable SQLite database ({exc}); "
                "delete it or point --exam-cache elsewhere"
            ) from exc

    def _check_schema(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise ConfigError(
                f"grade cache {self.path} has schema {row[0]}, this exam-harness writes {SCHEMA_VERSION}; "
                "point --exam-cache at a new file"
            )

    def get_many(self, keys: Iterable[str]) -> dict[str, Grade]:
        """Grades found for ``keys``."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Grade] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, payload in self._db.execute(
                    f"SELECT key, payload FROM grades WHERE key IN ({marks})", chunk
                ):
                    found[key] = Grade.model_validate_json(payload)
        return found

    def put_many(self, grades: Mapping[str, Grade]) -> None:
        """Store a batch in one transaction: all of it lands, or none of it."""
        if not grades:
            return
        now = time.time()
        rows = [(key, g.grader, g.grade, g.model_dump_json(), now) for key, g in grades.items()]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM grades").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
