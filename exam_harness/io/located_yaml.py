"""The YAML half of :mod:`exam_harness.io.located`: the located tree built from PyYAML's events.

Its own module so that PyYAML is imported where a YAML file is read, not by every command that reads
located JSON (``exam-harness evaluate`` reads a leaderboard, never a YAML bank).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.located_tree import MAP, SCALAR, SEQ, Node
from exam_harness.io.textio import too_deep, too_many_values

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
