"""What the readers' tests share among their modules: JSON and JSON-lines texts as the fuzzed loaders read them, and
a deadline for a call that may block on a FIFO."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


SPECIAL_TEXTS = ["", " ", "\t", "\x00", "\ufeff", "a b", "\u2028", "é", "💥", "\r\n", "q1", "p1", "q1/a", "nan",
                 "yes", "~", "null", "[1]", "{}", "\\", '"', "'", "- x", "#", "&a", "*a", "!!int x", "0x1F", "1e999",
                 "2001-13-45", "\x1b[31m", "\u202e", "\u200b", "%", "\x7f", "\x85"]


short_texts = st.one_of(st.sampled_from(SPECIAL_TEXTS), st.text(max_size=12))

huge_texts = st.builds(lambda count, unit: unit * count, st.integers(1_000, 60_000),
                       st.sampled_from(["a", "a ", " ", "é", "\x00", "[", "💥", "word. "]))


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), short_texts, huge_texts,
)

hostile_values = st.one_of(
    scalars,
    st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(short_texts, inner, max_size=4),
                 max_leaves=8),
    st.builds(_nested, st.integers(1, 90), scalars),
    st.builds(lambda n, v: [v] * n, st.integers(20, 400), scalars),  # many items: crosses the count limits
)


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a document, found without recursion."""
    found: list[tuple[Any, Any]] = []
    todo = [doc]
    while todo:
        node = todo.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            found.append((node, key))
            todo.append(node[key])
    return found


MUTATIONS = ("delete", "duplicate", "swap", "replace", "rename", "wrap", "retype")


@st.composite
def mutated(draw: st.DrawFn, seed: Any) -> Any:
    """``seed`` with a few random mutations (fields deleted, duplicated, swapped, replaced, retyped)."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(0, 3))):
        slots = _slots(doc)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        op = draw(st.sampled_from(MUTATIONS))
        value = container[key]
        if op == "delete":
            del container[key]
        elif op == "duplicate":
            if isinstance(container, list):
                container.insert(key, copy.deepcopy(value))
            else:
                container[key + draw(st.sampled_from(["", "_", " "]))] = copy.deepcopy(value)
        elif op == "swap":
            other, other_key = draw(st.sampled_from(slots))
            with contextlib.suppress(KeyError, IndexError):  # copies: one slot may lie inside the other's value
                container[key], other[other_key] = copy.deepcopy(other[other_key]), copy.deepcopy(container[key])
        elif op == "replace":
            container[key] = draw(hostile_values)
        elif op == "rename" and isinstance(container, dict):
            container[draw(short_texts)] = container.pop(key)
        elif op == "wrap":
            container[key] = draw(st.sampled_from([[value], {"value": value}, str(value), [value, value]]))
        else:  # retype: the same content as another type
            container[key] = draw(st.sampled_from([str(value), [value], 1, 1.5, True, None, {}]))
    return doc


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def json_lines(seed_lines: list[Any]) -> st.SearchStrategy[bytes]:
    lines = st.lists(st.sampled_from(seed_lines).flatmap(mutated), min_size=1, max_size=5)
    ends = st.sampled_from([b"\n", b"\r\n", b"\n\n"])
    return st.tuples(lines, ends).map(lambda pair: b"".join(_json(line) + pair[1] for line in pair[0]))


def finished(call: Callable[[], Any], fifo: Path, timeout: float = 30.0) -> Any:
    """``call()``'s result, or a test failure when it blocks on ``fifo`` (released first)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = call()
        except BaseException as exc:  # handed back to the test
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a writer that closes: the reader sees the end
        worker.join(10)
        pytest.fail(f"blocked reading the FIFO {fifo.name}")
    if "error" in result:
        raise result["error"]
    return result.get("value")
