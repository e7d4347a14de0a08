"""Shared reading and writing helpers: gzip-transparent text files, JSON lines, atomic writes.

Every reader turns the usual low-level failures (missing file, bad gzip, bad UTF-8, bad JSON) into
an :class:`~exam_harness.errors.InputError` that names the file and, where known, the line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from exam_harness.errors import InputError


def is_gz(path: Path) -> bool:
    return path.name.endswith(".gz")


def base_name(path: Path) -> str:
    """The file name without a trailing ``.gz``: ``a.run.gz`` -> ``a.run``."""
    return path.name[:-3] if is_gz(path) else path.name


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` transparently."""
    try:
        return cast(IO[bytes], gzip.open(path, "rb") if is_gz(path) else open(path, "rb"))
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=path) from None


def _decode(data: bytes, path: Path, first_line: int, *, strip_bom: bool) -> str:
    try:
        return data.decode("utf-8-sig" if strip_bom else "utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[: exc.start].count(b"\n")
        raise InputError(
            f"not valid UTF-8 text ({exc.reason}, byte {data[exc.start:exc.start + 1]!r})",
            path=path, line=line, expected="a UTF-8 encoded file",
        ) from None


def _read_error(exc: BaseException, path: Path, line: int | None) -> InputError:
    hint = "a complete gzip file" if is_gz(path) else None
    return InputError(f"cannot read: {exc}", path=path, line=line, expected=hint)


def read_text(path: Path) -> str:
    """The whole file as text (``.gz`` decompressed, a byte-order mark dropped); decode errors name
    the line."""
    with open_binary(path) as fh:
        try:
            data = fh.read()
        except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
            raise _read_error(exc, path, None) from None
    return _decode(data, path, 1, strip_bom=True)


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, without the line end); each line is decoded on its own
    so a decoding error names its true line."""
    lineno = 0
    with open_binary(path) as fh:
        while True:
            try:
                raw = fh.readline()
            except (OSError, EOFError) as exc:
                raise _read_error(exc, path, lineno + 1) from None
            if not raw:
                return
            lineno += 1
            yield lineno, _decode(raw, path, lineno, strip_bom=lineno == 1).rstrip("\r\n")


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """The one atomic writer: a temp file in the same folder, then os.replace; mode 0644 like any
    ordinary output file (mkstemp would leave it private)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 (gzip-compressed for ``.gz``) through :func:`atomic_write_bytes`."""
    path = Path(path)
    data = text.encode("utf-8")
    if is_gz(path):
        data = gzip.compress(data, mtime=0)  # mtime=0 keeps the bytes reproducible for identical content
    atomic_write_bytes(path, data)


def is_hidden(path: Path) -> bool:
    return path.name.startswith(".")
