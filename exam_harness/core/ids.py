"""The one rule for ids read from inputs, and the guard where a file name is made from one.

Every id an input gives (query, passage, test point and facet ids; the run ids of run, answer,
assignment and AutoJudge Report files; system names) is printed, compared and kept in reports, so it
obeys :func:`id_problem`: a non-empty string of at most :data:`MAX_ID_CHARS` characters without
whitespace, control or format characters (an escape rewrites the terminal; a zero-width or bidi
character makes two ids look alike).

A run's name is more: the writers name files after it (``<run>.metrics.jsonl``, ``<run>.jsonl``,
a live system's ``<name>.responses.jsonl``). So a run name obeys :func:`name_problem` too: it is one
plain file name, never a path (no ``/`` or ``\\``, not ``.`` or ``..``, not a hidden name starting
with a dot, at most :data:`MAX_NAME_BYTES` bytes in UTF-8, so that the longest suffix a writer adds
stays within the 255 bytes a file system allows for a name). The readers apply it where they read
the id, naming the file, line and field; :func:`file_name` is the last guard where a writer builds a
file name from one, so that no id ever becomes a path.
"""

from __future__ import annotations

import re
from typing import Final

from exam_harness.core.display import is_hidden_char
from exam_harness.core.errors import OutputError

# Characters of any id (a TREC run tag, an MS MARCO segment id, a URL used as a document id are far shorter).
MAX_ID_CHARS: Final = 1000
# UTF-8 bytes of a run name: a writer adds at most ``trec-rag-`` and ``.assignments.jsonl`` (27 bytes)
# and a file system allows 255 bytes for a name.
MAX_NAME_BYTES: Final = 200

_WHITESPACE = re.compile(r"\s")
_SEPARATORS = ("/", "\\")


def invisible_char(value: str) -> str | None:
    """Why ``value`` cannot be an id because of a character invisible in every message and report: a
    control or format character other than whitespace, e.g. the byte-order mark a concatenated file
    leaves at the start of a line. ``None`` if there is none."""
    if value.isprintable():  # the common case at C speed: no control or format character at all
        return None
    for char in value:
        if is_hidden_char(char) and not char.isspace():  # control (a NUL, an escape) or format (zero-width, bidi)
            kind = "byte-order mark" if char == "\ufeff" else "control character" if ord(char) < 0xA0 else \
                "format character"
            return f"a {kind} (U+{ord(char):04X})"
    return None


def id_problem(value: object, what: str) -> str | None:
    """Why ``value`` cannot be an id (``what`` names it in the message), or ``None`` if it can."""
    if value is None:
        return f"{what} is missing"
    if not isinstance(value, str):
        return f"{what} must be a string"
    if not value:
        return f"{what} must not be empty"
    if len(value) > MAX_ID_CHARS:
        return f"{what} must be at most {MAX_ID_CHARS:,} characters long, not {len(value):,}"
    if _WHITESPACE.search(value):
        return f"{what} must not contain whitespace"
    if (invisible := invisible_char(value)) is not None:
        return f"{what} must not contain {invisible}"
    return None


def name_problem(value: object, what: str) -> str | None:
    """Why ``value`` cannot be a run's name (an id that names files), or ``None`` if it can."""
    if (why := id_problem(value, what)) is not None:
        return why
    assert isinstance(value, str)
    if any(sep in value for sep in _SEPARATORS):
        return f"{what} must not contain a path separator ('/' or '\\'): the writers name files after it"
    if value.startswith("."):
        return f"{what} must not start with a dot: the writers name files after it (and '.', '..' are folders)"
    if len(value.encode("utf-8")) > MAX_NAME_BYTES:
        return f"{what} must be at most {MAX_NAME_BYTES} bytes in UTF-8: the writers name files after it"
    return None


def check_name(value: str, what: str) -> str:
    """``value`` if it can be a run's name, else a ValueError saying why (for the models' validators)."""
    if (why := name_problem(value, what)) is not None:
        raise ValueError(f"{why}, got {value[:80]!a}")
    return value


def file_name(name: str, suffix: str, *, prefix: str = "") -> str:
    """``prefix + name + suffix``, the file name a writer makes from a run's name: the last guard, for a
    name that reached a writer without passing a reader (an :class:`OutputError`, never a path)."""
    if (why := name_problem(name, "a run name")) is not None:
        raise OutputError(f"cannot name a file after {name[:80]!a}: {why}")
    return f"{prefix}{name}{suffix}"
