"""Shared reading and writing helpers: gzip-transparent text files, JSON lines, atomic writes.

Every reader turns the usual low-level failures (missing file, bad gzip, bad UTF-8, bad JSON) into
an :class:`~exam_harness.errors.InputError` that names the file and, where known, the line.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from exam_harness.errors import InputError


def is_gz(path: Path) -> bool:
    return path.name.endswith(".gz")


def base_name(path: Path) -> str:
    """The file name without a trailing ``.gz``: ``a.run.gz`` -> ``a.run``."""
    return path.name[:-3] if is_gz(path) else path.name


def open_text(path: Path) -> IO[str]:
    """Open a UTF-8 text file for reading, decompressing ``.gz`` transparently."""
    try:
        if is_gz(path):
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
        return open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=path) from None


def read_text(path: Path) -> str:
    """The whole file as text (``.gz`` decompressed), with decode errors reported as InputError."""
    with open_text(path) as fh:
        try:
            return fh.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 text ({exc.reason})", path=path) from None
        except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
            raise InputError(f"cannot read: {exc}", path=path) from None


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, without the line end), decoding errors as InputError."""
    lineno = 0
    with open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                yield lineno, line.rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 text ({exc.reason})", path=path, line=lineno + 1) from None
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=path, line=lineno + 1) from None


def parse_json_line(text: str, path: Path, lineno: int) -> Any:
    """Parse one JSON line; a syntax error names the file, line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at column {exc.colno}: {exc.msg}",
            path=path,
            line=lineno + exc.lineno - 1,
            expected="one JSON value per line",
        ) from None


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line of a JSON-lines file."""
    for lineno, line in iter_lines(path):
        if line.strip():
            yield lineno, parse_json_line(line, path, lineno)


def first_json_line(path: Path) -> Any:
    """The first non-blank line of a JSON-lines file parsed, or ``None`` for an empty file.

    Used to sniff a file's kind; raises InputError when that line is not JSON.
    """
    for _lineno, value in iter_json_lines(path):
        return value
    return None


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (gzip-compressed for ``.gz``) via a temp file in the same folder + os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    if is_gz(path):
        # mtime=0 keeps the bytes reproducible for identical content
        data = gzip.compress(data, mtime=0)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def is_hidden(path: Path) -> bool:
    return path.name.startswith(".")
