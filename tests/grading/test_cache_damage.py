"""A grade cache that cannot be poisoned: damaged rows and pages, files that are not ours, read-only
caches and failing writes end in misses and one clear notice, never in a crash or a lost grade."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade
from exam_harness.graders.base import GradingRequest
from exam_harness.grading.cache import GradeCache, cache_key
from exam_harness.grading.passes import GradingOutcome, run_grading_pass
from tests.grading.support import make_requests
from tests.helpers import KeywordGrader
from tests.paths import REPO

pytest_plugins = ["pytester"]



def grade_into(path: Path | None, requests: list[GradingRequest], **kwargs: Any) -> tuple[GradingOutcome, list[str]]:
    """A grading pass with the keyword grader through a cache at ``path``; the outcome and what the cache said."""
    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    try:
        return run_grading_pass(KeywordGrader(), requests, cache, **kwargs), said
    finally:
        cache.close()


def keys_of(requests: list[GradingRequest]) -> list[str]:
    grader = KeywordGrader()
    fingerprint = grader.spec().fingerprint()
    return sorted({cache_key(fingerprint, grader.cache_payload(r)) for r in requests})


def assert_safe_advice(message: str, path: Path) -> None:
    """Every message names the file and never tells anyone to delete it."""
    assert str(path) in message
    assert "delete" not in message.lower()


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


# -- damaged rows ------------------------------------------------------------------------------------

TAMPERING = {
    "grade out of range": "UPDATE grades SET grade = 99 WHERE key = ?",
    "grade of the wrong type": "UPDATE grades SET grade = 'five' WHERE key = ?",
    "record not JSON": "UPDATE grades SET record = '{not json' WHERE key = ?",
    "unknown field": "UPDATE grades SET record = json_set(record, '$.injected', 1) WHERE key = ?",
    "record not an object": "UPDATE grades SET record = '[1, 2]' WHERE key = ?",
    "answer of the wrong type": "UPDATE grades SET extracted_answer = x'00ff' WHERE key = ?",
    "probabilities not numbers": """UPDATE grades SET record = '{"grader":"keyword","probabilities":["a"]}' WHERE key = ?""",
    "details not an object": """UPDATE grades SET record = '{"grader":"keyword","details":[1]}' WHERE key = ?""",
}


def test_tampered_rows_are_misses_regraded_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    requests = make_requests(10)
    reference, _ = grade_into(path, requests)
    keys = keys_of(requests)
    with raw(path) as db:
        for key, statement in zip(keys, TAMPERING.values()):
            db.execute(statement, (bytes.fromhex(key),))

    grader = KeywordGrader()
    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    outcome = run_grading_pass(grader, requests, cache)
    cache.close()
    assert outcome.cache_damaged == len(TAMPERING) == len(grader.graded)
    assert outcome.cache_hits == len(keys) - len(TAMPERING)
    assert outcome.grades == reference.grades and outcome.answers == reference.answers
    assert len(said) == 1 and f"{len(TAMPERING)} cached grades" in said[0] and "were damaged" in said[0] and "graded again" in said[0]
    assert_safe_advice(said[0], path)
    assert outcome.cache_notices == said

    # The regraded rows replaced the damaged ones.
    again, said = grade_into(path, requests)
    assert again.cache_hits == len(keys) and again.cache_damaged == 0 and not said


@pytest.mark.parametrize("tampering", list(TAMPERING), ids=list(TAMPERING))
def test_full_lookup_treats_each_tampering_as_a_miss(tmp_path: Path, tampering: str) -> None:
    path = tmp_path / "grades.sqlite"
    requests = make_requests(2)
    grade_into(path, requests)
    keys = keys_of(requests)
    with raw(path) as db:
        db.execute(TAMPERING[tampering], (bytes.fromhex(keys[0]),))
    cache = GradeCache(path, notify=lambda _: None)
    assert sorted(cache.get_many(keys)) == keys[1:] and cache.damaged == 1
    assert sorted(cache.get_grades(keys)) == keys[1:] and cache.damaged == 2
    cache.close()


def test_a_grade_outside_the_graders_range_is_a_miss() -> None:
    cache = GradeCache(None)
    key = cache_key("f", {"i": 1})
    cache.put_many({key: Grade(grade=4, grader="rating")})
    assert cache.get_grades([key], max_grade=5)[key].grade == 4
    # Read for a 0/1 grader (a key collision, or a row written by a buggy grader): not a grade of it.
    assert cache.get_grades([key], max_grade=1) == {} and cache.get_many([key], max_grade=1) == {}
    assert cache.damaged == 2


# -- damaged pages ---------------------------------------------------------------------------------


def overwrite_page(path: Path, page: int) -> None:
    with raw(path) as db:
        page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
    with path.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\xff" * page_size)


@pytest.fixture(scope="module")
def sound_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[GradingRequest], GradingOutcome]:
    """A real cache file of 800 grades (18 pages), closed (its WAL checkpointed into the file)."""
    path = tmp_path_factory.mktemp("sound") / "grades.sqlite"
    requests = make_requests(400)
    outcome, _ = grade_into(path, requests)
    return path, requests, outcome


def test_a_damaged_page_costs_its_grades_only(
    sound_cache: tuple[Path, list[GradingRequest], GradingOutcome], tmp_path: Path
) -> None:
    original, requests, reference = sound_cache
    path = tmp_path / "copy.sqlite"
    shutil.copy(original, path)
    overwrite_page(path, 10)  # a leaf page of the grades table
    damaged_bytes = path.read_bytes()

    outcome, said = grade_into(path, requests, chunk_size=64)
    assert outcome.grades == reference.grades and not outcome.failures
    assert 0 < outcome.graded < len(requests) // 4 and outcome.cache_hits + outcome.graded == len(requests)
    assert len(said) == 1 and "is damaged" in said[0] and "Move it aside" in said[0]
    assert_safe_advice(said[0], path)
    assert path.read_bytes() == damaged_bytes, "a damaged file must not be written to"


def test_a_damaged_table_root_makes_every_lookup_a_miss(
    sound_cache: tuple[Path, list[GradingRequest], GradingOutcome], tmp_path: Path
) -> None:
    original, requests, reference = sound_cache
    path = tmp_path / "copy.sqlite"
    shutil.copy(original, path)
    overwrite_page(path, 4)  # the root page of the grades table
    outcome, said = grade_into(path, requests)
    assert outcome.cache_hits == 0 and outcome.grades == reference.grades
    assert len(said) == 1 and "is damaged" in said[0]


def test_a_damaged_schema_is_refused_with_a_safe_remedy(
    sound_cache: tuple[Path, list[GradingRequest], GradingOutcome], tmp_path: Path
) -> None:
    original, _, _ = sound_cache
    path = tmp_path / "copy.sqlite"
    shutil.copy(original, path)
    with path.open("r+b") as fh:  # page 1 after the file header: the table of tables
        fh.seek(100)
        fh.write(b"\xff" * 3996)
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="damaged SQLite file") as caught:
        GradeCache(path)
    assert "Move it aside" in str(caught.value)
    assert_safe_advice(str(caught.value), path)
    assert path.read_bytes() == before


# -- files that are not a grade cache ----------------------------------------------------------------


def foreign_database(path: Path, kind: str) -> None:
    with raw(path) as db:
        if kind == "its own tables":
            db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
            db.execute("INSERT INTO notes (text) VALUES ('keep me')")
        elif kind == "tables named like ours":
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE grades (student TEXT, mark INTEGER)")
            db.execute("INSERT INTO meta VALUES ('schema', '1')")
        elif kind == "another application id":
            db.execute("PRAGMA application_id = 1234")
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        elif kind == "only a meta table":
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@pytest.mark.parametrize(
    "kind", ["its own tables", "tables named like ours", "another application id", "only a meta table"]
)
def test_another_programs_database_is_refused_and_left_untouched(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "app.sqlite"
    foreign_database(path, kind)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as caught:
        GradeCache(path)
    message = str(caught.value)
    assert "another program's SQLite database" in message and "--exam-cache" in message
    assert_safe_advice(message, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("my notes, not a database\n")
    with pytest.raises(ConfigError) as caught:
        GradeCache(path)
    message = str(caught.value)
    assert "not a SQLite file" in message and "--exam-cache" in message
    assert_safe_advice(message, path)
    assert path.read_text() == "my notes, not a database\n"


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        GradeCache(tmp_path)


def test_a_cache_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    made = GradeCache(path)
    made.put_rows([])  # a cache file is made with the first store
    made.close()
    with raw(path) as db:
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema'")
    with pytest.raises(ConfigError, match="schema 9, written by a newer exam-harness"):
        GradeCache(path)


# -- read-only caches ----------------------------------------------------------------------------------


def test_a_cache_we_may_not_write_serves_its_hits(
    sound_cache: tuple[Path, list[GradingRequest], GradingOutcome], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file system says no (as for a chmod 444 file): the cache is opened read-only."""
    original, requests, reference = sound_cache
    path = tmp_path / "copy.sqlite"
    shutil.copy(original, path)
    before = path.read_bytes()
    more = make_requests(410)  # ten passages the cache does not hold
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    outcome, said = grade_into(path, more, chunk_size=8)
    assert outcome.cache_hits == len(requests) and outcome.graded == len(more) - len(requests)
    assert outcome.grades == {**reference.grades, **outcome.grades} and len(outcome.grades) == len(more)
    assert len(said) == 1 and "read-only (the file is not writable)" in said[0] and "not stored" in said[0]
    assert_safe_advice(said[0], path)
    assert path.read_bytes() == before


def test_a_cache_in_a_new_folder_we_may_not_create_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    with pytest.raises(ConfigError, match=r"cannot create the grade cache .*not writable"):
        GradeCache(tmp_path / "new" / "grades.sqlite")


READ_ONLY_CHECK = """
import json, os, sys
from exam_harness.grading.cache import GradeCache, cache_key
from exam_harness.core.models import Grade
try:  # the premise: this process may not create a file in the folder
    open(os.path.join(os.path.dirname(sys.argv[1]), "probe"), "x").close()
    denied = False
except PermissionError:
    denied = True
said = []
cache = GradeCache(sys.argv[1], notify=said.append)
keys = json.loads(sys.argv[2])
hits = cache.get_grades(keys)
stored = cache.put_many({cache_key("f", {"new": 1}): Grade(grade=1, grader="g")})
print(json.dumps({"denied": denied, "hits": len(hits), "stored": stored, "said": said}))
"""

# Root passes permission checks by the capabilities below; without them it is held to the bits like
# anyone else. The check runs as root (so it can still reach a checkout and venv in a folder only root
# may enter, as in a fresh `mktemp -d`) on files owned by nobody, with these capabilities dropped.
ROOT_BYPASSES = "-dac_override,-dac_read_search,-fowner,-chown"
NOBODY = 65534


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_really_read_only_file_in_a_read_only_folder(
    sound_cache: tuple[Path, list[GradingRequest], GradingOutcome]
) -> None:
    """chmod 444 on the file and 555 on its folder: SQLite cannot even create the WAL's shared memory
    file, and the grades are still read. The check process first proves it may not write there."""
    original, requests, _ = sound_cache
    folder = Path(tempfile.mkdtemp(prefix="ro-cache-"))
    try:
        path = folder / "grades.sqlite"
        shutil.copy(original, path)
        path.chmod(0o444)
        folder.chmod(0o555)
        command = [sys.executable, "-c", READ_ONLY_CHECK, str(path), json.dumps(keys_of(requests))]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root, which permissions do not bind, without setpriv to drop its "
                            "capabilities: a folder it cannot write cannot be made")
            for made in (path, folder):
                os.chown(made, NOBODY, NOBODY)
            command = [setpriv, f"--bounding-set={ROOT_BYPASSES}", "--inh-caps=-all", *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        if result.returncode != 0 and result.stderr.startswith("setpriv:"):
            pytest.skip(f"running as root, which permissions do not bind, and its capabilities cannot be "
                        f"dropped here: {result.stderr.strip()}")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["denied"], "the check process could create a file in the read-only folder"
        assert report["hits"] == len(requests) and report["stored"] is False
        assert len(report["said"]) == 1 and "is read-only" in report["said"][0]
        assert sorted(p.name for p in folder.iterdir()) == ["grades.sqlite"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


# -- failing writes --------------------------------------------------------------------------------------


class FailingConnection:
    """A connection whose writes fail as SQLite's do on a full disk (at the insert, or at the commit)."""

    def __init__(self, db: sqlite3.Connection, fail_on: str) -> None:
        self._db = db
        self._fail_on = fail_on
        self.attempts = 0

    def _check(self, sql: str) -> None:
        if sql.startswith(self._fail_on):
            self.attempts += 1
            raise sqlite3.OperationalError("database or disk is full")

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._check(sql)
        return self._db.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        self._check(sql)
        return self._db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@pytest.mark.parametrize("fail_on", ["INSERT", "COMMIT"])
def test_a_full_disk_loses_no_grade_and_says_why_once(tmp_path: Path, fail_on: str) -> None:
    path = tmp_path / "grades.sqlite"
    requests = make_requests(20)
    grade_into(path, requests[:10])  # 5 passages are cached before the disk fills up
    reference, _ = grade_into(None, requests)

    said: list[str] = []
    cache = GradeCache(path, notify=said.append)
    failing = FailingConnection(cache._db, fail_on)
    cache._db = failing  # type: ignore[assignment]
    grader = KeywordGrader()
    outcome = run_grading_pass(grader, requests, cache, chunk_size=4)
    cache.close()
    assert outcome.grades == reference.grades and outcome.answers == reference.answers
    assert outcome.cache_hits == 10 and outcome.graded == len(grader.graded) == 30
    assert failing.attempts == 1, "after the first failure no more writes are tried"
    assert len(said) == 1 and cache.write_error == said[0] == outcome.cache_notices[0]
    assert "database or disk is full" in said[0] and "free disk space" in said[0] and "kept in memory" in said[0]
    assert_safe_advice(said[0], path)

    # What was stored before is intact, and nothing half-written is left.
    again, _ = grade_into(path, requests)
    assert again.cache_hits == 10 and again.grades == reference.grades
    with raw(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- from the outside: the pytest plugin ---------------------------------------------------------------


def test_exam_with_a_tampered_and_a_foreign_cache(project: pytest.Pytester) -> None:
    first = project.runpytest("banks")
    assert first.ret == 0
    cache = project.path / ".cache" / "grades.sqlite"
    with raw(cache) as db:
        db.execute("UPDATE grades SET grade = 99 WHERE key = (SELECT min(key) FROM grades)")
        db.execute("UPDATE grades SET record = 'garbage' WHERE key = (SELECT max(key) FROM grades)")
    second = project.runpytest("banks")
    output = second.stdout.str() + second.stderr.str()
    assert second.ret == 0 and "INTERNALERROR" not in output
    assert "2 cached grades of grader 'marker'" in output

    cache.unlink()
    foreign_database(cache, "its own tables")
    before = cache.read_bytes()
    third = project.runpytest("banks")
    output = third.stdout.str() + third.stderr.str()
    assert third.ret == pytest.ExitCode.USAGE_ERROR and "INTERNALERROR" not in output
    assert "another program's SQLite database" in output and "--exam-cache" in output
    assert cache.read_bytes() == before


def test_a_cache_file_is_made_with_the_first_grade_stored(tmp_path: Path) -> None:
    """Opening a cache that is not there creates nothing: a command refused before it grades (a grader that
    can grade none of the banks, a server that is down) leaves no empty file behind (issue 37, finding 10)."""
    path = tmp_path / "sub" / "grades.sqlite"
    cache = GradeCache(path)
    assert cache.get_many(["0" * 32]) == {} and len(cache) == 0
    cache.close()
    assert not path.exists() and not path.parent.exists()
    cache = GradeCache(path)
    cache.put_many({"ab" * 16: Grade(grade=2, grader="g")})
    cache.close()
    again = GradeCache(path)
    assert path.is_file() and len(again) == 1
    again.close()


def test_a_refused_command_leaves_no_cache_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main
    from tests.trec_rag_data import write_exam

    banks, runs = write_exam(tmp_path)
    cache = tmp_path / "cache" / "grades.sqlite"
    # the answer-key grader grades questions with gold answers, and a nugget file has none: refused
    assert main(["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "answer-key",
                 "--cache", str(cache)]) == 4  # a usage error
    assert "cannot grade any of the" in capsys.readouterr().err
    assert not cache.exists()
