"""What the outputs left out, and why, said beside them as warnings: a section whose plugin code raised or gave
the wrong type (results/sections.py contains it: that section is left out of that output, the rest is written),
a number JSON cannot hold (the JSON writer writes ``null`` for a ``NaN``, results/json_writer.py).

Each note is kept once, in the order noted, until the front end takes them (:func:`taken`) to say them: the
pytest terminal summary, a subcommand's standard error.
"""

from __future__ import annotations

_noted: dict[str, None] = {}  # insertion-ordered, each message once


def leave_out(message: str) -> None:
    """Note that an output left something out (``message`` says what and why)."""
    _noted.setdefault(message, None)


def taken() -> list[str]:
    """Every note since the last call, oldest first, as ``warning: ...`` lines (then forgotten)."""
    found = [f"warning: {message}" for message in _noted]
    _noted.clear()
    return found
