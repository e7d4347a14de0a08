"""YAML and JSON documents as trees of nodes that remember their line, for precise error messages.

Hand-written files (banks, leaderboards) are small, so we can afford a line-tracking parse: YAML
through PyYAML's composed node graph (``node.start_mark.line + 1``), JSON through the pure-Python
scanner of the standard library with its object/array parsers wrapped to record where each value
starts. Both give the same :class:`Node` tree, so one validator serves both formats.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from exam_harness.errors import InputError
from exam_harness.io.textio import read_text

MAP = "mapping"
SEQ = "list"
SCALAR = "scalar"


@dataclass(slots=True)
class Node:
    """One value of a document with the (1-based) line where it starts.

    ``value`` is ``dict[str, Node]`` for mappings, ``list[Node]`` for lists and a Python scalar
    otherwise. ``raw`` keeps a YAML plain scalar as written (so ``no`` stays the text "no" where a
    text is expected); ``key_lines`` holds the line of each mapping key.
    """

    kind: str
    value: Any
    line: int
    raw: str | None = None
    key_lines: dict[str, int] = field(default_factory=dict)


# --- YAML -------------------------------------------------------------------------------------

_YamlLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_scalar(node: yaml.ScalarNode) -> Any:
    # A throwaway constructor resolves the scalar's tag (bool, int, float, null, str, timestamp).
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def _from_yaml(node: yaml.Node, path: Path) -> Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        values: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            kline = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError("a mapping key must be a plain word", path=path, line=kline, expected="key: value")
            key = str(key_node.value)
            if key in values:
                raise InputError(
                    f"duplicate key {key!r} (first at line {key_lines[key]})", path=path, line=kline, field=key
                )
            key_lines[key] = kline
            values[key] = _from_yaml(value_node, path)
        return Node(MAP, values, line, key_lines=key_lines)
    if isinstance(node, yaml.SequenceNode):
        return Node(SEQ, [_from_yaml(item, path) for item in node.value], line)
    assert isinstance(node, yaml.ScalarNode)
    try:
        value = _yaml_scalar(node)
    except yaml.YAMLError as exc:
        raise InputError(f"invalid value: {exc}", path=path, line=line) from None
    raw = node.value if node.tag != "tag:yaml.org,2002:null" else None
    return Node(SCALAR, value, line, raw=raw)


def parse_yaml(text: str, path: Path) -> Node | None:
    """Parse a YAML document into a :class:`Node` tree; ``None`` for an empty document."""
    try:
        root = yaml.compose(text, Loader=_YamlLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError(
            f"invalid YAML: {exc.problem or exc.context}",
            path=path,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    if root is None:
        return None
    return _from_yaml(root, path)


# --- JSON -------------------------------------------------------------------------------------


class _Pairs(list):  # type: ignore[type-arg]
    """What an object parses to before it becomes a Node (keeps duplicate keys visible)."""


class _LocatingDecoder(json.JSONDecoder):
    def __init__(self, text: str) -> None:
        super().__init__(object_pairs_hook=_Pairs)
        newlines = [i for i, ch in enumerate(text) if ch == "\n"]

        def line_of(idx: int) -> int:
            return bisect.bisect_left(newlines, idx) + 1

        def locate(scan_once: Callable[[str, int], tuple[Any, int]]) -> Callable[[str, int], tuple[Any, int]]:
            def scan(s: str, idx: int) -> tuple[Any, int]:
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
    decoder = _LocatingDecoder(text)
    try:
        node, end = decoder.raw_decode(text, _skip_ws(text, 0))
        rest = _skip_ws(text, end)
        if rest != len(text):
            raise json.JSONDecodeError("Extra data", text, rest)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", path=path, line=exc.lineno) from None
    except _DuplicateKey as dup:
        raise InputError(
            f"duplicate key {dup.key!r} (first at line {dup.first})", path=path, line=dup.line, field=dup.key
        ) from None
    assert isinstance(node, Node)
    return node


def _skip_ws(text: str, idx: int) -> int:
    while idx < len(text) and text[idx] in " \t\r\n":
        idx += 1
    return idx


def load_located(path: Path) -> Node | None:
    """Read a ``.yaml``/``.yml``/``.json`` file into a located tree (``None``: empty YAML file)."""
    text = read_text(path)
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
    return f"{type(value).__name__} {value!r}"


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
            raise InputError(
                f"unknown key in {what}",
                path=path,
                line=node.key_lines.get(key, node.line),
                field=key,
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


def expect_number(node: Node, path: Path, field_name: str, *, minimum: float | None = None) -> float:
    value = node.value
    ok = node.kind == SCALAR and isinstance(value, (int, float)) and not isinstance(value, bool)
    expected = "a number" + (f" >= {minimum:g}" if minimum is not None else "")
    if not ok or value != value or value in (float("inf"), float("-inf")):
        raise InputError(
            "must be a finite number",
            path=path,
            line=node.line,
            field=field_name,
            value=node.raw if node.raw is not None else value,
            expected=expected,
        )
    if minimum is not None and value < minimum:
        raise InputError(
            f"must be at least {minimum:g}", path=path, line=node.line, field=field_name, value=value, expected=expected
        )
    return float(value)
