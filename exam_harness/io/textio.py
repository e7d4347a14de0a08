"""Shared reading and writing helpers: gzip-transparent text files, JSON lines, atomic writes.

Every reader turns the usual low-level failures (missing file, bad gzip, bad UTF-8, bad JSON) into
an :class:`~exam_harness.core.errors.InputError` that names the file and, where known, the line.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gzip
import itertools
import json
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from pydantic_core import from_json

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError, OutputError


def is_gz(path: Path) -> bool:
    return path.name.endswith(".gz")


def base_name(path: Path) -> str:
    """The file name without a trailing ``.gz``: ``a.run.gz`` -> ``a.run``."""
    return path.name[:-3] if is_gz(path) else path.name


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` transparently: the one opening of every input.

    Only a regular file is read: a FIFO would block the reader until something writes to it (forever, in
    CI), a device never ends. The file is opened without blocking and checked on its descriptor, so what is
    checked is what is read (issue 39, finding 8)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputError("is a folder, expected a file", path=path)
        raise InputError("is not a regular file (a FIFO, socket or device); inputs are read from files only",
                         path=path, expected="a regular file")
    os.set_blocking(fd, True)
    fh = os.fdopen(fd, "rb")
    return cast(IO[bytes], _OwnedGzip(fh) if is_gz(path) else fh)


class _OwnedGzip(gzip.GzipFile):
    """A gzip reader over an open file that it closes with itself (GzipFile leaves a given file open)."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _decode(data: bytes, path: Path, first_line: int, *, strip_bom: bool) -> str:
    try:
        return data.decode("utf-8-sig" if strip_bom else "utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[: exc.start].count(b"\n")
        raise InputError(
            f"not valid UTF-8 text ({exc.reason}, byte {data[exc.start:exc.start + 1]!r})",
            path=path, line=line, expected="a UTF-8 encoded file",
        ) from None


# What reading a damaged file raises: gzip.BadGzipFile is an OSError, a cut stream an EOFError, a
# corrupt deflate block a zlib.error.
_READ_ERRORS = (OSError, EOFError, zlib.error)


def _read_error(exc: BaseException, path: Path, line: int | None) -> InputError:
    hint = "a complete gzip file" if is_gz(path) else None
    return InputError(f"cannot read: {exc}", path=path, line=line, expected=hint)


def read_bytes(path: Path) -> bytes:
    """The whole file (``.gz`` decompressed), at most :data:`~exam_harness.io.limits.MAX_FILE_BYTES`:
    a larger file is an InputError before more of it is read."""
    max_bytes = limits.MAX_FILE_BYTES
    with open_binary(path) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except _READ_ERRORS as exc:
            raise _read_error(exc, path, None) from None
    if len(data) > max_bytes:
        size = limits.size_text(max_bytes)
        raise limits.over_limit(
            f"file {'decompresses to' if is_gz(path) else 'is'} more than {size}", "MAX_FILE_BYTES",
            f"a file of at most {size}", path=path,
        )
    return data


def decode_text(data: bytes, path: Path) -> str:
    """``data`` of a whole file as text (a byte-order mark dropped); a decoding error names the line."""
    return _decode(data, path, 1, strip_bom=True)


def read_text(path: Path) -> str:
    """The whole file as text (``.gz`` decompressed, a byte-order mark dropped, size bounded as by
    :func:`read_bytes`); decode errors name the line."""
    return decode_text(read_bytes(path), path)


class _GzipGuard:
    """Stops a gzip bomb: once a MiB came out, the decompressed size so far must stay within
    :data:`~exam_harness.io.limits.MAX_GZIP_RATIO` times the compressed bytes read so far (the gzip
    reader takes them in steps of 8 to 128 KiB)."""

    def __init__(self, fh: IO[bytes], path: Path) -> None:
        self.compressed = cast(IO[bytes], getattr(fh, "fileobj", fh))
        self.path = path
        self.decompressed = 0

    def check(self, size: int, lineno: int) -> None:
        self.decompressed += size
        ratio = limits.MAX_GZIP_RATIO
        if self.decompressed > max(limits.MIB, ratio * self.compressed.tell()):
            raise limits.over_limit(
                f"gzip file decompresses to more than {ratio} times its size (a gzip bomb?)", "MAX_GZIP_RATIO",
                f"at most {ratio} decompressed bytes per compressed byte", path=self.path, line=lineno,
            )


_CHUNK = limits.MIB


def iter_raw_lines(path: Path, limit: str = "MAX_LINE_BYTES") -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line bytes)`` (1-based, without the ``\\n``) of every line that is not
    empty: every line format skips blank lines, and a run of empty lines (a gzip bomb of newlines)
    passes at C speed. A line longer than the limit named ``limit`` (a constant of
    :mod:`exam_harness.io.limits`) is an InputError before more of it is read."""
    max_bytes: int = getattr(limits, limit)
    lineno = 0
    pending: list[bytes] = []  # the start of a line that continues in the next chunk
    pending_size = 0

    def too_long(line: int) -> InputError:
        size = limits.size_text(max_bytes)
        return limits.over_limit(f"line longer than {size}", limit, f"lines of at most {size}", path=path, line=line)

    with open_binary(path) as fh:
        guard = _GzipGuard(fh, path) if is_gz(path) else None
        while True:
            try:
                chunk = fh.read(_CHUNK)
            except _READ_ERRORS as exc:
                raise _read_error(exc, path, lineno + 1) from None
            if not chunk:
                break
            if guard is not None:
                guard.check(len(chunk), lineno + 1)
            pieces = chunk.split(b"\n")
            rest = pieces.pop()  # no line end after it in this chunk
            if pending and pieces:
                pending.append(pieces[0])
                pieces[0] = b"".join(pending)
                pending, pending_size = [], 0
            for index in itertools.compress(range(len(pieces)), pieces):  # the non-empty lines
                line = pieces[index]
                if len(line) > max_bytes:
                    raise too_long(lineno + index + 1)
                if line != b"\r":
                    yield lineno + index + 1, line
            lineno += len(pieces)
            if rest:
                pending.append(rest)
                pending_size += len(rest)
                if pending_size > max_bytes:
                    raise too_long(lineno + 1)
    last = b"".join(pending)
    if last and last != b"\r":
        yield lineno + 1, last


def iter_lines(path: Path, limit: str = "MAX_LINE_BYTES") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, without the line end); each line is decoded on its own
    so a decoding error names its true line. ``limit``: as for :func:`iter_raw_lines`."""
    for lineno, raw in iter_raw_lines(path, limit):
        yield lineno, _decode(raw, path, lineno, strip_bom=lineno == 1).rstrip("\r\n")


# --- JSON nesting, measured without parsing ---------------------------------------------------

# Structure, quotes and every character that may follow a backslash in a JSON string: keeping the
# escape letters keeps each escape sequence whole, so \\ and \" can be told from a closing quote.
_ESCAPE_LETTERS = b'\\/bfnrtu'
_JSON_TOKEN = re.compile(rb'(?P<s>"(?:[^"\\]|\\.)*")|(?P<open>[\[{])|(?P<close>[\]}])', re.S)
_QUOTE = ord('"')


@functools.cache
def _dropped(keep: bytes) -> bytes:
    """The bytes other than ``keep``, for ``bytes.translate(None, delete)``."""
    return bytes(c for c in range(256) if c not in keep)


@functools.cache
def _bracket_steps() -> Any:
    import numpy as np

    steps = np.zeros(256, dtype=np.int64)
    steps[[ord("["), ord("{")]] = 1
    steps[[ord("]"), ord("}")]] = -1
    return steps


def _structure(data: bytes, keep: bytes) -> Any:
    """The bytes of ``keep`` (some of ``[]{},``) that lie outside the strings of the JSON text ``data``,
    as a numpy array: the text is cut down to structure and quotes at C speed (escaped quotes
    removed first), then the quotes' running parity marks what lies inside strings."""
    import numpy as np

    small = data.translate(None, _dropped(keep + b'"' + _ESCAPE_LETTERS))
    if b"\\" in small:
        small = small.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(small.translate(None, _dropped(keep + b'"')), dtype=np.uint8)
    outside = (np.cumsum(codes == _QUOTE) & 1) == 0
    return codes[outside & (codes != _QUOTE)]


def json_too_deep(data: bytes, limit: int) -> bool:
    """Whether the lists and objects of the JSON text ``data`` nest deeper than ``limit``.

    Linear, without recursion (see :func:`_structure`), so the parser that runs next never recurses
    deeper than ``limit``. For invalid JSON the count is exact up to the first error, which is as far
    as a parser gets.
    """
    if len(data) < 65536 and data.count(b"[") + data.count(b"{") <= limit:
        return False  # the common short line: too few brackets to nest that deep
    brackets = _structure(data, b"[]{}")
    return len(brackets) > limit and bool(_bracket_steps()[brackets].cumsum().max() > limit)


def json_values_at_least(data: bytes) -> int:
    """A lower bound of the values in the JSON text ``data``: one more than its commas outside strings
    (each separates two values), counted without parsing."""
    return len(_structure(data, b",")) + 1


def _too_deep_line(data: bytes, limit: int) -> int | None:
    """The line where ``data`` first nests deeper than ``limit`` (a slower exact scan, for the message)."""
    depth = 0
    for match in _JSON_TOKEN.finditer(data):
        if match.lastgroup == "open":
            depth += 1
            if depth > limit:
                return data.count(b"\n", 0, match.start()) + 1
        elif match.lastgroup == "close":
            depth -= 1
    return None


def check_json_depth(data: bytes | str, path: Path, line: int | None = None) -> None:
    """InputError if the JSON text ``data`` (one line ``line``, or a whole file) nests deeper than
    :data:`~exam_harness.io.limits.MAX_NESTING_DEPTH`."""
    limit = limits.MAX_NESTING_DEPTH
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if json_too_deep(raw, limit):
        raise too_deep(path, line if line is not None else _too_deep_line(raw, limit))


def check_json_document(data: bytes | str, path: Path) -> None:
    """InputError if a whole JSON file nests deeper than
    :data:`~exam_harness.io.limits.MAX_NESTING_DEPTH` or holds more than ``MAX_DOCUMENT_VALUES``
    values: both measured before the parser spends recursion or memory (~100 bytes a value)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    check_json_depth(raw, path)
    if json_values_at_least(raw) > limits.MAX_DOCUMENT_VALUES:
        raise too_many_values(path, None)


def too_many_values(path: Path, line: int | None) -> InputError:
    count = limits.count_text(limits.MAX_DOCUMENT_VALUES)
    return limits.over_limit(f"more than {count} values in one document", "MAX_DOCUMENT_VALUES",
                             f"at most {count} values", path=path, line=line)


def too_deep(path: Path, line: int | None) -> InputError:
    limit = limits.MAX_NESTING_DEPTH
    return limits.over_limit(f"nesting deeper than {limit} levels", "MAX_NESTING_DEPTH",
                             f"lists and objects nested at most {limit} deep", path=path, line=line)


# A \uD800-\uDFFF escape not part of a pair: JSON lets it through as a lone surrogate, which no file,
# hash or terminal can encode (a UnicodeEncodeError far from the file that held it).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile(
    r"(?<!\\)(?:\\\\)*\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<![89abAB][0-9a-fA-F]{2})(?<!\\)(?:\\\\)*\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def read_json_file(path: Path) -> tuple[str, Any]:
    """A whole JSON file's text and value, bounded and checked as every JSON input (size, nesting depth and
    values before parsing, UTF-8, a regular file only): any error is an InputError naming the file and line."""
    data = read_bytes(path)
    check_json_document(data, path)
    text = decode_text(data, path)
    try:
        return text, check_surrogates(text, json.loads(text), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except ValueError:  # an integer of more digits than Python converts
        raise number_too_long(path, None) from None


def check_surrogates(text: str, value: Any, path: Path, lineno: int = 1) -> Any:
    """``value`` (parsed from the JSON ``text`` that starts at line ``lineno``) unless one of its texts
    holds a lone surrogate escape: then an InputError naming the file, line and escape."""
    if not _SURROGATE_ESCAPE.search(text):
        return value  # the common case: no such escape at all, checked at C speed
    todo = [value]
    while todo:  # no recursion: the depth was bounded before parsing
        item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                lone = _LONE_SURROGATE.search(text)
                line = lineno + (text.count("\n", 0, lone.start()) if lone else 0)
                shown = lone.group().lstrip("\\") if lone else "a \\uD8xx-\\uDFxx escape"
                raise InputError(f"a lone surrogate escape (\\{shown}) is not a character", path=path, line=line,
                                 expected="text of whole characters (a \\uD800-\\uDBFF escape followed by a "
                                 "\\uDC00-\\uDFFF one, or none)") from None
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return value


def parse_json_line(text: str, path: Path, lineno: int) -> Any:
    """Parse one JSON line whose depth was checked; a syntax error names the file, line and column."""
    try:
        return check_surrogates(text, json.loads(text), path, lineno)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at column {exc.colno}: {exc.msg}",
            path=path,
            line=lineno + exc.lineno - 1,
            expected="one JSON value per line",
        ) from None
    except ValueError:  # an integer of more digits than Python converts
        raise number_too_long(path, lineno) from None
    except RecursionError:  # pragma: no cover - the depth is checked before parsing
        raise too_deep(path, lineno) from None


# Python refuses to read integers of more decimal digits than this (sys.set_int_max_str_digits)
_MAX_DIGITS: int = getattr(sys, "get_int_max_str_digits", lambda: 4300)()


def number_too_long(path: Path, line: int | None) -> InputError:
    return InputError("invalid JSON: a number with more digits than can be read", path=path, line=line,
                      expected=f"numbers of at most {_MAX_DIGITS} digits")


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line of a JSON-lines file (lines and their
    nesting bounded by :data:`~exam_harness.io.limits.MAX_LINE_BYTES` and ``MAX_NESTING_DEPTH``)."""
    limit = limits.MAX_NESTING_DEPTH
    for lineno, raw in iter_raw_lines(path):
        try:
            # the fast path: pydantic-core's parser (Rust, its own recursion bound) takes the bytes; it
            # accepts exactly the valid UTF-8 JSON without lone surrogates or numbers Python cannot
            # convert, and gives the values json.loads gives. Anything it refuses takes the path below,
            # which says what is wrong as before.
            value = from_json(raw)
        except ValueError:
            pass
        else:
            if json_too_deep(raw, limit):
                raise too_deep(path, lineno)
            yield lineno, value
            continue
        line = _decode(raw, path, lineno, strip_bom=lineno == 1).rstrip("\r\n")
        if not line.strip():
            continue
        if json_too_deep(raw, limit):
            raise too_deep(path, lineno)
        yield lineno, parse_json_line(line, path, lineno)


def first_json_line(path: Path) -> Any:
    """The first non-blank line of a JSON-lines file parsed, or ``None`` for an empty file.

    Used to sniff a file's kind; raises InputError when that line is not JSON.
    """
    for _lineno, value in iter_json_lines(path):
        return value
    return None


def atomic_write_bytes(path: Path, data: bytes | Iterable[bytes]) -> None:
    """The one atomic writer: a temp file in the same folder, then os.replace; mode 0644 like any
    ordinary output file (mkstemp would leave it private). ``data`` whole or in pieces, written as
    they come (an error while making them leaves ``path`` as it was).

    A symlink is written through (its target replaced, the link kept); a character device such as
    ``/dev/null`` or a FIFO with a reader is written in place, never replaced; a folder, a socket, a
    block device or a FIFO nobody reads is refused (:class:`OutputError`) before anything is written.
    """
    path = Path(path)
    target = output_target(path)
    if target is None:  # a device or FIFO: written in place
        _write_in_place(path, data)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def create_exclusive(path: Path, data: bytes | Iterable[bytes]) -> bool:
    """Create ``path`` with ``data`` (whole or in pieces) only if no entry of that name exists (False then):
    the data is written to a temp file first and hard-linked into place, so no reader sees a partial file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.writelines([data] if isinstance(data, bytes) else data)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def locked_folder(folder: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` itself (no lock file): writers of one folder take turns;
    ``on_wait`` is called once when another holds it (to say so before waiting)."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def output_target(path: Path) -> Path | None:
    """Where an atomic write of ``path`` puts its file: the path with every symlink resolved (a dangling
    link: the file it names), or ``None`` for a character device or FIFO, which is written in place.
    Raises :class:`OutputError` for what can be neither replaced nor written (see :func:`atomic_write_bytes`)."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise OutputError(f"{path}: cannot write there ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return target
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return None
    kind = "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else \
        "a block device" if stat.S_ISBLK(mode) else "not a regular file"
    from exam_harness.core.paths import shown_path  # as the user wrote it: options hold absolute paths

    shown = f"{shown_path(path)} (-> {target})" if target != Path(path).absolute() else shown_path(path)
    raise OutputError(f"{shown}: is {kind}; give the name of a file to write")


def _write_in_place(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write to a character device or FIFO without replacing it. A FIFO is opened without blocking, so
    one that nobody reads is an error at once rather than a session that hangs."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "a FIFO that nobody reads" if exc.errno == errno.ENXIO else (exc.strerror or str(exc))
        raise OutputError(f"{path}: cannot write there ({why})") from None
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as fh:
        if isinstance(data, bytes):
            fh.write(data)
        else:
            fh.writelines(data)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 (gzip-compressed for ``.gz``) through :func:`atomic_write_bytes`."""
    path = Path(path)
    data = text.encode("utf-8")
    if is_gz(path):
        data = gzip.compress(data, mtime=0)  # mtime=0 keeps the bytes reproducible for identical content
    atomic_write_bytes(path, data)


def is_hidden(path: Path) -> bool:
    return path.name.startswith(".")
