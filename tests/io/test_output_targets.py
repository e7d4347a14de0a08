"""Every writer of the project against what it does not own: a symlink is written through (the link kept,
its target replaced), a FIFO nobody reads is refused at once and stays a FIFO, a character device is
written in place, and a folder's foreign entries (checksums, the folder's inode) are left untouched.

The walk covers each writer a user reaches (the atomic writer, qrels, kept reports, the HTML report,
the report set, ``evaluate --json/--plot/--qrels-dir/--export-workbench``, ``analyze --json``,
``calibrate --json``); test_every_writer_goes_through_the_owned_writers checks that no other module
writes files another way.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import OutputError
from exam_harness.io.qrels import write_qrels
from exam_harness.io.report_set import check_owned_folder, write_report_set
from exam_harness.io.textio import atomic_write_bytes, atomic_write_text
from exam_harness.report.html import write_html_report
from exam_harness.results import history
from exam_harness.results.schema import ExamReport
from tests.helpers import write_exam
from tests.paths import GOLDEN, REPO

pytest_plugins = ["pytester"]

PACKAGE = REPO / "exam_harness"


def _report() -> ExamReport:
    raw = json.loads((GOLDEN / "exam-report.json").read_text())  # the golden report lacks what varies by run
    return ExamReport.model_validate({**raw, "tool_version": "0", "created": "2026-01-01T00:00:00Z"})


@dataclass(frozen=True)
class Writer:
    """``write(place, tmp_path)`` writes into ``place``: the output file, or the output folder when
    ``folder_file`` names the file the writer makes there."""

    name: str
    write: Callable[[Path, Path], object]
    folder_file: str | None = None
    file_name: str = "out.json"


def _cli(*args: str) -> Callable[[Path, Path], object]:
    def run(place: Path, tmp_path: Path) -> object:
        exam = write_exam(tmp_path / "data")[0]
        code = main([a.format(exam=exam, place=place) for a in args])
        if code != 0:
            raise OutputError(f"exit {code}")
        return code

    return run


def _set(place: Path, tmp_path: Path) -> object:
    return write_report_set(place, {"exam-report.json": b"{}\n", "exam-max-grade.qrels": b"q 0 p 1\n"})


WRITERS = [
    Writer("atomic-text", lambda p, _t: atomic_write_text(p, "new\n")),
    Writer("atomic-bytes-gz", lambda p, _t: atomic_write_bytes(p, gzip.compress(b"new\n"))),
    Writer("qrels", lambda p, _t: write_qrels(p, {"q1": {"p1": 1}})),
    Writer("history-save", lambda p, _t: history.save(p, _report(), "main"), folder_file="0001_main.json"),
    Writer("html-report", lambda p, _t: write_html_report(_report(), p), folder_file="index.html"),
    Writer("report-set", _set, folder_file="exam-report.json"),
    Writer("evaluate-json", _cli("evaluate", "{exam}", "--k", "2", "--bootstrap", "0", "--json", "{place}")),
    Writer("evaluate-qrels", _cli("evaluate", "{exam}", "--k", "2", "--bootstrap", "0", "--qrels-dir", "{place}"),
           folder_file="exam-max-grade.qrels"),
    Writer("evaluate-workbench", _cli("evaluate", "{exam}", "--k", "2", "--bootstrap", "0",
                                      "--export-workbench", "{place}"), file_name="out.jsonl"),
    Writer("analyze-json", _cli("analyze", "missing", "{exam}", "--min-grade", "5", "--json", "{place}")),
]
FILE_WRITERS = [w for w in WRITERS if w.folder_file is None]


def _digest(folder: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below ``folder``: its kind, inode and content digest (links by their target text)."""
    seen = {}
    for entry in sorted(folder.rglob("*")):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            seen[str(entry.relative_to(folder))] = ("link", info.st_ino, os.readlink(entry))
        elif stat.S_ISREG(info.st_mode):
            seen[str(entry.relative_to(folder))] = ("file", info.st_ino, hashlib.sha256(entry.read_bytes()).hexdigest())
        else:
            seen[str(entry.relative_to(folder))] = (stat.filemode(info.st_mode)[0], info.st_ino, "")
    return seen


def _foreign(folder: Path) -> None:
    """A folder with entries a user made, names chosen to look like what a writer might clean up."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.tmp").write_text("mine")
    (folder / "work.tmp").write_text("mine too")
    (folder / ".notes.abcdefgh.tmp").write_text("hidden, temp-like")
    (folder / ".exam-set-new-x-notes").write_text("looks staged but is not a pid")
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.txt").write_text("deep")
    (folder / "link").symlink_to("notes.tmp")


def _output_of(writer: Writer, place: Path) -> Path:
    return place / writer.folder_file if writer.folder_file else place


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_symlink_is_written_through(tmp_path: Path, writer: Writer) -> None:
    real = tmp_path / "elsewhere" / f"real-{writer.file_name}"
    if writer.folder_file:
        real.mkdir(parents=True)
    else:
        real.parent.mkdir()
        real.write_bytes(b"old\n")
    link = tmp_path / "out" / writer.file_name
    link.parent.mkdir()
    link.symlink_to(real)
    writer.write(link, tmp_path)
    assert link.is_symlink() and os.readlink(link) == str(real)
    written = _output_of(writer, real)
    assert written.is_file() and written.read_bytes() != b"old\n"
    assert sorted(p.name for p in link.parent.iterdir()) == [writer.file_name]  # no temp file beside the link


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_fifo_nobody_reads_is_refused_and_stays_a_fifo(tmp_path: Path, writer: Writer) -> None:
    place = tmp_path / "out" if writer.folder_file else tmp_path / "out" / writer.file_name
    fifo = _output_of(writer, place)
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    if writer.name == "history-save":  # a kept report takes the next number: the FIFO's is taken
        assert writer.write(place, tmp_path) == place.resolve() / "0002_main.json"
    else:
        with pytest.raises(OutputError):
            writer.write(place, tmp_path)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in fifo.parent.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".exam-")] == []


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_folder_of_foreign_entries_is_left_as_it_was(tmp_path: Path, writer: Writer) -> None:
    folder = tmp_path / "out"
    _foreign(folder)
    before, inode = _digest(folder), folder.stat().st_ino
    place = folder if writer.folder_file else folder / writer.file_name
    writer.write(place, tmp_path)
    writer.write(place, tmp_path)  # a second write replaces the writer's own files only
    after = _digest(folder)
    assert folder.stat().st_ino == inode  # the same folder, not a re-created one
    assert {k: v for k, v in after.items() if k in before} == before
    made = set(after) - set(before)
    assert _output_of(writer, place).relative_to(folder).as_posix() in made or writer.name == "history-save"
    assert not [m for m in made if m.endswith(".tmp")]


def test_a_fifo_with_a_reader_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        atomic_write_text(fifo, "through the pipe\n")
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_character_device_is_written_in_place_never_replaced() -> None:
    if not os.access("/dev/null", os.W_OK):
        pytest.skip("/dev/null is not writable here")
    before = os.stat("/dev/null")
    atomic_write_text(Path("/dev/null"), "discarded\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev


def test_a_socket_and_a_folder_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(OutputError, match="is a socket"):
            atomic_write_text(sock_path, "x")
    assert stat.S_ISSOCK(sock_path.lstat().st_mode)
    (tmp_path / "dir").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        atomic_write_text(tmp_path / "dir", "x")
    link = tmp_path / "to-dir"
    link.symlink_to(tmp_path / "dir")
    with pytest.raises(OutputError, match=r"to-dir \(-> .*dir\): is a folder"):
        atomic_write_text(link, "x")


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made" / "target.json")
    atomic_write_text(link, "{}\n")
    assert link.is_symlink() and (tmp_path / "made" / "target.json").read_text() == "{}\n"


@pytest.mark.parametrize("vcs", [".git", ".hg", ".svn"])
def test_a_report_folder_with_version_control_is_refused(tmp_path: Path, vcs: str) -> None:
    (tmp_path / vcs).mkdir()
    (tmp_path / vcs / "HEAD").write_text("ref")
    before = _digest(tmp_path)
    with pytest.raises(OutputError, match=f"holds {vcs}, so it is a project folder"):
        write_report_set(tmp_path, {"exam-report.json": b"{}"})
    assert _digest(tmp_path) == before


def test_the_rootdir_and_folders_of_inputs_are_refused(tmp_path: Path) -> None:
    (tmp_path / "project" / "banks").mkdir(parents=True)
    root = tmp_path / "project"
    with pytest.raises(OutputError, match="is the project folder"):
        check_owned_folder(root, rootdir=root)
    with pytest.raises(OutputError, match="or above it"):
        check_owned_folder(tmp_path, rootdir=root)
    with pytest.raises(OutputError, match="holds the input"):
        check_owned_folder(root / "banks", rootdir=root, inputs=[root / "banks" / "exam.yaml"])
    with pytest.raises(OutputError, match="holds the input"):
        check_owned_folder(root / "banks", rootdir=root, inputs=[root / "banks"])
    check_owned_folder(root / "reports", rootdir=root, inputs=[root / "banks"])  # a folder of its own


@pytest.mark.parametrize("kind", ["user-file", "symlink", "folder"])
def test_a_set_name_held_by_something_the_harness_did_not_write_is_refused(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    target = folder / "exam-report.json"
    if kind == "user-file":
        target.write_text("my own notes")
    elif kind == "symlink":
        (tmp_path / "precious").write_text("keep")
        target.symlink_to(tmp_path / "precious")
    else:
        target.mkdir()
    before = _digest(tmp_path)
    with pytest.raises(OutputError, match=r"exam-report\.json"):
        write_report_set(folder, {"exam-report.json": b"{}"})
    assert _digest(tmp_path) == before


@pytest.mark.slow
def test_every_writer_goes_through_the_owned_writers() -> None:
    """No module writes a file except the atomic writer (io/textio.py), the report set (io/report_set.py)
    and the caches (SQLite): an ``open`` for writing, ``write_text``/``write_bytes``, ``os.replace``/
    ``os.rename`` or ``shutil.rmtree`` elsewhere is a writer this walk would miss."""
    allowed = {"io/textio.py", "io/report_set.py"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in {"write_text", "write_bytes", "rmtree", "replace", "rename", "unlink"} and not (
                    name == "replace" and not _is_os(node.func)):
                found.append(f"{rel} {name}")
            if name == "open" and _is_os(node.func) and {"O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT"} & {
                    n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}:
                found.append(f"{rel} open for writing")  # os.open(path, os.O_WRONLY | ...)
            elif name == "open" and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                      and set(a.value) & set("wax+") for a in [*node.args[1:2],
                                      *(k.value for k in node.keywords if k.arg == "mode")]):
                found.append(f"{rel} open for writing")
    assert found == KNOWN_OTHER_WRITERS


def _is_os(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in {"os", "shutil"}


# writers that are not outputs the user names (each checked here so that a new one is looked at)
KNOWN_OTHER_WRITERS: list[str] = [
    "cli/__init__.py open for writing",  # os.devnull as stdout once a pipe's reader went away (no file written)
    # a live system's recording of no answered query: its own data file is removed (an empty run file is refused;
    # docs/live-systems.md), never a file it did not write (data_files names only <system>.responses.jsonl etc.)
    "features/live_systems/recording.py unlink",
    "features/live_systems/recording.py unlink",  # a recording's journal, once the recording holds every entry it kept
    # cache merge: a SQLite cache built as a hidden partial file beside the output (.NAME.merging-PID), moved into
    # place when whole; partials of killed merges removed (only that pattern, with the folder locked)
    "grading/merge.py replace", "grading/merge.py unlink",
    "report/writers.py open for writing",  # appending to $GITHUB_STEP_SUMMARY (checked in test_summaries)
    # the temp file a killed --exam-save left in the history folder (only that pattern, with the folder locked)
    "results/history.py unlink",
]


# --- the pytest session: refused before grading, named in the message ----------------------------------
@pytest.mark.parametrize(("report_dir", "message"), [
    (".", "is the project folder"),
    ("banks", "holds the input"),
    ("runs", "holds the input"),
])
def test_the_session_refuses_a_report_folder_it_cannot_own(
        project: pytest.Pytester, report_dir: str, message: str) -> None:
    (project.path / "work.tmp").write_text("mine")
    (project.path / "banks" / "notes.tmp").write_text("mine")
    before, inode = _digest(project.path), project.path.stat().st_ino
    result = project.runpytest("banks", f"--exam-report-dir={report_dir}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exam-report-dir *{message}*give a folder of its own*"])
    assert not (project.path / ".cache" / "grades.sqlite").exists()  # refused before grading
    after = _digest(project.path)
    assert {k: v for k, v in after.items() if k in before} == before and project.path.stat().st_ino == inode


def test_the_session_writes_markdown_through_a_symlink_and_into_dev_null(project: pytest.Pytester) -> None:
    (project.path / "kept").mkdir()
    (project.path / "summary.md").symlink_to(project.path / "kept" / "summary.md")
    result = project.runpytest("banks", "--exam-markdown=summary.md")
    assert result.ret == 0
    assert (project.path / "summary.md").is_symlink() and "good" in (project.path / "kept" / "summary.md").read_text()
    if os.access("/dev/null", os.W_OK):
        before = os.stat("/dev/null")
        assert project.runpytest("banks", "--exam-markdown=/dev/null").ret == 0
        after = os.stat("/dev/null")
        assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_the_session_refuses_a_socket_as_markdown_before_grading(project: pytest.Pytester, tmp_path: Path) -> None:
    sock_path = project.path / "summary.md"
    assert Path.cwd() == project.path  # pytester works in its folder
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("summary.md")  # relative: a socket's path is at most 107 bytes, a worker's tmp path may be longer
        result = project.runpytest("banks", f"--exam-markdown={sock_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*summary.md*is a socket*"])
    assert not (project.path / "reports").exists()  # refused before grading: no report written
