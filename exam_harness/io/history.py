"""Kept reports: a folder of numbered JSON reports (``0001_NAME.json``), plain and sorted for git.

``--exam-save NAME`` / ``--exam-autosave`` add the session's report; ``--exam-compare REF`` reads one
back: ``latest`` (the highest number), a number (``3`` or ``0003``), a name (its latest report), or
the path of any report file.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from exam_harness.errors import ConfigError
from exam_harness.io.report import read_report
from exam_harness.io.textio import atomic_write_bytes
from exam_harness.report.reporters import report_json_pieces
from exam_harness.report.schema import ExamReport

_ENTRY = re.compile(r"(\d{4,})_(.+)\.json")


def entries(folder: Path) -> list[tuple[int, str, Path]]:
    """(number, name, path) of every kept report, oldest first."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _ENTRY.fullmatch(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), match.group(2), path))
    return sorted(found)


def save(folder: Path, report: ExamReport, name: str | None) -> Path:
    """Keep ``report`` as the next number; ``name`` None names it by the report's creation time."""
    number = max((n for n, _, _ in entries(folder)), default=0) + 1
    label = name or "auto-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"{number:04d}_{label}.json"
    atomic_write_bytes(path, (piece.encode("utf-8") for piece in report_json_pieces(report)))
    return path


class NothingKept(ConfigError):
    """The history holds no kept report at all (a first run), so a kept report cannot be named."""


def resolve(folder: Path, ref: str, base: Path) -> Path:
    """The report file ``ref`` names (see the module docstring); a ConfigError says what is kept,
    :class:`NothingKept` when nothing is (a report file given by its path must exist all the same)."""
    kept = entries(folder)
    listed = ", ".join(p.name for _, _, p in kept[-5:]) or "none"
    candidate = Path(ref) if Path(ref).is_absolute() else base / ref
    if ref.endswith(".json") and candidate.is_file():
        return candidate
    if not kept and not ref.endswith(".json"):
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
    raise ConfigError(f"--exam-compare {ref!r}: no kept report of that name in {folder}, and no such report file "
                      f"(latest kept: {listed})")


def load(path: Path) -> ExamReport:
    return read_report(path)
