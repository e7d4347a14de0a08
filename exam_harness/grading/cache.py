"""Content-addressed grade store on SQLite (embedded, no server).

The key of a grade is the SHA-256 of everything that shapes it: the grader's spec (name, version,
model, revision, prompt class and text, decoding settings) and the request content the grader
declares (test point text, gold answers, passage text, ...). Ids play no part, so renaming a
passage costs nothing and editing a question regrades exactly that question's pairs.

Writes go in one transaction per batch in WAL mode, so a killed process loses at most the batch in
flight and concurrent sessions (pytest-xdist workers) can share one file.

What the cache holds (schema 3): one row per graded pair in the table ``grades``:

* ``key``: the 32-byte SHA-256 digest of :func:`cache_key`'s input. Passage texts, test point texts
  and gold answers enter this hash only; none of them is stored.
* ``grade``: the integer grade.
* ``extracted_answer`` and ``raw_response``: the grader's answer texts, at most
  :attr:`Grade.MAX_TEXT_CHARS <exam_harness.core.models.Grade.MAX_TEXT_CHARS>` (4,096) characters each:
  the model's reply of an LLM grader and the answer it extracted, the answer span of the ``qa``
  grader, the reason of the ``embedding`` grader (its best span quoted, and its support), the published
  answer of the ``recorded`` grader; the reason of the ``answer-key`` grader (found or not, and how
  close, quoting no gold answer). Together they are the grade's reason every output shows.
* ``record``: the rest of the :class:`~exam_harness.core.models.Grade` as JSON: the grader's name, the
  grade probabilities and the details (model, prompt class and token counts of LLM graders, whose
  ``prompt_tokens``, ``completion_tokens`` and ``shared_by`` a rerun reads to report what its cached
  grades cost (:mod:`exam_harness.llm.cost`; no schema change: details were always free-form), scores of
  the ``qa`` grader, the cosine of the ``embedding`` grader, a keyed fingerprint of the matched gold
  answer of the ``answer-key`` grader, never the answer itself) and, for a grade that a fallback rule
  read from an answer holding none, the rule (``fallback``, e.g. ``"other text -> 1"``).

A table ``meta`` (``schema`` = 3) and the SQLite header's application id (:data:`APPLICATION_ID`)
mark the file as a grade cache. A schema 1 file (``key TEXT PRIMARY KEY, grader, grade, payload,
created``) or a schema 2 file (the same table, without the fallback flag) is migrated in place, in one
transaction, the first time a writable session opens it: the flag of a schema 1 or 2 LLM grade is
read again from its stored answer and prompt mode (:func:`exam_harness.llm.modes.stored_fallback`);
a read-only file of either schema is read the same way, row by row.

Nothing the file holds can crash a run:

* a row that is not a sound grade (undecodable record, unknown fields, wrong types, a grade outside
  the grader's range) is a miss: it is graded again and overwritten, and counted in
  :attr:`GradeCache.damaged` for the caller to report;
* a page SQLite cannot read makes the lookups that need it misses; the file is said once to be
  damaged, with a safe remedy, and is not written to for the rest of the session;
* a file that is not a grade cache (not SQLite, or another program's database) is refused before
  anything is written to it, with a message naming it;
* a cache that cannot be written (read-only file or folder) is opened read-only: its grades are
  used and new ones are not stored; a write that fails (a full disk) stops writing, names the cause
  and loses nothing: :meth:`GradeCache.put_many` returns ``False`` and the caller keeps its grades.

Each such event is said once per cache through ``notify`` (default: a line on stderr) and kept in
:attr:`GradeCache.notices`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from pydantic import ValidationError

from exam_harness.core.cache_keys import cache_key as cache_key  # the key rule, below the graders
from exam_harness.core.display import print_notice
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import MAX_GRADE, Grade
from exam_harness.io import limits
from exam_harness.llm.cost import grade_tokens, made_by_batch
from exam_harness.llm.modes import stored_fallback

SCHEMA_VERSION = 3
APPLICATION_ID = 0x45484743  # "EHGC" (exam-harness grade cache) in the SQLite header, PRAGMA application_id

_SQLITE_HEADER = b"SQLite format 3\x00"
_CHUNK = 500  # keys per SELECT ... IN (...): far below SQLite's limit on bound parameters
_MIGRATION_BATCH = 10_000

_META_COLUMNS = ["key", "value"]
_V1_COLUMNS = ["key", "grader", "grade", "payload", "created"]
_V2_COLUMNS = ["key", "grade", "extracted_answer", "raw_response", "record"]
_RECORD_FIELDS = {"grader", "probabilities", "details", "fallback"}

_CREATE_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CREATE_GRADES = """CREATE TABLE {table} (
    key BLOB PRIMARY KEY,
    grade INTEGER NOT NULL,
    extracted_answer TEXT,
    raw_response TEXT,
    record TEXT NOT NULL
) WITHOUT ROWID"""
_INSERT = "INSERT OR REPLACE INTO {table} VALUES (?, ?, ?, ?, ?)"

# 1 for a row that makes a valid Grade of a grader whose grades go up to the bound parameter, else 0.
# Checked in SQL so that a warm lookup never builds a pydantic object; CASE guards the JSON
# functions, which raise on text that is not JSON.
_SOUND_ROW = """CASE WHEN typeof(grade) = 'integer' AND grade BETWEEN 0 AND ?
        AND typeof(extracted_answer) IN ('text', 'null') AND typeof(raw_response) IN ('text', 'null')
        AND typeof(record) = 'text' AND json_valid(record)
    THEN json_type(record) = 'object'
        AND json_remove(record, '$.grader', '$.details', '$.probabilities', '$.fallback') = '{}'
        AND json_type(record, '$.grader') = 'text'
        AND coalesce(json_type(record, '$.fallback'), 'text') = 'text'
        AND coalesce(json_type(record, '$.details'), 'object') = 'object'
        AND CASE coalesce(json_type(record, '$.probabilities'), 'none')
            WHEN 'none' THEN 1
            WHEN 'array' THEN NOT EXISTS (
                SELECT 1 FROM json_each(record, '$.probabilities') WHERE type NOT IN ('integer', 'real'))
            ELSE 0 END
    ELSE 0 END"""

# Schema 1 stored the answer-key grader's matched gold answer in clear (details "gold", and its
# near copy as the extracted answer); migration drops both so that no gold answer stays in the file.
# Gold answers that graders of schema 1 stored in clear, by grader: detail keys dropped on migration,
# and whether the extracted answer goes too (the answer-key grader's was a near copy of a gold answer;
# an LLM's or QA model's extracted answer is the passage's own words and stays).
_SCHEMA1_SECRETS: dict[str, tuple[tuple[str, ...], bool]] = {
    "answer-key": (("gold",), True),
    "hf": (("matched_gold_answer", "verifications"), False),
    "openai": (("matched_gold_answer", "verifications"), False),
    "qa": (("matched_gold_answer",), False),
}

Row = tuple[bytes, int, str | None, str | None, str]


class CachedGrade(NamedTuple):
    """A cached grade as the grading pass uses it: the integer, and the answer the analyses quote."""

    grade: int
    answer: str | None  # the extracted answer, else the raw response; None when not asked for
    fallback: str | None = None  # the fallback rule that read the grade (Grade.fallback)
    # (prompt, completion) tokens the grade cost when made (an LLM grade's details); asked for with tokens=True
    tokens: tuple[float, float] | None = None
    batch: bool = False  # made by a batch job (its details say so): its tokens cost the batch rate


class GradeCache:
    """Grade store keyed by :func:`cache_key` (hex). ``path=None`` keeps grades in memory only;
    ``read_only`` opens an existing file for lookups alone.

    ``damaged`` counts the unsound rows lookups met (each was a miss), ``write_error`` says why grades
    are no longer stored (None while they are), ``notices`` lists what was said through ``notify``.
    """

    def __init__(self, path: str | Path | None, *, notify: Callable[[str], None] = print_notice,
                 read_only: bool = False, keep_text: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        # False: a grade is stored without the grader's answer and extracted answer (--cache-text none)
        self.keep_text = keep_text
        self.damaged = 0
        self.write_error: str | None = None
        self.notices: list[str] = []
        self._notify = notify
        self._lock = threading.Lock()
        self._schema = SCHEMA_VERSION
        self._unborn: Path | None = None  # a file to create with the first grade stored (none exists yet)
        if self.path is None:
            self._db = _connect(":memory:")
            self._create_schema()
        elif read_only:
            self._open_to_read(self.path)
        else:
            self._open(self.path)

    # -- opening ---------------------------------------------------------------------------------

    def _open(self, path: Path) -> None:
        """Inspect the file before anything is written to it, then open it for writing if we can."""
        found = inspect_cache_file(path)
        why_not = _why_not_writable(path)
        if why_not is None and found is None and not path.exists():
            # created with the first grade stored: a command refused before grading leaves no empty file behind
            self._unborn = path
            self._db = _connect(":memory:")
            self._create_schema()
        elif why_not is None:
            self._open_writable(path, found)
        elif found is None:
            raise ConfigError(
                f"cannot create the grade cache {path}: {why_not}; point --exam-cache at a writable place")
        else:
            self._open_read_only(path, found, f"it is read-only ({why_not})")

    def _open_to_read(self, path: Path) -> None:
        """``read_only``: a reader's (``exam-harness view``): nothing is created, migrated or written, and an
        older schema is read row by row; no file there is a ConfigError naming it."""
        found = inspect_cache_file(path)
        if found is None:
            raise ConfigError(f"there is no grade cache at {path} to read")
        try:
            self._db = _connect_read_only(path)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot read the grade cache {path}: {_sqlite_cause(exc)}") from exc
        self._schema = found
        self.write_error = "the grade cache was opened read-only"  # put_many stores nothing

    def _open_writable(self, path: Path, found: int | None) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the grade cache folder {path.parent}: {exc}") from exc
        self._db = _connect(str(path))
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Random keys dirty about one leaf page per stored grade. A checkpoint copies each page once however
            # often it changed, so checkpointing every 40 MB of WAL rather than SQLite's 4 MB writes far less.
            self._db.execute("PRAGMA wal_autocheckpoint=10000")
            self._db.execute("PRAGMA cache_size=-32768")  # 32 MiB of pages kept between batches
            if found != SCHEMA_VERSION:
                self._upgrade(path)
        except ConfigError:  # not ours after all (found so under the write lock)
            self._db.close()
            raise
        except sqlite3.Error as exc:
            self._db.close()
            cause = _sqlite_cause(exc, path.parent)
            if found is None:
                raise ConfigError(f"cannot create the grade cache {path}: {cause}") from exc
            # Its grades are still good: use them without writing (a full disk during migration, ...).
            self._open_read_only(path, found, f"it could not be prepared for writing ({cause})")

    def _open_read_only(self, path: Path, schema: int, why: str) -> None:
        try:
            self._db = _connect_read_only(path)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot read the grade cache {path}: {_sqlite_cause(exc)}") from exc
        self._schema = schema
        self._stop_writing(
            f"grade cache {path}: {why}; its grades are used, but the grades of this run are not stored. "
            "Make it writable, or point --exam-cache at a writable copy, to keep them"
        )

    def _be_born(self) -> None:
        """Create the cache file that was not there when opened (its first grades are about to be stored);
        until now the grades were looked up in an empty database: there were none."""
        if self._unborn is None:
            return
        path, self._unborn = self._unborn, None
        self._db.close()
        self._open_writable(path, inspect_cache_file(path))  # another process may have made it since

    def _upgrade(self, path: Path) -> None:
        """Create or migrate the tables, in one transaction, deciding again under the write lock:
        another process (an xdist worker) may have done it since the file was inspected."""
        with self._transaction():
            found = _schema_of(self._db, path)
            if found is None:
                self._create_schema()
            elif found == 1:
                self._migrate_schema1(path)
            elif found == 2:
                self._migrate_schema2(path)

    def _create_schema(self) -> None:
        self._db.execute(_CREATE_META)
        self._db.execute(_CREATE_GRADES.format(table="grades"))
        self._mark_as_ours()

    def _mark_as_ours(self) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _migrate_schema1(self, path: Path) -> None:
        """Every sound schema 1 row becomes a schema 2 row with the same key; the others are dropped
        (they would be misses anyway) and counted."""
        db = self._db
        db.execute(_CREATE_GRADES.format(table="grades_v2"))
        kept = dropped = 0
        batch: list[Row] = []
        # In key order (hex order is byte order): the new B-tree is filled by appending.
        for key, payload in db.execute("SELECT key, payload FROM grades ORDER BY key"):
            row = _row_from_schema1(key, payload)
            if row is None:
                dropped += 1
                continue
            batch.append(row)
            if len(batch) >= _MIGRATION_BATCH:
                kept += _insert(db, "grades_v2", batch)
        kept += _insert(db, "grades_v2", batch)
        db.execute("DROP TABLE grades")
        db.execute("ALTER TABLE grades_v2 RENAME TO grades")
        self._mark_as_ours()
        left_out = f"; {dropped} damaged rows were left out and will be graded again" if dropped else ""
        self.note(f"grade cache {path}: migrated {kept} grades to schema {SCHEMA_VERSION}{left_out}")

    def _migrate_schema2(self, path: Path) -> None:
        """Schema 2 rows are schema 3 rows without the fallback flag: the rows of LLM grades (their
        details name the prompt mode) get it, read again from the stored answer; the others stand."""
        db = self._db
        flagged = 0
        rows = db.execute(
            "SELECT key, grade, extracted_answer, raw_response, record FROM grades WHERE json_valid(record) "
            "AND json_type(record) = 'object' AND json_extract(record, '$.details.prompt') IS NOT NULL").fetchall()
        for key, grade, extracted, raw, record in rows:
            decoded = _grade_from_row(grade, extracted, raw, record)
            rule = stored_fallback(decoded) if decoded is not None else None
            if rule is not None:
                db.execute("UPDATE grades SET record = json_set(record, '$.fallback', ?) WHERE key = ?", (rule, key))
                flagged += 1
        self._mark_as_ours()
        self.note(f"grade cache {path}: migrated to schema {SCHEMA_VERSION}; {flagged} of its grades were read by a "
                  "fallback rule from answers without a grade and are flagged so")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")  # a full disk may fail the commit itself
        except BaseException:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    # -- notices ---------------------------------------------------------------------------------

    def note(self, message: str) -> None:
        """Say ``message`` through ``notify``, once per cache, and keep it in :attr:`notices`."""
        if message not in self.notices:
            self.notices.append(message)
            self._notify(message)

    def _stop_writing(self, message: str) -> None:
        if self.write_error is None:
            self.write_error = message
            self.note(message)

    def _file_is_damaged(self, exc: sqlite3.Error) -> None:
        message = (
            f"grade cache {self.path} is damaged ({_sqlite_cause(exc)}): the grades in its unreadable parts are "
            "graded again, and nothing more is written to it in this run. Move it aside (for example to "
            f"{self.path}.damaged) and rerun to start a new cache there"
        )
        if self.write_error is None:  # writing into a damaged B-tree could spread the damage
            self.write_error = message
        self.note(message)

    # -- lookups ---------------------------------------------------------------------------------

    def get_grades(
        self, keys: Iterable[str], *, max_grade: int = MAX_GRADE, answers: bool = True, tokens: bool = False
    ) -> dict[str, CachedGrade]:
        """Grade (and, with ``answers``, answer text; with ``tokens``, the tokens it cost) of every key
        found: the lean lookup of a warm run, which reads a few columns and builds no Grade. Unsound rows
        are misses, counted in ``damaged``."""
        if self._schema < SCHEMA_VERSION:  # a read-only older file: its fallback flags are read row by row
            full = self.get_many(keys, max_grade=max_grade)
            return {key: CachedGrade(g.grade, _answer_of(g) if answers else None, g.fallback,
                                     grade_tokens(g.details) if tokens else None, tokens and made_by_batch(g.details))
                    for key, g in full.items()}
        answer = "coalesce(extracted_answer, raw_response)" if answers else "NULL"
        wanted = _digests(keys)
        found: dict[str, CachedGrade] = {}
        # JSON is read only from a sound row (CASE: json_extract raises on a record that is not JSON)
        record = "CASE WHEN json_valid(record) AND json_type(record) = 'object' THEN json_extract(record, '$.{}') END"
        counts = [record.format(f"details.{name}") for name in ("prompt_tokens", "completion_tokens", "shared_by")]
        # a batch grade is one whose details hold "batch": true (json_type tells true from 1)
        batch = record.format("details.batch").replace("json_extract", "json_type") + " IS 'true'"
        columns = ", ".join([f"{_SOUND_ROW} AS sound, grade, {answer}", record.format("fallback"),
                             *(counts if tokens else ["NULL"] * 3), batch if tokens else "0"])
        for stored, sound, grade, text, fallback, *count, made_in_batch in self._rows(wanted, columns, [max_grade]):
            if sound:
                spent = grade_tokens(dict(zip(("prompt_tokens", "completion_tokens", "shared_by"), count)))
                found[wanted[stored]] = CachedGrade(grade, text, fallback, spent, bool(made_in_batch))
            else:
                self.damaged += 1
        return found

    def get_many(self, keys: Iterable[str], *, max_grade: int = MAX_GRADE) -> dict[str, Grade]:
        """The full Grade of every key found (raw response, extracted answer, probabilities, details)."""
        decoded: dict[str, Grade | None] = {}
        if self._schema == 1:  # schema 1 rows are checked as they are decoded
            hex_keys = {key: key for key in keys}
            for stored, payload in self._rows(hex_keys, "payload", []):
                decoded[stored] = _grade_from_schema1(payload)
        else:
            wanted = _digests(keys)
            columns = f"{_SOUND_ROW}, grade, extracted_answer, raw_response, record"
            for stored, sound, *row in self._rows(wanted, columns, [max_grade]):
                decoded[wanted[stored]] = _grade_from_row(*row) if sound else None
        grades = {key: g for key, g in decoded.items() if g is not None and g.grade <= max_grade}
        self.damaged += len(decoded) - len(grades)
        if self._schema == 2:  # schema 1 rows got theirs as they were decoded
            grades = {key: _flagged(g) for key, g in grades.items()}
        return grades

    def _rows(self, wanted: Mapping[Any, str], columns: str, params: list[Any]) -> Iterator[tuple[Any, ...]]:
        """(stored key, columns...) of the stored rows of the ``wanted`` keys, a chunk at a time: a warm
        TREC-sized exam looks up 1.2M keys, whose rows all at once would be hundreds of MB."""
        sql = f"SELECT key, {columns} FROM grades WHERE key IN (<marks>)"
        ordered = sorted(wanted)  # in stored order, the lookups of one chunk share B-tree pages
        for start in range(0, len(ordered), _CHUNK):
            with self._lock:
                rows = self._select(sql, params, ordered[start : start + _CHUNK])
            yield from rows

    def _select(self, sql: str, params: list[Any], chunk: Sequence[bytes | str]) -> list[tuple[Any, ...]]:
        """The rows of one chunk; when a page cannot be read, the readable rows, key by key."""
        try:
            return self._db.execute(sql.replace("<marks>", ",".join("?" * len(chunk))), [*params, *chunk]).fetchall()
        except sqlite3.DatabaseError as exc:
            self._file_is_damaged(exc)
        rows: list[tuple[Any, ...]] = []
        for key in chunk:
            with contextlib.suppress(sqlite3.DatabaseError):
                rows.extend(self._db.execute(sql.replace("<marks>", "?"), [*params, key]))
        return rows

    # -- storing ---------------------------------------------------------------------------------

    def put_many(self, grades: Mapping[str, Grade]) -> bool:
        """Store a batch in one transaction: all of it lands, or none of it.

        Returns False when the batch was not stored: the cache is read-only or damaged, or the write
        failed (said once, with its cause, through ``notify``). The grades stay the caller's to use.
        """
        if not grades:
            return True
        if self.write_error is not None:
            return False
        rows = sorted(_row_of(key, grade if self.keep_text else _without_text(grade)) for key, grade in grades.items())
        with self._lock:
            try:
                self._be_born()
                with self._transaction():
                    _insert(self._db, "grades", rows)
            except sqlite3.Error as exc:
                self._write_failed(exc)
                return False
        return True

    def _write_failed(self, exc: sqlite3.Error) -> None:
        cause = _sqlite_cause(exc, self.path.parent if self.path is not None else None)
        text = str(exc).lower() + (" full" if cause.startswith("the disk is full") else "")
        if "malformed" in text or "not a database" in text:
            self._file_is_damaged(exc)
            return
        if "full" in text:
            remedy = f"free disk space ({self._free_space()} free now) or point --exam-cache at another disk"
        elif "readonly" in text:
            remedy = "make the file and its folder writable, or point --exam-cache at a writable copy"
        elif "locked" in text or "busy" in text:
            remedy = "another process held the cache for over a minute; rerun when it is done"
        else:
            remedy = "point --exam-cache at another file"
        self._stop_writing(
            f"could not store grades in the grade cache {self.path} ({cause}): the grades of this run are kept "
            f"in memory and reported, but not stored; {remedy}, then rerun to store them "
            "(grades stored before are kept)"
        )

    def _free_space(self) -> str:
        folder = self.path.parent if self.path is not None else Path.cwd()
        try:
            return f"{shutil.disk_usage(folder).free / 2**20:.1f} MiB"
        except OSError:
            return "unknown"

    # -- merging (merge.py) ---------------------------------------------------------------------

    def identities(self) -> list[tuple[str, str | None, str | None]]:
        """The distinct (grader name, model, prompt) the stored grades name in their records (``details.model``
        and ``details.prompt``: an LLM grader's; None for graders that store neither), for finding which
        graders' grades a cache holds. Unsound rows are left out; an older schema opened read-only names none."""
        if self._schema < SCHEMA_VERSION:
            return []
        sql = ("SELECT DISTINCT json_extract(record, '$.grader'), json_extract(record, '$.details.model'), "
               "json_extract(record, '$.details.prompt') FROM grades WHERE json_valid(record) "
               "AND json_type(record) = 'object' AND json_type(record, '$.grader') = 'text'")
        with self._lock:
            try:
                found = self._db.execute(sql).fetchall()
            except sqlite3.DatabaseError as exc:
                self._file_is_damaged(exc)
                return []
        named = {(str(name), _text_or_none(model), _text_or_none(prompt)) for name, model, prompt in found}
        # one grader may store grades with and without a model (a cascade's filtered pairs name none): None first
        return sorted(named, key=lambda n: (n[0], n[1] is not None, n[1] or "", n[2] is not None, n[2] or ""))

    def rows(self) -> list[Row]:
        """Every stored row as stored (key, grade, extracted answer, raw response, record), by key."""
        with self._lock:
            return list(self._db.execute("SELECT key, grade, extracted_answer, raw_response, record FROM grades "
                                         "ORDER BY key"))

    def checked_rows(self, max_grade: int = MAX_GRADE) -> tuple[list[Row], list[tuple[int, str, str]]]:
        """Every stored row by key, checked by the lookups' own row rules (a sound grade 0..``max_grade`` with a
        record of a grade's fields, under a 32-byte key): the sound rows, and ``(position, key, why)`` of each
        other one (position 1 is the first by key). A file SQLite cannot read is a ConfigError naming it."""
        sql = f"SELECT key, grade, extracted_answer, raw_response, record, {_SOUND_ROW} FROM grades ORDER BY key"
        sound: list[Row] = []
        damaged: list[tuple[int, str, str]] = []
        with self._lock:
            try:
                for number, (key, grade, extracted, raw, record, ok) in enumerate(
                        self._db.execute(sql, [max_grade]), 1):
                    if ok and isinstance(key, bytes) and len(key) == 32:
                        sound.append((key, grade, extracted, raw, record))
                    else:
                        shown = key.hex() if isinstance(key, bytes) else limits.quoted(key)
                        damaged.append((number, shown, _row_problem(key, grade, record, max_grade)))
            except sqlite3.DatabaseError as exc:
                raise ConfigError(f"grade cache {self.path} cannot be read whole ({_sqlite_cause(exc)}); "
                                  "nothing was written") from exc
        return sound, damaged

    def put_rows(self, rows: list[Row]) -> bool:
        """Store rows as :meth:`rows` gives them, in one transaction; False when not stored (said why)."""
        if self.write_error is not None:
            return False
        with self._lock:
            try:
                self._be_born()
                with self._transaction():
                    _insert(self._db, "grades", list(rows))
            except sqlite3.Error as exc:
                self._write_failed(exc)
                return False
        return True

    # -- shards (--exam-shard, merge.py) ---------------------------------------------------------

    def shards(self) -> tuple[int, frozenset[int]] | None:
        """The sharded pass this cache records: ``(N, the shards I of N graded into it)`` (shard sessions note
        theirs, ``cache merge`` joins them), or None for a cache of no sharded pass."""
        with self._lock:
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'shards'").fetchone()
            except sqlite3.DatabaseError:  # a damaged or older file: no shards recorded
                return None
        return _shards_of(row[0]) if row is not None else None

    def record_shards(self, count: int, indexes: Iterable[int]) -> None:
        """Note that shards ``indexes`` of ``count`` graded into this cache (with those it recorded before). A cache
        recording shards of another count is a ConfigError: their pairs are split otherwise. Not noted where the
        cache cannot be written (its grades are not stored either)."""
        found = self.shards()
        if found is not None and found[0] != count:
            raise ConfigError(f"grade cache {self.path} holds shards of a pass graded in {found[0]} shards, not "
                              f"{count}: point --exam-cache at a cache of its own for each shard")
        held = sorted(set(indexes) | (found[1] if found is not None else set()))
        if self.write_error is not None:
            return
        value = json.dumps({"count": count, "graded": held})
        with self._lock:
            try:
                self._be_born()  # a shard with no pair of its own still leaves a cache that says it ran
                with self._transaction():
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('shards', ?)", (value,))
            except sqlite3.Error as exc:
                self._write_failed(exc)

    # -- housekeeping ----------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            try:
                return int(self._db.execute("SELECT COUNT(*) FROM grades").fetchone()[0])
            except sqlite3.DatabaseError as exc:
                self._file_is_damaged(exc)
                return 0

    def close(self) -> None:
        with self._lock:
            self._db.close()


# -- the file: what it is, and how to open it ------------------------------------------------------


def inspect_cache_file(path: Path) -> int | None:
    """The schema (1, 2 or 3) of the grade cache at ``path``; None when there is none yet (no file, an
    empty file, or a SQLite database without tables). Anything else is a ConfigError naming the file,
    raised before anything is written to it."""
    if not path.exists():
        return None
    if path.is_dir():
        raise ConfigError(f"grade cache {path} is a folder; point --exam-cache at a file, such as {path}/grades.sqlite")
    try:
        with path.open("rb") as fh:
            header = fh.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise ConfigError(f"cannot read the grade cache {path}: {exc.strerror or exc}") from exc
    if not header:
        return None  # an empty file is an empty SQLite database
    if header != _SQLITE_HEADER:
        raise ConfigError(
            f"grade cache {path} is not a readable SQLite database: it is not a SQLite file at all (it begins "
            f"with {header[:12]!r}), so exam-harness leaves it untouched; point --exam-cache at another path"
        )
    try:
        with contextlib.closing(_connect_read_only(path)) as db:
            return _schema_of(db, path)
    except sqlite3.DatabaseError as exc:
        if _is_damage(exc):
            raise ConfigError(
                f"grade cache {path} is a damaged SQLite file ({_sqlite_cause(exc)}); exam-harness leaves it "
                f"untouched. Move it aside (for example to {path}.damaged) and rerun to start a new cache there, "
                "or point --exam-cache at another path"
            ) from exc
        raise ConfigError(f"cannot read the grade cache {path}: {_sqlite_cause(exc)}") from exc


def _schema_of(db: sqlite3.Connection, path: Path) -> int | None:
    """Which grade cache schema ``db`` holds, from its tables, their columns, meta and application id."""
    app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    tables = {name: [r[1] for r in db.execute(f'PRAGMA table_info("{name}")')] for name in names}
    if app_id not in (0, APPLICATION_ID):
        raise _foreign(path, tables, f"its application id is {app_id:#x}")
    if not tables:
        return None
    schema = _meta_schema(db) if tables.get("meta") == _META_COLUMNS else None
    if schema is not None and schema.isdigit() and int(schema) > SCHEMA_VERSION:
        raise ConfigError(
            f"grade cache {path} has schema {schema}, written by a newer exam-harness (this one reads schemas 1 "
            f"to {SCHEMA_VERSION}); upgrade exam-harness, or point --exam-cache at another path"
        )
    if tables == {"meta": _META_COLUMNS, "grades": _V2_COLUMNS} and schema in ("2", str(SCHEMA_VERSION)):
        return int(schema)
    # Schema 1 created its tables before writing the schema row: a file killed in between has none.
    if tables == {"meta": _META_COLUMNS, "grades": _V1_COLUMNS} and schema in (None, "1"):
        return 1
    if tables in ({"meta": _META_COLUMNS, "grades": _V2_COLUMNS}, {"meta": _META_COLUMNS, "grades": _V1_COLUMNS}):
        # a grade cache's own tables with a schema value no version wrote: damaged or edited, not foreign
        raise ConfigError(
            f"grade cache {path} has the tables of a grade cache but the schema value {limits.quoted(schema)} in its "
            f"meta table (this exam-harness reads schemas 1 and {SCHEMA_VERSION}); exam-harness leaves it untouched. "
            f"Move it aside (for example to {path}.damaged) and rerun to start a new cache there, or point "
            "--exam-cache at another path")
    raise _foreign(path, tables, "its tables are not a grade cache's")


def _meta_schema(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    return str(row[0]) if row is not None else None


def _foreign(path: Path, tables: Mapping[str, list[str]], why: str) -> ConfigError:
    listed = ", ".join(sorted(tables)) or "none"
    return ConfigError(
        f"{path} is not an exam-harness grade cache but another program's SQLite database ({why}; tables: "
        f"{listed}); exam-harness leaves it untouched: point --exam-cache at another path"
    )


def _why_not_writable(path: Path) -> str | None:
    """Why SQLite could not write the cache at ``path`` (None if it can): WAL mode writes the file and
    creates its -wal and -shm files beside it."""
    folder = path.parent if path.parent != Path() else Path.cwd()
    while not folder.exists() and folder != folder.parent:  # a folder still to create: its parent decides
        folder = folder.parent
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable"
    return None


def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, timeout=60.0, check_same_thread=False, isolation_level=None, uri=uri)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write. In a folder we cannot write, SQLite cannot create the shared
    memory file a WAL database needs, so the file is opened as immutable (nobody else can write there
    either)."""
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro"
    db = _connect(uri, uri=True)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        db.close()
        db = _connect(uri + "&immutable=1", uri=True)
    return db


def _is_damage(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def _sqlite_cause(exc: sqlite3.Error, folder: Path | None = None) -> str:
    """SQLite's words for ``exc``; an I/O error on a full disk (SQLite says SQLITE_IOERR_SHMSIZE or
    _WRITE when the -shm or -wal file cannot grow) is said to be a full disk, with the free space."""
    name = getattr(exc, "sqlite_errorname", None)
    text = f"sqlite: {exc}" + (f", {name}" if name else "")
    if folder is not None and name and name.startswith(("SQLITE_IOERR", "SQLITE_FULL")):
        free = _free_bytes(folder)
        if free is not None and free < _NEARLY_FULL:
            return f"the disk is full ({free / 2**20:.1f} MiB free; {text})"
    return text


_NEARLY_FULL = 1 << 20  # bytes free below which an I/O error is taken for a full disk


def _free_bytes(folder: Path) -> int | None:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


# -- rows --------------------------------------------------------------------------------------------


def _shards_of(value: Any) -> tuple[int, frozenset[int]] | None:
    """``(N, shards)`` of the meta row ``shards``; None when it is not one (an edited file: no shards known)."""
    try:
        found = json.loads(value)
        count, graded = int(found["count"]), frozenset(int(i) for i in found["graded"])
    except (TypeError, ValueError, KeyError):
        return None
    return (count, graded) if count >= 1 and all(1 <= i <= count for i in graded) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _digests(keys: Iterable[str]) -> dict[bytes, str]:
    """Stored key (32 bytes) -> the caller's hex key, for each distinct key."""
    return {bytes.fromhex(key): key for key in keys}


def _insert(db: sqlite3.Connection, table: str, rows: list[Row]) -> int:
    db.executemany(_INSERT.format(table=table), rows)
    count = len(rows)
    rows.clear()
    return count


def _cut(text: str | None) -> str | None:
    # Grade cuts its texts when validated; a Grade built without validation is cut here.
    return text[: Grade.MAX_TEXT_CHARS] if text is not None else None


def _without_text(grade: Grade) -> Grade:
    """``grade`` without the texts a grader's answer holds (the answer, what was extracted from it), which may
    quote the graded passage: what ``--cache-text none`` stores."""
    return grade.model_copy(update={"raw_response": None, "extracted_answer": None,
                                    "details": {k: v for k, v in grade.details.items() if not isinstance(v, str)
                                                or k in _KEPT_DETAILS}})


# details that name the grader, never quote an answer: kept by --cache-text none
_KEPT_DETAILS = frozenset({"prompt_class", "prompt", "model", "revision", "decided_by"})


def _row_of(key: str, grade: Grade) -> Row:
    record = grade.model_dump_json(include=_RECORD_FIELDS, exclude_defaults=True)
    return bytes.fromhex(key), grade.grade, _cut(grade.extracted_answer), _cut(grade.raw_response), record


def _grade_from_row(grade: int, extracted: str | None, raw: str | None, record: str) -> Grade | None:
    try:
        fields = json.loads(record)
        return Grade.model_validate({**fields, "grade": grade, "extracted_answer": extracted, "raw_response": raw})
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


def _row_problem(key: Any, grade: Any, record: Any, max_grade: int) -> str:
    """Why a stored row is no sound grade (the rules of :data:`_SOUND_ROW`, said in words)."""
    if not isinstance(key, bytes) or len(key) != 32:
        return "its key is not a 32-byte digest"
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= max_grade:
        return f"grade {limits.quoted(grade)} is not a grade 0..{max_grade}"
    if not isinstance(record, str):
        return "its record is not text"
    try:
        json.loads(record)
    except ValueError:
        return "its record is not JSON"
    return "its record or answers are not a grade's (unknown fields or wrong types)"


def _answer_of(grade: Grade) -> str | None:
    return grade.extracted_answer if grade.extracted_answer is not None else grade.raw_response


def _grade_from_schema1(payload: Any) -> Grade | None:
    if not isinstance(payload, str):
        return None
    try:
        grade = Grade.model_validate_json(payload)
    except ValidationError:
        return None
    secrets = _SCHEMA1_SECRETS.get(grade.grader)
    if secrets:
        keys, drop_answer = secrets
        details = {k: v for k, v in grade.details.items() if k not in keys}
        update: dict[str, Any] = {"details": details}
        if drop_answer:
            update["extracted_answer"] = None
        grade = grade.model_copy(update=update)
    return _flagged(grade)


def _flagged(grade: Grade) -> Grade:
    """A grade of an older schema with its fallback flag, read again from its answer (see the module doc)."""
    if grade.fallback is not None:
        return grade
    rule = stored_fallback(grade)
    return grade if rule is None else grade.model_copy(update={"fallback": rule})


def _row_from_schema1(key: Any, payload: Any) -> Row | None:
    grade = _grade_from_schema1(payload)
    if grade is None or not isinstance(key, str) or len(key) != 64:
        return None
    try:
        return _row_of(key, grade)
    except ValueError:  # a key that is not hex
        return None
