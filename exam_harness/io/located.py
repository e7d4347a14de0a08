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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.parts import invisible_char
from exam_harness.io.textio import (
    check_json_document,
    decode_text,
    number_too_long,
    read_bytes,
    too_deep,
    too_many_values,
)

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


# --- YAML -------------------------------------------------------------------------------------

# libyaml's parser when present: it builds events without recursion, and the tree is built here.
_YamlLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_BAD_KEY = object()  # a mapping key that was refused: its value is dropped


@dataclass(slots=True)
class _Open:
    """A list or mapping whose end event has not come yet; for a mapping, the key awaiting its value."""

    node: Node
    key: object = None


class _YamlBuilder:
    """Builds the located tree from PyYAML's events with an explicit stack: no recursion, the depth
    and the number of values counted as they come. Errors in the content (duplicate keys, bad
    values) are raised once the whole document parsed, so a syntax error anywhere is reported first,
    as with a composed document."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stack: list[_Open] = []
        self.root: Node | None = None
        self.documents = 0
        self.values = 0
        self.error: InputError | None = None
        self.resolve: Any = yaml.resolver.Resolver().resolve  # the implicit tags of the safe loader

    def defer(self, error: InputError) -> None:
        if self.error is None:
            self.error = error

    def event(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.ScalarEvent):
            self.count(event)
            self.add(self.scalar(event), event.value)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self.count(event)
            if len(self.stack) >= limits.MAX_NESTING_DEPTH:
                raise too_deep(self.path, _line(event))
            if isinstance(event, yaml.SequenceStartEvent):
                node = Node(SEQ, [], _line(event))
            else:
                node = Node(MAP, {}, _line(event), key_lines={})
            self.stack.append(_Open(node))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            self.add(self.stack.pop().node, None)
        elif isinstance(event, yaml.AliasEvent):
            raise InputError(
                f"YAML aliases are not allowed (found {limits.quoted('*' + str(event.anchor))})", path=self.path,
                line=_line(event), expected="the value written out in full (limit YAML_ALIASES_ALLOWED)",
            )
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise InputError("invalid YAML: expected a single document in the stream, but found another "
                                 "document", path=self.path, line=_line(event))

    def count(self, event: yaml.Event) -> None:
        self.values += 1
        if self.values > limits.MAX_DOCUMENT_VALUES:
            raise too_many_values(self.path, _line(event))

    def scalar(self, event: yaml.ScalarEvent) -> Node:
        line = _line(event)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
        value: Any = event.value
        if tag != _STR_TAG:
            node = yaml.ScalarNode(tag, event.value, style=event.style)
            try:  # a throwaway constructor resolves the scalar's tag (bool, int, float, null, timestamp)
                value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
                if type(value) is int:
                    str(value)  # hex, octal and binary ints escape Python's limit on digits: refuse them here
            except Exception as exc:  # any tag's constructor: a bad date, a bool 'maybe', an int too long
                reason = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else exc
                if isinstance(exc, ValueError) and "digits" in str(exc):
                    reason = "a number with more digits than can be read"
                self.defer(InputError(f"invalid value {limits.quoted(event.value)}: {reason}", path=self.path,
                                      line=line, expected=f"a valid {tag.rsplit(':', 1)[-1]}"))
                value = None
        return Node(SCALAR, value, line, raw=event.value if tag != _NULL_TAG else None)

    def add(self, node: Node, text: str | None) -> None:
        """Attach a finished value to the open list or mapping (``text``: a scalar as written)."""
        if not self.stack:
            self.root = node
            return
        top = self.stack[-1]
        if top.node.kind == SEQ:
            top.node.value.append(node)
        elif top.key is None:
            top.key = self.key(top.node, node, text)
        else:
            if top.key is not _BAD_KEY:
                assert isinstance(top.key, str)
                top.node.value[top.key] = node
            top.key = None

    def key(self, mapping: Node, node: Node, text: str | None) -> object:
        if text is None:
            self.defer(InputError("a mapping key must be a plain word", path=self.path, line=node.line,
                                  expected="key: value"))
            return _BAD_KEY
        key_lines = mapping.key_lines
        assert isinstance(key_lines, dict)
        if text in key_lines:
            self.defer(InputError(f"duplicate key {limits.quoted(text)} (first at line {key_lines[text]})",
                                  path=self.path, line=node.line, field=limits.cut(text)))
            return _BAD_KEY
        key_lines[text] = node.line
        return text


def _line(event: yaml.Event) -> int:
    mark = event.start_mark
    assert mark is not None  # the parsers mark every event
    return mark.line + 1


def _yaml_error(exc: yaml.YAMLError, text: str, path: Path) -> InputError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        return InputError(f"invalid YAML: {exc.problem or exc.context}", path=path,
                          line=mark.line + 1 if mark is not None else None)
    line = None
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses; libyaml counts UTF-8 bytes
        line = text.encode("utf-8", "surrogatepass")[: exc.position].count(b"\n") + 1
    return InputError(f"invalid YAML: {str(exc).splitlines()[0]}", path=path, line=line)


def parse_yaml(text: str, path: Path) -> Node | None:
    """Parse a YAML document into a :class:`Node` tree; ``None`` for an empty document."""
    builder = _YamlBuilder(path)
    try:
        loader = _YamlLoader(text)
    except UnicodeEncodeError:  # a lone surrogate: only a caller's text, never a decoded file, has one
        raise InputError("invalid YAML: text that is not Unicode", path=path) from None
    try:
        while loader.check_event():
            builder.event(loader.get_event())
    except yaml.YAMLError as exc:
        _check_depth_before(exc, text, path)
        raise _yaml_error(exc, text, path) from None
    finally:
        loader.dispose()
    if builder.error is not None:
        raise builder.error
    return builder.root


def _check_depth_before(exc: yaml.YAMLError, text: str, path: Path) -> None:
    """Raise the harness's nesting error if ``text`` nests deeper than ``MAX_NESTING_DEPTH`` before
    the place where the C parser stopped with ``exc``.

    libyaml refuses nesting of its own (0.2.6: 1,000 levels) while it scans up to 1,024 characters
    ahead of the events it has given, so a line of brackets stops it before the builder sees level 65;
    other builds have other limits or none. The pure-Python parser of PyYAML has no limit and does not
    recurse: replaying its events up to the line of ``exc`` counts the depth as the builder does, so
    the harness's limit decides whatever build is installed. It runs only once the C parser failed,
    as it is ~5 times slower (whatever else fails there, the C parser's own error is reported).
    """
    if _YamlLoader is yaml.SafeLoader or not isinstance(exc, yaml.MarkedYAMLError):
        return  # the pure-Python parser failed itself: the builder has counted every event before it
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return
    loader: Any = yaml.SafeLoader(text)  # the stubs leave the parser's methods untyped
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if _line(event) > mark.line + 1:
                return
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > limits.MAX_NESTING_DEPTH:
                    raise too_deep(path, _line(event))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # an error of its own before any too-deep level: the C parser's error stands
    finally:
        loader.dispose()


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
