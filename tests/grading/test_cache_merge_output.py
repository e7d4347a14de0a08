"""``exam-harness cache merge -o OUT`` never loses what OUT held and never copies a damaged row (issue 39,
findings 3 and 12): a grade cache there is merged into (its grades kept), anything else there is refused
untouched; merges into one folder take turns; damaged rows of an input are left out and named; an output
that is a folder or cannot be written is a usage error (exit status 4), not a raw error."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.models import Grade
from exam_harness.grading.cache import GradeCache
from tests.paths import REPO


def key(n: int, salt: str = "") -> str:
    return hashlib.sha256(f"{salt}{n}".encode()).hexdigest()


def cache_with(path: Path, grades: dict[str, int]) -> Path:
    cache = GradeCache(path)
    try:
        assert cache.put_many({k: Grade(grade=g, grader="marker", raw_response=str(g)) for k, g in grades.items()})
    finally:
        cache.close()
    return path


def held(path: Path) -> dict[str, int]:
    cache = GradeCache(path)
    try:
        return {row[0].hex(): row[1] for row in cache.rows()}
    finally:
        cache.close()


def test_an_existing_cache_is_merged_into_and_keeps_every_grade(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a 216-grade cache became the input's 210 (exit 0)."""
    before = {key(n, "old"): n % 6 for n in range(216)}
    shard = {key(n, "new"): n % 6 for n in range(210)}
    shared = {key(0, "old"): 0}  # one key both hold with the same grade
    out = cache_with(tmp_path / "grades.sqlite", before)
    given = cache_with(tmp_path / "shard.sqlite", {**shard, **shared})
    assert main(["cache", "merge", str(given), "-o", str(out)]) == 0
    assert held(out) == {**before, **shard}
    said = capsys.readouterr().out
    assert "426 grades, 216 of them held by" in said and "(1 held by more than one input" in said


def test_a_conflict_with_the_output_is_refused_and_the_output_left_as_it_was(tmp_path: Path) -> None:
    out = cache_with(tmp_path / "grades.sqlite", {key(1): 5})
    given = cache_with(tmp_path / "shard.sqlite", {key(1): 2})
    data = out.read_bytes()
    assert main(["cache", "merge", str(given), "-o", str(out)]) == 4
    assert out.read_bytes() == data


@pytest.mark.parametrize("kind", ["text", "sqlite"])
def test_an_output_that_is_no_grade_cache_is_refused_untouched(tmp_path: Path, kind: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a user's text file became SQLite (exit 0)."""
    given = cache_with(tmp_path / "shard.sqlite", {key(1): 3})
    out = tmp_path / "notes.txt"
    if kind == "text":
        out.write_text("my notes\n")
    else:
        with sqlite3.connect(out) as db:
            db.execute("CREATE TABLE accounts (name TEXT)")
    data = out.read_bytes()
    assert main(["cache", "merge", str(given), "-o", str(out)]) == 4
    err = capsys.readouterr().err
    assert f"-o {out} is merged into, never replaced, and it is no grade cache" in err
    assert out.read_bytes() == data and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "shard.sqlite"]


def test_an_output_that_is_a_folder_or_below_a_file_is_a_usage_error(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before: raw errors, exit 1."""
    given = cache_with(tmp_path / "shard.sqlite", {key(1): 3})
    (tmp_path / "folder").mkdir()
    (tmp_path / "plain").write_text("x")
    for out, says in ((tmp_path / "folder", "is a folder"), (tmp_path / "plain" / "m.sqlite", "cannot write there")):
        assert main(["cache", "merge", str(given), "-o", str(out)]) == 4
        err = capsys.readouterr().err
        assert str(out) in err and says in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files and folders")
def test_a_read_only_output_or_folder_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    given = cache_with(tmp_path / "shard.sqlite", {key(1): 3})
    out = cache_with(tmp_path / "kept.sqlite", {key(2): 1})
    out.chmod(0o444)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert main(["cache", "merge", str(given), "-o", str(out)]) == 4
        assert "is read-only" in capsys.readouterr().err
        assert main(["cache", "merge", str(given), "-o", str(locked / "m.sqlite")]) == 4
        assert "is not writable" in capsys.readouterr().err
    finally:
        locked.chmod(0o755)
        out.chmod(0o644)


def test_damaged_rows_are_left_out_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: grade 999 and a record that is not JSON were copied without a word."""
    grades = {key(n): n % 6 for n in range(6)}
    given = cache_with(tmp_path / "shard.sqlite", grades)
    ordered = sorted(grades)
    with sqlite3.connect(given) as db:
        db.execute("UPDATE grades SET grade = 999 WHERE key = ?", (bytes.fromhex(ordered[1]),))
        db.execute("UPDATE grades SET record = 'not json {' WHERE key = ?", (bytes.fromhex(ordered[3]),))
    out = tmp_path / "merged.sqlite"
    assert main(["cache", "merge", str(given), "-o", str(out)]) == 0
    assert held(out) == {k: g for k, g in grades.items() if k not in (ordered[1], ordered[3])}
    captured = capsys.readouterr()
    assert f"{given}: row 2 (key {ordered[1][:16]}...): grade 999 is not a grade 0..5; left out" in captured.err
    assert f"{given}: row 4 (key {ordered[3][:16]}...): its record is not JSON; left out" in captured.err
    assert "4 grades" in captured.out and "2 damaged rows left out" in captured.out


MERGE = "import sys; from exam_harness.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_merge_into_a_folder_another_merge_holds_waits_for_it(tmp_path: Path) -> None:
    """Before: two merges into one output shared one partial name; the second unlinked the first's, and one said
    "merged N grades" over an output with no grades table."""
    from exam_harness.io.textio import locked_folder

    first = cache_with(tmp_path / "a.sqlite", {key(n, "a"): n % 6 for n in range(50)})
    second = cache_with(tmp_path / "b.sqlite", {key(n, "b"): n % 6 for n in range(50)})
    out = tmp_path / "merged.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    lock = contextlib.ExitStack()
    lock.enter_context(locked_folder(tmp_path))  # a merge into this folder is running (here: the test holds its lock)
    with subprocess.Popen([sys.executable, "-c", MERGE, "cache", "merge", str(first), "-o", str(out)], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
        with lock:
            assert child.stderr is not None
            line = child.stderr.readline()  # it says it waits, and waits
            assert "another merge into" in line and "waiting" in line
            assert child.poll() is None and not out.exists()
        assert child.wait(60) == 0
    assert main(["cache", "merge", str(second), "-o", str(out)]) == 0
    assert len(held(out)) == 100


@pytest.mark.slow
def test_two_merges_at_once_into_one_output_keep_every_grade(tmp_path: Path) -> None:
    inputs = [cache_with(tmp_path / f"s{i}.sqlite", {key(n, str(i)): n % 6 for n in range(20_000)}) for i in (1, 2)]
    out = tmp_path / "merged.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = threading.Barrier(2)
    results: list[subprocess.CompletedProcess[str]] = []

    def merge(given: Path) -> None:
        start.wait()
        results.append(subprocess.run([sys.executable, "-c", MERGE, "cache", "merge", str(given), "-o", str(out)],
                                      env=env, capture_output=True, text=True, timeout=300, check=False))

    threads = [threading.Thread(target=merge, args=(given,)) for given in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert len(held(out)) == 40_000  # both merges' grades: the second merged into what the first wrote
    assert not [p.name for p in tmp_path.iterdir() if ".merging" in p.name]


def test_a_killed_merges_partial_files_are_removed_by_the_next_and_nothing_else(tmp_path: Path) -> None:
    given = cache_with(tmp_path / "s.sqlite", {key(1): 3})
    out = tmp_path / "merged.sqlite"
    for leftover in (".merged.sqlite.merging-999999", ".merged.sqlite.merging-999999-wal", ".merged.sqlite.merging-x"):
        (tmp_path / leftover).write_text("x")
    assert main(["cache", "merge", str(given), "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if ".merging" in p.name) == [".merged.sqlite.merging-x"]
