"""Text from users' files, made safe to show: on one line, control characters made visible.

Run names, ids and texts come from files a system developer or bank owner writes. Shown raw, an
escape sequence would reach the terminal (recolouring or hiding what follows) and a newline would
forge a line of output; so every text the harness prints passes through :func:`visible`, and ids
with such characters are refused when read (``exam_harness.core.models.check_id``).
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# the width a table drawn as text takes when nothing bounds it (a file, a CI log, a markdown or HTML summary):
# enough for the widest leaderboard, so that no value is cut
TEXT_WIDTH = 400


def is_hidden_char(ch: str) -> bool:
    """Control (Cc) and format (Cf: zero-width, bidirectional overrides) characters."""
    return unicodedata.category(ch) in ("Cc", "Cf")


def visible(text: str) -> str:
    """``text`` with every control or format character other than tab and newline shown as its
    Python escape (``\\x1b``, ``\\u200b``)."""
    if not any(is_hidden_char(ch) for ch in text):
        return text
    return "".join(ascii(ch)[1:-1] if is_hidden_char(ch) and ch not in "\t\n" else ch for ch in text)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis (still raw: show it with
    ``repr``, which escapes control characters, or through :func:`visible`)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular for one (``1 query``, ``2 queries``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def money(value: float) -> str:
    """A cost as shown: cents for a dollar or more, else four decimals (a cheap model's pennies)."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


# where notices are also kept while a reader runs (collecting_notices): pytest hides what collection prints
_KEPT: ContextVar[list[str] | None] = ContextVar("exam_harness_notices", default=None)


def print_notice(message: str) -> None:
    """A notice of the harness on standard error (a warning while reading, a damaged cache row); also kept
    where :func:`collecting_notices` asks for it."""
    kept = _KEPT.get()
    if kept is not None:
        kept.append(message)
    print(f"exam-harness: {message}", file=sys.stderr, flush=True)


@contextmanager
def collecting_notices(into: list[str]) -> Iterator[None]:
    """Keep every notice said inside the block in ``into`` as well (a pytest session says them again in its
    summary: what collection prints, pytest's capture hides)."""
    token = _KEPT.set(into)
    try:
        yield
    finally:
        _KEPT.reset(token)


def render_text(renderable: Any, width: int = 100, *, color: bool = False) -> str:
    """A renderable as text at ``width`` columns (for pytest's terminal reporter, files and tests)."""
    import io

    from rich.console import Console  # rich only where a table is drawn

    buffer = io.StringIO()
    # markup=False: names and texts in the tables are data; "[/]" in a run name is not rich markup
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color, highlight=False,
                      markup=False, color_system="auto" if color else None)
    console.print(renderable)
    return buffer.getvalue()


def command_console() -> Console:
    """The console a command prints its tables on (standard output; markup off: names in the output are data).

    Where standard output is no terminal and ``COLUMNS`` gives no width (unset or empty, as in a CI log, a file,
    a pipe), a table takes the width it needs (:data:`TEXT_WIDTH`): rich's default there, 80 columns, cut a
    leaderboard's values to ``0…`` in the CI logs that gate on them. A terminal keeps its width (the
    leaderboards split their columns to fit it, report/tables.py), and so does a ``COLUMNS`` a user sets."""
    from rich.console import Console

    console = Console(highlight=False, markup=False)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():  # a width rich reads (digits)
        console.width = TEXT_WIDTH
    return console
