"""YAML and JSON documents as trees of nodes that remember their line, for precise error messages.

Hand-written files (banks, leaderboards) are small, so we can afford a line-tracking parse: YAML
from PyYAML's event stream (``event.start_mark.line + 1``), JSON through the pure-Python scanner of
the standard library with its object/array parsers wrapped to record where each value starts. Both
give the same :class:`Node` tree, so one validator serves both formats.

Both parses are bounded before they spend memory or recursion (see :mod:`exam_harness.io.limits`):
the file's size, the nesting depth (YAML: counted on the event stream, which is built without
recursion, and replayed on the pure-Python parser where a C parser stopped at a nesting limit of its
own, so the harness's limit is the one reported; JSON: measured on the text before the recursive
parser runs) and the number of values.
YAML aliases are refused, so no small file can expand into a huge tree.
"""

from __future__ import annotations

import bisect
import difflib
import json
import json.decoder
import json.scanner
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.located_tree import MAP as MAP
from exam_harness.io.located_tree import SCALAR as SCALAR
from exam_harness.io.located_tree import SEQ as SEQ
from exam_harness.io.located_tree import Node as Node
from exam_harness.io.parts import invisible_char
from exam_harness.io.textio import (
    check_json_document,
    decode_text,
    number_too_long,
    read_bytes,
    too_deep,
    too_many_values,
)


def parse_yaml(text: str, path: Path) -> Node | None:
    """Parse a YAML document into a :class:`Node` tree; ``None`` for an empty document
    (:mod:`exam_harness.io.located_yaml`, imported here: PyYAML only where YAML is read)."""
    from exam_harness.io.located_yaml import parse_yaml as parse

    return parse(text, path)


# --- JSON -------------------------------------------------------------------------------------


class _Pairs(list):  # type: ignore[type-arg]
    """What an object parses to before it becomes a Node (keeps duplicate keys visible)."""


class _LocatingDecoder(json.JSONDecoder):
    def __init__(self, text: str, path: Path) -> None:
        super().__init__(object_pairs_hook=_Pairs)
        newlines = [match.start() for match in re.finditer("\n", text)]
        values = 0

        def line_of(idx: int) -> int:
            return bisect.bisect_left(newlines, idx) + 1

        def locate(scan_once: Callable[[str, int], tuple[Any, int]]) -> Callable[[str, int], tuple[Any, int]]:
            def scan(s: str, idx: int) -> tuple[Any, int]:
                nonlocal values
                values += 1
                if values > limits.MAX_DOCUMENT_VALUES:
                    raise too_many_values(path, line_of(idx))
                value, end = scan_once(s, idx)
                return _to_node(value, line_of(idx)), end

            return scan

        def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *rest: Any) -> Any:
            return json.decoder.JSONObject(s_and_end, strict, locate(scan_once), *rest)  # type: ignore[attr-defined]

        def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> Any:
            return json.decoder.JSONArray(s_and_end, locate(scan_once))  # type: ignore[attr-defined]

        self.parse_object = parse_object
        self.parse_array = parse_array
        self.scan_once = locate(json.scanner.py_make_scanner(self))  # type: ignore[attr-defined]


def _to_node(value: Any, line: int) -> Node:
    if isinstance(value, _Pairs):
        values: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for key, child in value:
            if key in values:
                raise _DuplicateKey(key, child.line, key_lines[key])
            values[key] = child
            key_lines[key] = child.line
        return Node(MAP, values, line, key_lines=key_lines)
    if isinstance(value, list):
        return Node(SEQ, value, line)
    return Node(SCALAR, value, line)


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int, first: int) -> None:
        self.key, self.line, self.first = key, line, first


def parse_json(text: str, path: Path) -> Node:
    """Parse a JSON document into a :class:`Node` tree with line numbers."""
    check_json_document(text, path)  # depth and values, before a node is built
    decoder = _LocatingDecoder(text, path)
    try:
        node, end = decoder.raw_decode(text, _skip_ws(text, 0))
        rest = _skip_ws(text, end)
        if rest != len(text):
            raise json.JSONDecodeError("Extra data", text, rest)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", path=path, line=exc.lineno) from None
    except _DuplicateKey as dup:
        raise InputError(
            f"duplicate key {limits.quoted(dup.key)} (first at line {dup.first})", path=path, line=dup.line,
            field=limits.cut(dup.key),
        ) from None
    except ValueError:  # an integer of more digits than Python converts
        raise number_too_long(path, None) from None
    except RecursionError:  # pragma: no cover - the depth is checked before parsing
        raise too_deep(path, None) from None
    assert isinstance(node, Node)
    return node


def _skip_ws(text: str, idx: int) -> int:
    while idx < len(text) and text[idx] in " \t\r\n":
        idx += 1
    return idx


def load_located(path: Path) -> Node | None:
    """Read a ``.yaml``/``.yml``/``.json`` file into a located tree (``None``: empty YAML file)."""
    text = decode_text(read_bytes(path), path)
    if path.suffix.lower() == ".json":
        if not text.strip():
            raise InputError("empty JSON file", path=path, line=1)
        return parse_json(text, path)
    return parse_yaml(text, path)


# --- validation helpers shared by the hand-written formats ---------------------------------------


def describe(node: Node) -> str:
    if node.kind != SCALAR:
        return "a " + node.kind
    value = node.value
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {limits.quoted(value)}"


def expect_mapping(node: Node, path: Path, what: str, valid_keys: tuple[str, ...]) -> dict[str, Node]:
    """The node's mapping, rejecting other kinds and unknown keys (listing the valid ones)."""
    if node.kind != MAP:
        raise InputError(
            f"{what} must be a mapping, got {describe(node)}",
            path=path,
            line=node.line,
            expected="keys " + ", ".join(valid_keys),
        )
    for key in node.value:
        if key not in valid_keys:
            near = difflib.get_close_matches(key, valid_keys, n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise InputError(
                f"unknown key in {what}{hint}",
                path=path,
                line=node.key_lines.get(key, node.line),
                field=limits.cut(key),
                expected="one of " + ", ".join(valid_keys),
            )
    return node.value  # type: ignore[no-any-return]


def expect_list(node: Node, path: Path, field_name: str, expected: str) -> list[Node]:
    if node.kind != SEQ:
        raise InputError(
            f"must be a list, got {describe(node)}",
            path=path,
            line=node.line,
            field=field_name,
            value=node.value if node.kind == SCALAR else None,
            expected=expected,
        )
    return node.value  # type: ignore[no-any-return]


def expect_text(node: Node, path: Path, field_name: str, *, word: bool = False) -> str:
    """A non-blank text, kept as written (ids hash it). YAML plain scalars count as text as written.

    ``word``: no whitespace allowed (ids).
    """
    value: Any
    if node.kind == SCALAR and node.raw is not None:
        value = node.raw
    elif node.kind == SCALAR and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        value = str(node.value)
    else:
        value = node.value
    expected = "a word without spaces" if word else "a non-empty text"
    if node.kind != SCALAR or not isinstance(value, str):
        raise InputError(
            f"must be text, got {describe(node)}",
            path=path,
            line=node.line,
            field=field_name,
            value=value if node.kind == SCALAR else None,
            expected=expected,
        )
    if not value.strip():
        raise InputError(
            "must not be empty", path=path, line=node.line, field=field_name, value=value, expected=expected
        )
    if word and any(ch.isspace() for ch in value):
        raise InputError(
            "must not contain whitespace", path=path, line=node.line, field=field_name, value=value, expected=expected
        )
    if word and (invisible := invisible_char(value)) is not None:
        raise InputError(
            f"must not contain {invisible}", path=path, line=node.line, field=field_name, value=value, expected=expected
        )
    return value


def expect_bool(node: Node, path: Path, field_name: str) -> bool:
    if node.kind != SCALAR or not isinstance(node.value, bool):
        raise InputError(
            "must be true or false",
            path=path,
            line=node.line,
            field=field_name,
            value=node.raw if node.raw is not None else node.value,
            expected="true or false",
        )
    return node.value


def expect_json_object(node: Node, path: Path, field_name: str) -> dict[str, Any]:
    """A mapping of JSON values (a test point's ``metadata``) as plain dicts and lists. A value JSON cannot hold (a
    YAML date, binary, NaN or infinity) is an InputError naming its line and its place below ``field_name``."""
    from exam_harness.core.json_values import json_problem

    expected = "a mapping of JSON values (texts, numbers, true/false, null, lists and mappings)"
    if node.kind != MAP:
        raise InputError(f"must be a mapping, got {describe(node)}", path=path, line=node.line, field=field_name,
                         value=node.value if node.kind == SCALAR else None, expected=expected)

    def plain(item: Node, place: str) -> Any:
        if item.kind == MAP:
            return {key: plain(child, f"{place}.{key}") for key, child in item.value.items()}
        if item.kind == SEQ:
            return [plain(child, f"{place}[{i}]") for i, child in enumerate(item.value)]
        if (problem := json_problem(item.value, place)) is not None:
            raise InputError(problem.why, path=path, line=item.line, field=limits.cut(place),
                             value=item.raw if item.raw is not None else None, expected=expected)
        return item.value

    return plain(node, field_name)  # type: ignore[no-any-return]


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` for anything else (bools, texts, NaN, infinities and
    integers too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def expect_number(node: Node, path: Path, field_name: str, *, minimum: float | None = None) -> float:
    value = node.value
    number = finite_number(value) if node.kind == SCALAR else None
    expected = "a number" + (f" >= {minimum:g}" if minimum is not None else "")
    if number is None:
        raise InputError(
            "must be a finite number",
            path=path,
            line=node.line,
            field=field_name,
            value=node.raw if node.raw is not None else value,
            expected=expected,
        )
    if minimum is not None and number < minimum:
        raise InputError(
            f"must be at least {minimum:g}", path=path, line=node.line, field=field_name, value=value, expected=expected
        )
    return number
