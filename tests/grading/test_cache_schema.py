"""The grade cache's table (schema 2: binary keys, WITHOUT ROWID, answer columns) and the migration of
schema 1 caches, which keeps every grade under the same key."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import exam_harness.grading.cache as cache_module
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade
from exam_harness.grading.cache import APPLICATION_ID, SCHEMA_VERSION, CachedGrade, GradeCache, cache_key
from exam_harness.grading.passes import run_grading_pass
from tests.grading.support import make_requests
from tests.helpers import KeywordGrader

# The schema of exam-harness up to this change, exactly as its cache.py created it.
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


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def write_schema1_cache(path: Path, grades: dict[str, Grade], extra: dict[str, str] | None = None) -> None:
    """A cache as schema 1 wrote it (WAL, meta schema=1, payload = Grade JSON); ``extra`` adds raw payloads."""
    with raw(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA1)
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', '1')")
        rows = [(key, g.grader, g.grade, g.model_dump_json(), time.time()) for key, g in grades.items()]
        rows += [(key, "x", 0, payload, time.time()) for key, payload in (extra or {}).items()]
        db.executemany("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?)", rows)


def varied_grades() -> dict[str, Grade]:
    """Grades with every field in use, as the built-in graders make them."""
    return {
        cache_key("f", {"i": 0}): Grade(grade=3, grader="embedding", raw_response="0.5907", details={"cosine": 0.59}),
        cache_key("f", {"i": 1}): Grade(grade=1, grader="qa", raw_response="Paris", extracted_answer="Paris",
                                        details={"score": 0.9, "gold_fingerprint": "0123456789abcdef"}),
        cache_key("f", {"i": 2}): Grade(grade=4, grader="hf", raw_response="4", probabilities=(0.0, 0.1, 0.1, 0.1, 0.6, 0.1),
                                        details={"prompt_class": "QuestionSelfRated", "fast_path": True}),
        cache_key("f", {"i": 3}): Grade(grade=0, grader="recorded"),
        cache_key("f", {"i": 4}): Grade(grade=5, grader="openai", raw_response="unicode ✓ \x00 answer",
                                        extracted_answer="", details={"nested": {"a": [1, 2, None]}}),
    }


def test_a_schema1_cache_is_migrated_in_place_and_every_grade_still_hits(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    requests = make_requests(30)
    # Real grades of a grading pass, stored the way schema 1 stored them.
    grader = KeywordGrader()
    fingerprint = grader.spec().fingerprint()
    graded = {cache_key(fingerprint, grader.cache_payload(r)): g
              for r, g in zip(requests, grader.grade_batch(requests)) if isinstance(g, Grade)}
    stored = {**graded, **varied_grades()}
    write_schema1_cache(path, stored)

    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    assert said == [f"grade cache {path}: migrated {len(stored)} grades to schema {SCHEMA_VERSION}"]
    assert len(cache) == len(stored)
    assert cache.get_many(stored) == stored  # every row, every field
    answers = {key: CachedGrade(g.grade, g.extracted_answer if g.extracted_answer is not None else g.raw_response)
               for key, g in stored.items()}
    assert cache.get_grades(stored) == answers
    outcome = run_grading_pass(KeywordGrader(), requests, cache)
    assert outcome.cache_hits == outcome.unique == len(graded) and outcome.graded == 0
    cache.close()

    with raw(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert [r[1] for r in db.execute("PRAGMA table_info(grades)")] == [
            "key", "grade", "extracted_answer", "raw_response", "record"]
        assert "WITHOUT ROWID" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'grades'").fetchone()[0]
        assert db.execute("SELECT DISTINCT typeof(key), length(key) FROM grades").fetchall() == [("blob", 32)]
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # A second open finds schema 2 and says nothing.
    said.clear()
    GradeCache(path, notify=said.append).close()
    assert said == []


def test_migration_drops_damaged_rows_and_gold_answers_in_clear(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    answer_key = Grade(grade=1, grader="answer-key", extracted_answer="nitrogen ga",
                       details={"gold": "nitrogen gas", "relative_distance": 0.0})
    good = Grade(grade=2, grader="embedding", raw_response="0.51")
    keys = [cache_key("f", {"i": i}) for i in range(4)]
    write_schema1_cache(path, {keys[0]: answer_key, keys[1]: good},
                        extra={keys[2]: "{not json", keys[3]: '{"grade": 99, "grader": "x"}'})
    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    assert said == [f"grade cache {path}: migrated 2 grades to schema {SCHEMA_VERSION}; 2 damaged rows were left "
                    "out and will be graded again"]
    found = cache.get_many(keys)
    assert found == {keys[0]: Grade(grade=1, grader="answer-key", details={"relative_distance": 0.0}), keys[1]: good}
    cache.close()
    assert b"nitrogen" not in path.read_bytes()


def test_migration_drops_llm_and_qa_gold_answers_but_keeps_their_extracted_answers(tmp_path: Path) -> None:
    """Schema 1 LLM and QA graders kept the matched gold answer (and llm-verify's checks) in clear."""
    path = tmp_path / "grades.sqlite"
    qa = Grade(grade=1, grader="qa", raw_response="Paris", extracted_answer="Paris",
               details={"score": 0.9, "matched_gold_answer": "Paris, France"})
    llm = Grade(grade=1, grader="openai", raw_response="the French capital", extracted_answer="the French capital",
                details={"verifications": [["Lutetia Parisiorum", "yes", True]]})
    keys = [cache_key("f", {"i": i}) for i in range(2)]
    write_schema1_cache(path, {keys[0]: qa, keys[1]: llm})
    cache = GradeCache(path, notify=lambda _message: None)
    found = cache.get_many(keys)
    cache.close()
    assert found[keys[0]] == qa.model_copy(update={"details": {"score": 0.9}})
    assert found[keys[1]] == llm.model_copy(update={"details": {}})
    assert b"France" not in path.read_bytes() and b"Lutetia" not in path.read_bytes()


def _open_and_count(path: str) -> int:
    cache = GradeCache(path, notify=lambda _: None)
    try:
        return len(cache)
    finally:
        cache.close()


@pytest.mark.slow
def test_sessions_opening_a_schema1_cache_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    grades = {cache_key("f", {"i": i}): Grade(grade=i % 6, grader="w") for i in range(5000)}
    write_schema1_cache(path, grades)
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        counts = pool.map(_open_and_count, [str(path)] * 4)
    assert counts == [len(grades)] * 4
    cache = GradeCache(path)
    assert cache.get_many(grades) == grades
    cache.close()


def test_a_read_only_schema1_cache_serves_its_grades_unmigrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "grades.sqlite"
    grades = varied_grades()
    write_schema1_cache(path, grades)
    before = path.read_bytes()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    assert cache.get_many(grades) == grades
    assert cache.get_grades(grades, answers=False) == {k: CachedGrade(g.grade, None) for k, g in grades.items()}
    assert not cache.put_many({cache_key("f", {"new": 1}): Grade(grade=1, grader="g")})
    cache.close()
    assert len(said) == 1 and "read-only" in said[0]
    assert path.read_bytes() == before


def test_a_full_disk_during_migration_leaves_the_schema1_cache_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "grades.sqlite"
    grades = varied_grades()
    write_schema1_cache(path, grades)

    def full(*_args: Any) -> int:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(cache_module, "_insert", full)
    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    assert cache.get_many(grades) == grades
    assert not cache.put_many({cache_key("f", {"new": 1}): Grade(grade=1, grader="g")})
    cache.close()
    assert len(said) == 1 and "could not be prepared for writing (sqlite: database or disk is full" in said[0]
    monkeypatch.undo()
    with raw(path) as db:  # rolled back: still schema 1, every row there
        assert db.execute("SELECT value FROM meta").fetchone()[0] == "1"
        assert db.execute("SELECT count(*) FROM grades").fetchone()[0] == len(grades)


# -- the lean table ----------------------------------------------------------------------------------


def test_each_key_is_stored_once_as_32_bytes(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    cache = GradeCache(path)
    grades = {cache_key("f", {"i": i}): Grade(grade=i % 6, grader="embedding", raw_response=f"0.{i:04d}",
                                             details={"cosine": i / 10_000}) for i in range(5000)}
    assert cache.put_many(grades)
    cache.close()
    with raw(path) as db:
        # No index beside the table (WITHOUT ROWID: the table is its primary key's B-tree).
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE tbl_name = 'grades' AND type = 'index'"
                          ).fetchone()[0] == 0
    # Schema 1 took about 325 bytes a row for such grades.
    assert path.stat().st_size / len(grades) < 130


def test_the_lean_lookup_agrees_with_the_full_one() -> None:
    cache = GradeCache(None)
    grades = varied_grades()
    cache.put_many(grades)
    full = cache.get_many(grades)
    lean = cache.get_grades([*grades, cache_key("f", {"missing": 1})])
    assert full == grades
    assert lean == {k: CachedGrade(g.grade, g.extracted_answer if g.extracted_answer is not None else g.raw_response)
                    for k, g in grades.items()}
    assert cache.get_grades(grades, answers=False) == {k: CachedGrade(g.grade, None) for k, g in grades.items()}
    assert cache.damaged == 0


def test_long_answers_are_cut_to_a_documented_length() -> None:
    reply = "x" * 20_000_000
    grade = Grade(grade=1, grader="openai", raw_response=reply, extracted_answer=reply[:5000])
    assert len(grade.raw_response or "") == len(grade.extracted_answer or "") == Grade.MAX_TEXT_CHARS == 4096
    cache = GradeCache(None)
    unvalidated = Grade.model_construct(grade=1, grader="g", raw_response=reply, extracted_answer=None,
                                        probabilities=None, details={})
    key = cache_key("f", {"i": 1})
    cache.put_many({key: unvalidated})
    assert cache.get_grades([key])[key].answer == reply[: Grade.MAX_TEXT_CHARS]


def test_a_cache_opened_read_only_by_a_reader_is_never_changed(tmp_path: Path) -> None:
    """``read_only`` (exam-harness view): a writable file of an older schema is read as it is, not migrated; a
    current one is read and nothing is stored; no file there is an error naming the path, and none is created."""
    path = tmp_path / "grades.sqlite"
    grades = varied_grades()
    write_schema1_cache(path, grades)
    before = path.read_bytes()
    said: list[str] = []
    old = GradeCache(path, read_only=True, notify=said.append)
    assert old.get_many(grades) == grades
    assert not old.put_many({cache_key("f", {"new": 1}): Grade(grade=1, grader="g")})
    old.close()
    assert path.read_bytes() == before and said == []

    current = tmp_path / "current.sqlite"
    writer = GradeCache(current)
    assert writer.put_many(grades)
    writer.close()
    stored = current.read_bytes()
    reader = GradeCache(current, read_only=True)
    assert reader.get_grades(grades, answers=False) == {k: CachedGrade(g.grade, None) for k, g in grades.items()}
    assert not reader.put_rows(reader.rows())
    reader.close()
    assert current.read_bytes() == stored

    missing = tmp_path / "none" / "grades.sqlite"
    with pytest.raises(ConfigError, match=f"there is no grade cache at {missing}"):
        GradeCache(missing, read_only=True)
    assert not missing.parent.exists()
