"""A report set written into its folder as one unit, touching nothing else there.

The harness owns its files in the folder and nothing more: the set's manifest
(``.exam-report-set.json``) names them, and every other entry (``.gitkeep``, a ``partial/`` folder, a
user's notes) is never deleted, moved or re-created; the folder itself stays the same folder (a shell
in it stays in it). A folder that holds a version-control folder is refused.

Each new file is first written beside its place as ``.exam-set-new-PID-NAME``; then a journal
(``.exam-report-set.next.json``, naming the staged files and the old set's files to drop) is written
atomically: that is the commit point. The staged files are then renamed into place, the dropped ones
removed and the journal renamed to the manifest. After a kill before the commit the old set stands
(the staged files are removed); after it, the next write (or :func:`recover`) finishes the new set.
Either way, once recovered, the folder holds one whole set. Writers of one folder take turns (a lock
on the folder itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from exam_harness.core.errors import InputError, OutputError
from exam_harness.io.textio import locked_folder, read_json_file

MANIFEST = ".exam-report-set.json"
JOURNAL = ".exam-report-set.next.json"
_STAGED = re.compile(r"\.exam-set-new-(\d+)-(.+)")
# what the atomic writer (textio.atomic_write_bytes) leaves when killed: .NAME.XXXXXXXX.tmp
_ATOMIC_TMP = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.tmp")
VERSION_CONTROL = (".git", ".hg", ".svn")


def write_report_set(folder: Path, files: Mapping[str, bytes | Iterable[bytes]]) -> list[Path]:
    """Replace the report set in ``folder`` by ``files`` (plain file names -> contents, whole or in
    pieces written as they come; an error while making them leaves the old set in place) as one unit.

    Returns the written paths. ``folder`` may not exist yet; a symlinked folder is written at its target.
    A name of the set held by something the harness did not write (a user's file, a link, a folder) is
    refused (:class:`OutputError`) before anything changes.
    """
    for name in files:
        if not name or Path(name).name != name or name.startswith(".") or name == MANIFEST:
            raise ValueError(f"report set file names are plain visible file names, not {name!r}")
    folder = Path(os.path.realpath(folder))
    check_owned_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with locked_folder(folder):
        _recover_locked(folder)
        old = set(set_files(folder))
        _check_names(folder, files, old)
        staged: dict[str, str] = {}
        try:
            for name, data in files.items():
                staged[name] = f".exam-set-new-{os.getpid()}-{name}"
                _write(folder / staged[name], data)
            journal = {"files": sorted(files), "staged": staged, "drop": sorted(old - set(files))}
            _write(folder / f"{JOURNAL}.{os.getpid()}", (json.dumps(journal, indent=2) + "\n").encode())
            _fsync_dir(folder)
            os.replace(folder / f"{JOURNAL}.{os.getpid()}", folder / JOURNAL)  # the commit point
        except BaseException:
            for tmp in [*staged.values(), f"{JOURNAL}.{os.getpid()}"]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(folder / tmp)
            raise
        _finish(folder)
    return [folder / name for name in files]


def check_owned_folder(folder: Path, *, rootdir: Path | None = None, inputs: Sequence[Path] = (),
                       label: str = "report folder") -> None:
    """Refuse a report folder the harness cannot own: one holding a version-control folder, the project
    folder (``rootdir``) or a folder above it, or one that holds an input (a bank or run file or folder).
    Messages start with ``label`` (the option that named the folder)."""
    from exam_harness.core.paths import shown_path

    real = Path(os.path.realpath(folder))
    folder = Path(shown_path(folder))  # as the user wrote it: options hold absolute paths
    if real.exists() and not real.is_dir():
        raise OutputError(f"{label} {folder}: exists and is not a folder")
    for vcs in VERSION_CONTROL:
        if (real / vcs).exists():
            raise OutputError(f"{label} {folder}: holds {vcs}, so it is a project folder, not a report folder; "
                              "give a folder of its own (default: reports)")
    if rootdir is not None:
        root = Path(os.path.realpath(rootdir))
        if root == real or real in root.parents:
            where = "" if root == real else " or above it"
            raise OutputError(f"{label} {folder}: is the project folder {rootdir}{where}; give a folder of its own "
                              "(default: reports)")
    for given in inputs:
        source = Path(os.path.realpath(given))
        if source == real or real in source.parents:
            raise OutputError(f"{label} {folder}: holds the input {given}; give a folder of its own "
                              "(default: reports)")


def recover(folder: Path) -> None:
    """Finish or undo what a killed writer left in ``folder``: a committed set is completed, staged files
    and temporary files of writers that no longer run are removed (only names of the exact patterns)."""
    folder = Path(os.path.realpath(folder))
    if not folder.is_dir():
        return
    with locked_folder(folder):
        _recover_locked(folder)


def set_files(folder: Path) -> list[str]:
    """The file names of the set in ``folder`` by its manifest (empty without one)."""
    try:
        names = read_json_file(folder / MANIFEST)[1].get("files", [])  # bounded: the folder is the user's
    except (OSError, InputError, AttributeError):
        return []
    return [n for n in names if isinstance(n, str) and n and Path(n).name == n and not n.startswith(".")]


def check_names(folder: Path, files: Iterable[str]) -> None:
    """Refuse, before anything is computed, a name of ``files`` held in ``folder`` by something the harness did
    not write (a user's own ``exam-report.json``): the check :func:`write_report_set` makes, made early."""
    real = Path(os.path.realpath(folder))
    if real.is_dir():
        _check_names(real, files, set(set_files(real)))


def _check_names(folder: Path, files: Iterable[str], old: set[str]) -> None:
    from exam_harness.core.paths import shown_path

    for name in files:
        try:
            mode = os.lstat(folder / name).st_mode
        except FileNotFoundError:
            continue
        shown = shown_path(folder / name)  # relative to the current folder where it lies below it
        if not stat.S_ISREG(mode):
            raise OutputError(f"{shown}: is not a regular file, so it is not a report the harness wrote; "
                              "move it away or give another report folder")
        if name not in old:
            raise OutputError(f"{shown}: a file the harness did not write (the folder's {MANIFEST} does not "
                              "name it); move it away or give another report folder")


def _finish(folder: Path) -> None:
    """Complete a committed set: staged files into place, old files dropped, the journal made the manifest."""
    try:
        journal = read_json_file(folder / JOURNAL)[1]
        staged = dict(journal["staged"])
        drop = list(journal["drop"])
    except (OSError, InputError, ValueError, KeyError, TypeError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / JOURNAL)  # a journal that cannot be read was not written by a committed writer
        return
    for name, tmp in staged.items():
        if _plain(name) and _STAGED.fullmatch(tmp) and (folder / tmp).is_file():
            os.replace(folder / tmp, folder / name)
    for name in drop:
        path = folder / name
        if _plain(name) and name not in staged and path.is_file() and not path.is_symlink():
            path.unlink()
    _fsync_dir(folder)
    os.replace(folder / JOURNAL, folder / MANIFEST)
    _fsync_dir(folder)


def _recover_locked(folder: Path) -> None:
    if (folder / JOURNAL).exists():
        _finish(folder)
    for entry in folder.iterdir():
        name = entry.name
        staged = _STAGED.fullmatch(name)
        pid = staged.group(1) if staged else None
        if pid is None and name.startswith(JOURNAL + ".") and name[len(JOURNAL) + 1:].isdigit():
            pid = name[len(JOURNAL) + 1:]
        if pid is not None and not _alive(int(pid)) and entry.is_file() and not entry.is_symlink():
            entry.unlink()
        elif _ATOMIC_TMP.fullmatch(name) and entry.is_file() and not entry.is_symlink():
            # single files a killed atomic write left, for files of the set only
            base = _ATOMIC_TMP.fullmatch(name)
            if base is not None and base.group(1) in set_files(folder):
                entry.unlink()


def _plain(name: object) -> bool:
    return isinstance(name, str) and bool(name) and Path(name).name == name and not name.startswith(".")


def _write(path: Path, data: bytes | Iterable[bytes]) -> None:
    with open(path, "xb") as handle:
        if isinstance(data, bytes):
            handle.write(data)
        else:
            handle.writelines(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, 0o644)


def _alive(pid: int) -> bool:
    """Whether the process that staged a file still runs (this process's own leftovers are dead ones:
    its writes are serialised by the lock)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the data files themselves were synced
    finally:
        os.close(fd)
