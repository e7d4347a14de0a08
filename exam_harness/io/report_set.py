"""A report folder written as one unit: after a kill at any moment it holds the old set or the new one.

The new set is written into a staging folder beside the report folder, entries that are not part of
any set (``.gitkeep``, a ``partial/`` folder, a user's notes) are hard-linked into it, and the two
folders are exchanged in one step (Linux ``renameat2(RENAME_EXCHANGE)``). Where the exchange is not
available the old folder is renamed aside and the new one into place; a kill between those two renames
leaves the old folder aside, and the next write (or :func:`recover`) puts it back. Leftovers of killed
writers are removed the next time the folder is written. ``.exam-report-set.json`` names the files of
the set, so a file the previous set wrote and this one does not is not carried over.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

MANIFEST = ".exam-report-set.json"
_NEW, _OLD = ".new-", ".old-"


def write_report_set(folder: Path, files: Mapping[str, bytes | Iterable[bytes]]) -> list[Path]:
    """Replace the report set in ``folder`` by ``files`` (plain file names -> contents, whole or in
    pieces written as they come; an error while making them leaves the old set in place) as one unit.

    Returns the written paths. ``folder`` may not exist yet; a symlinked folder is written at its target.
    """
    for name in files:
        if not name or Path(name).name != name or name.startswith(".") or name == MANIFEST:
            raise ValueError(f"report set file names are plain visible file names, not {name!r}")
    folder = Path(os.path.realpath(folder))
    folder.parent.mkdir(parents=True, exist_ok=True)
    recover(folder)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}{_NEW}{os.getpid()}-", dir=folder.parent))
    try:
        for name, data in files.items():
            _write(staging / name, data)
        _write(staging / MANIFEST, (json.dumps({"files": sorted(files)}, indent=2) + "\n").encode())
        if folder.is_dir():
            _carry_over(folder, staging, set(files))
            os.chmod(staging, folder.stat().st_mode & 0o7777)
        else:
            os.chmod(staging, 0o755)  # mkdtemp made it private; a report folder is an ordinary folder
        _fsync_dir(staging)
        _install(staging, folder)
    finally:
        # After the exchange the staging path holds the old set; before it, a half-written new set. What
        # cannot be removed now is removed by the next write's recover(), so it is not an error here.
        shutil.rmtree(staging, ignore_errors=True)
    _fsync_dir(folder.parent)
    return [folder / name for name in files]


def recover(folder: Path) -> None:
    """Undo what a killed writer left beside ``folder``: restore a folder renamed aside when the folder
    itself is missing, and remove staging and aside folders of writers that are no longer running."""
    folder = Path(os.path.realpath(folder))
    parent = folder.parent
    if not parent.is_dir():
        return
    aside = sorted(parent.glob(f".{folder.name}{_OLD}*"), key=lambda p: p.stat().st_mtime)
    if not folder.exists() and aside:
        os.rename(aside.pop(), folder)  # the newest one is the set that was in place
    for leftover in [*aside, *parent.glob(f".{folder.name}{_NEW}*")]:
        if not _writer_alive(leftover.name):
            shutil.rmtree(leftover, ignore_errors=True)
    # single files a killed atomic write left in the folder itself
    if folder.is_dir():
        for tmp in folder.glob(".*.tmp"):
            if tmp.is_file():
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()


def set_files(folder: Path) -> list[str]:
    """The file names of the set in ``folder`` by its manifest (empty without one)."""
    try:
        names = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [n for n in names if isinstance(n, str)]


def _write(path: Path, data: bytes | Iterable[bytes]) -> None:
    with open(path, "wb") as handle:
        if isinstance(data, bytes):
            handle.write(data)
        else:
            handle.writelines(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, 0o644)


def _carry_over(old: Path, new: Path, replaced: set[str]) -> None:
    """Hard-link into ``new`` every entry of ``old`` that is not a file of the old or the new set."""
    dropped = replaced | set(set_files(old)) | {MANIFEST}
    for entry in old.iterdir():
        if entry.name in dropped or entry.name.endswith(".tmp"):
            continue
        target = new / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(entry), str(target))


def _link_or_copy(src: str, dst: str) -> str:
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
        return dst
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)  # a file system without hard links
    return dst


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, f"cannot exchange {a} and {b}: {os.strerror(code)}")


def _install(staging: Path, folder: Path) -> None:
    if not folder.exists():
        os.rename(staging, folder)
        return
    if _exchange(staging, folder):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}{_OLD}{os.getpid()}-", dir=folder.parent))
    os.rmdir(aside)
    os.rename(folder, aside)
    os.rename(staging, folder)
    os.rename(aside, staging)


def _writer_alive(name: str) -> bool:
    """Whether the process that made a staging or aside folder (``.NAME.new-PID-XXXX``) still runs."""
    marker = _NEW if _NEW in name else _OLD
    pid_text = name.rsplit(marker, 1)[-1].split("-", 1)[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
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
