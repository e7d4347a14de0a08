"""The located tree's node (:class:`Node`), below both parsers of :mod:`exam_harness.io.located` (its JSON
half, and the YAML half in :mod:`exam_harness.io.located_yaml`, imported on first use)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

MAP = "mapping"
SEQ = "list"
SCALAR = "scalar"

_NO_KEYS: Mapping[str, int] = MappingProxyType({})


@dataclass(slots=True)
class Node:
    """One value of a document with the (1-based) line where it starts.

    ``value`` is ``dict[str, Node]`` for mappings, ``list[Node]`` for lists and a Python scalar
    otherwise. ``raw`` keeps a YAML plain scalar as written (so ``no`` stays the text "no" where a
    text is expected); ``key_lines`` holds the line of each mapping key (shared and empty otherwise).
    """

    kind: str
    value: Any
    line: int
    raw: str | None = None
    key_lines: Mapping[str, int] = field(default_factory=lambda: _NO_KEYS)
