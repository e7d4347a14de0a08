"""Kept reports: a folder of numbered JSON reports (``0001_NAME.json``), plain and sorted for git.

``--exam-save NAME`` / ``--exam-autosave`` add the session's report; ``--exam-compare REF`` reads one
back: ``latest`` (the highest number), a number (``3`` or ``0003``), a name (its latest report), or
the path of any report file.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path

from exam_harness.config.options import check_save_name
from exam_harness.core.errors import ConfigError
from exam_harness.io.textio import create_exclusive, locked_folder
from exam_harness.results.json_writer import report_json_pieces
from exam_harness.results.read import read_report
from exam_harness.results.schema import ExamReport

_ENTRY = re.compile(r"(\d{4,})_(.+)\.json")


def entries(folder: Path) -> list[tuple[int, str, Path]]:
    """(number, name, path) of every kept report, oldest first (none where the folder does not exist yet).
    A history path that is not a folder, or a kept report's name on what is not a regular file (a FIFO
    would block the reader), is a ConfigError: it is no history to say "nothing kept" of."""
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise ConfigError(f"the history folder {folder} (--exam-history-dir) is not a folder")
    found = []
    for path in folder.iterdir():
        match = _ENTRY.fullmatch(path.name)
        if match:
            if not path.is_file():
                raise ConfigError(f"{path} is not a regular file (a FIFO, socket, device or folder): a kept report "
                                  "is a plain JSON file; remove it")
            found.append((int(match.group(1)), match.group(2), path))
    return sorted(found)


def save(folder: Path, report: ExamReport, name: str | None) -> Path:
    """Keep ``report`` as the next number; ``name`` None names it by the report's creation time.

    Sessions saving at once get distinct numbers: the folder is locked while the number is chosen, and the
    file is created exclusively (a number taken meanwhile, e.g. on a file system without locks, is retried)."""
    label = name or "auto-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    check_save_name(label)
    folder = Path(os.path.realpath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    with locked_folder(folder):
        _remove_stale_temp_files(folder)
        for _ in range(_TRIES):
            # every entry of a kept report's name counts, a file or not (a FIFO of that name is never written)
            taken = (_ENTRY.fullmatch(p.name) for p in folder.iterdir())
            number = max((int(m.group(1)) for m in taken if m), default=0) + 1
            path = folder / f"{number:04d}_{label}.json"
            if create_exclusive(path, (piece.encode("utf-8") for piece in report_json_pieces(report))):
                return path
    raise OSError(f"cannot keep the report in {folder}: {_TRIES} numbers in a row were taken by other sessions")


_TRIES = 100
# the temp file create_exclusive writes a report into before linking it in place (textio.py)
_TEMP = re.compile(r"\.\d{4,}_.+\.json\..+\.tmp")


def _remove_stale_temp_files(folder: Path) -> None:
    """Remove what a killed save left (issue 31, finding 21): a report's temp file. Called with the folder
    locked, and every save writes with it locked, so a temp file seen now belongs to no running save."""
    for path in folder.iterdir():
        if _TEMP.fullmatch(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)


class NothingKept(ConfigError):
    """The history holds no kept report at all (a first run), so a kept report cannot be named."""


def resolve(folder: Path, ref: str, base: Path) -> Path:
    """The report file ``ref`` names (see the module docstring); a ConfigError says what is kept,
    :class:`NothingKept` when nothing is (a report file given by its path must exist all the same)."""
    candidate = Path(ref) if Path(ref).is_absolute() else base / ref
    if ref.endswith(".json") or any(sep in ref for sep in ("/", "\\", os.sep)):  # a path: no kept name holds these
        if candidate.is_file():
            return candidate
        why = "is not a regular file" if candidate.exists() else "does not exist"
        raise ConfigError(f"--exam-compare {ref}: no such report file ({candidate} {why})")
    kept = entries(folder)
    listed = ", ".join(p.name for _, _, p in kept[-5:]) or "none"
    if not kept:
        shown = "" if ref == "latest" else f" {ref}"
        raise NothingKept(f"--exam-compare{shown}: no kept report in {folder} to compare with; keep one first with "
                          "--exam-save NAME or --exam-autosave")
    if ref == "latest":
        return kept[-1][2]
    if ref.isdigit():
        for number, _, path in kept:
            if number == int(ref):
                return path
        raise ConfigError(f"--exam-compare {ref}: no kept report number {int(ref)} in {folder} (latest: {listed})")
    named = [path for _, name, path in kept if name == ref]
    if named:
        return named[-1]
    raise ConfigError(f"--exam-compare {ref!r}: no kept report of that name in {folder} (latest kept: {listed})")


def load(path: Path) -> ExamReport:
    return read_report(path)
