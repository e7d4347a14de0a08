"""The report folder is written as one unit: a SIGKILL at any moment leaves the old set or the new set,
entries that are not report files survive, and the leftovers of killed writers are cleaned up."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from exam_harness.io import report_set
from exam_harness.io.report_set import MANIFEST, recover, set_files, write_report_set
from exam_harness.io.textio import atomic_write_bytes

NAMES = ("exam-report.json", "exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels")


def _set(tag: str, size: int = 1) -> dict[str, bytes]:
    return {name: f"{tag} {name}\n".encode() * size for name in NAMES}


def _tags(folder: Path) -> set[str]:
    """Which set each report file of ``folder`` belongs to."""
    return {(folder / name).read_text().split(" ", 1)[0] for name in NAMES}


def test_writes_a_new_folder_with_a_manifest(tmp_path: Path) -> None:
    paths = write_report_set(tmp_path / "reports", _set("A"))
    assert sorted(p.name for p in paths) == sorted(NAMES)
    assert set_files(tmp_path / "reports") == sorted(NAMES)
    assert oct((tmp_path / "reports").stat().st_mode & 0o777) == "0o755"
    assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # no staging folder left


def test_replaces_the_set_and_keeps_other_entries(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    write_report_set(folder, {**_set("A"), "dropped-later.qrels": b"A\n"})
    (folder / ".gitkeep").write_text("")
    (folder / "partial").mkdir()
    (folder / "partial" / "exam-report.json").write_text("{}")
    (folder / "notes.txt").write_text("mine")
    write_report_set(folder, _set("B"))
    assert _tags(folder) == {"B"}
    assert not (folder / "dropped-later.qrels").exists()  # a file of the old set, not carried over
    assert (folder / ".gitkeep").exists() and (folder / "notes.txt").read_text() == "mine"
    assert (folder / "partial" / "exam-report.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_contents_in_pieces_are_written_whole(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    pieces = {name: (f"{i} B\n".encode() for i in range(1000)) for name in NAMES}
    write_report_set(folder, pieces)
    expected = "".join(f"{i} B\n" for i in range(1000))
    assert all((folder / name).read_text() == expected for name in NAMES)


def test_an_error_while_making_a_piece_keeps_the_old_set(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    write_report_set(folder, _set("A"))

    def failing() -> Iterator[bytes]:
        yield b"B half a report"
        raise RuntimeError("the report could not be made")

    with pytest.raises(RuntimeError, match="could not be made"):
        write_report_set(folder, {**_set("B"), NAMES[0]: failing()})
    assert _tags(folder) == {"A"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # no staging folder left


def test_atomic_write_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "history" / "0001_main.json"
    atomic_write_bytes(path, iter([b"{", b"}\n"]))
    assert path.read_bytes() == b"{}\n"

    def failing() -> Iterator[bytes]:
        yield b"[half"
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        atomic_write_bytes(path, failing())
    assert path.read_bytes() == b"{}\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["0001_main.json"]  # no temp file left


def test_a_symlinked_folder_is_written_at_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "reports").symlink_to(tmp_path / "real")
    write_report_set(tmp_path / "reports", _set("A"))
    assert (tmp_path / "reports").is_symlink() and _tags(tmp_path / "real") == {"A"}


@pytest.mark.parametrize("name", ["../escape.json", ".hidden", MANIFEST, ""])
def test_file_names_must_be_plain(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="plain visible file names"):
        write_report_set(tmp_path / "reports", {name: b""})


def test_a_committed_set_is_finished_by_recover(tmp_path: Path) -> None:
    """A kill after the journal was written (the commit point) leaves staged files; recover() renames them
    into place, drops the old set's files the new one lacks and makes the journal the manifest."""
    folder = tmp_path / "reports"
    write_report_set(folder, {**_set("A"), "dropped.qrels": b"A\n"})
    staged = {name: f".exam-set-new-999999999-{name}" for name in NAMES}
    for name, tmp in staged.items():
        (folder / tmp).write_bytes(f"B {name}\n".encode())
    journal = {"files": sorted(NAMES), "staged": staged, "drop": ["dropped.qrels"]}
    (folder / report_set.JOURNAL).write_text(json.dumps(journal))
    recover(folder)
    assert _tags(folder) == {"B"} and set_files(folder) == sorted(NAMES)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*NAMES, MANIFEST])


def test_staged_files_of_a_dead_writer_are_removed_and_the_old_set_stands(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    write_report_set(folder, _set("A"))
    (folder / f".exam-set-new-999999999-{NAMES[0]}").write_text("B half")
    recover(folder)
    assert _tags(folder) == {"A"} and sorted(p.name for p in folder.iterdir()) == sorted([*NAMES, MANIFEST])


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from exam_harness.io.report_set import write_report_set
    folder, size = Path(sys.argv[1]), int(sys.argv[2])
    names = {names!r}
    print("ready", flush=True)
    n = 0
    while True:
        tag = "AB"[n % 2]
        write_report_set(folder, {{name: f"{{tag}} {{name}}\\n".encode() * size for name in names}})
        print("wrote", tag, flush=True)
        n += 1
""")


def test_sigkill_at_any_moment_leaves_the_old_or_the_new_set(tmp_path: Path) -> None:
    """40 writers, each killed after 0, 1 or 2 whole sets and a random
    part of the next, in a loop that rewrites a set of four 200 KB files: each time the folder holds one
    whole set, and the next write (recover) leaves no staged file behind. Some kills must
    land mid-write (staged files are left); a file-by-file writer leaves a mixed set in about two
    kills of three."""
    rng = random.Random(20261123)
    folder = tmp_path / "reports"
    write_report_set(folder, _set("A"))
    code = WRITER.format(names=NAMES)
    mid_write = 0
    for trial in range(40):
        with subprocess.Popen([sys.executable, "-c", code, str(folder), "20000"], stdout=subprocess.PIPE) as child:
            assert child.stdout is not None and child.stdout.readline() == b"ready\n"
            for _ in range(trial % 3):  # whole sets written before the kill
                assert child.stdout.readline().startswith(b"wrote ")
            time.sleep(rng.uniform(0.0, 0.03))
            child.send_signal(signal.SIGKILL)
            child.wait()
        mid_write += sum(1 for p in folder.iterdir() if p.name.startswith((".exam-set-new-", report_set.JOURNAL)))
        recover(folder)  # what the next session's write does first
        tags = _tags(folder)
        assert len(tags) == 1, f"mixed report set after a kill: {tags}"
        assert set_files(folder) == sorted(NAMES)
        assert sorted(p.name for p in folder.iterdir()) == sorted([*NAMES, MANIFEST])
    assert mid_write > 0  # some kills landed while a set was being written
    assert json.loads((folder / MANIFEST).read_text())["files"] == sorted(NAMES)
