"""JSON values held frozen: a test point's free-form ``metadata`` (:class:`~exam_harness.core.models.TestPoint`).

A bank format, or a converted record of another tool (autojudge-base's nugget kinds: a nugget's ``reasoning``,
``trace``, ``creator``), carries fields the exam does not read; they travel with the test point so that writing
it back gives the record whole. They must be JSON (every bank format writes them as JSON), and frozen: test
points are frozen models, compared and hashed. :class:`FrozenJSON` is such an object: nested objects are
FrozenJSON, arrays tuples; :meth:`FrozenJSON.thaw` gives plain dicts and lists again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

if TYPE_CHECKING:
    JSON: TypeAlias = bool | int | float | str | Sequence["JSON"] | Mapping[str, "JSON"] | None
else:  # pydantic would recurse into the alias; validation is :func:`freeze_json`'s
    JSON = Any


class NotJSON(ValueError):
    """A value that is not JSON: ``where`` is its place below the field (``metadata.trace[2]``), ``why`` what
    it is instead."""

    def __init__(self, where: str, why: str) -> None:
        self.where, self.why = where, why
        super().__init__(f"{where}: {why}")


def json_problem(value: object, where: str) -> NotJSON | None:
    """The first part of ``value`` that is not JSON (an object's key that is no text, a NaN or infinite number,
    a date, bytes, a set, any other Python object), else None."""
    stack: list[tuple[object, str]] = [(value, where)]
    while stack:  # no recursion: a deep value cannot exhaust the stack
        item, place = stack.pop()
        if item is None or isinstance(item, (bool, int)):
            continue
        if isinstance(item, str):
            if not _writable(item):
                return NotJSON(place, "a text with a lone surrogate cannot be written as UTF-8")
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return NotJSON(place, f"{item} is no JSON number (JSON has no NaN or infinity)")
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    return NotJSON(place, f"the key {key!r} is not a text (JSON object keys are texts)")
                if not _writable(key):
                    return NotJSON(place, f"the key {key!a} has a lone surrogate, which cannot be written as UTF-8")
                stack.append((child, f"{place}.{key}"))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{place}[{i}]") for i, child in enumerate(item))
        else:
            return NotJSON(place, f"a {type(item).__name__} is not a JSON value (text, number, true/false, null, "
                                  "list or object)")
    return None


def _writable(text: str) -> bool:
    return text.isascii() or not any("\ud800" <= ch <= "\udfff" for ch in text)


def _freeze(value: Any) -> Any:
    if isinstance(value, FrozenJSON):
        return value
    if isinstance(value, Mapping):
        return FrozenJSON._trusted({key: _freeze(child) for key, child in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(child) for child in value)
    return value


def thaw_json(value: Any) -> Any:
    """A frozen JSON value as plain dicts and lists (what ``json.dumps`` and the other tools' models take)."""
    if isinstance(value, Mapping):
        return {key: thaw_json(child) for key, child in value.items()}
    if isinstance(value, tuple | list):
        return [thaw_json(child) for child in value]
    return value


class FrozenJSON(Mapping[str, Any]):
    """An immutable, hashable JSON object; equal to any mapping of the same JSON text (so ``1`` and ``1.0``, or
    ``true`` and ``1``, differ, as they do in a file, and equal objects hash alike)."""

    __slots__ = ("_items", "_text")

    def __init__(self, items: Mapping[str, JSON] | None = None) -> None:
        frozen = freeze_json(items or {})
        self._items: dict[str, Any] = frozen._items
        self._text: str | None = None

    @classmethod
    def _trusted(cls, items: dict[str, Any]) -> FrozenJSON:
        made = cls.__new__(cls)
        made._items, made._text = items, None
        return made

    def _canonical(self) -> str:
        if self._text is None:
            self._text = json.dumps(self.thaw(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return self._text

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, FrozenJSON):
            if json_problem(other, "") is not None:
                return False
            other = _freeze(other)
        if not isinstance(other, FrozenJSON):
            return NotImplemented
        if not self._items or not other._items:
            return not self._items and not other._items
        return self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash(self._canonical())

    def __repr__(self) -> str:
        return f"FrozenJSON({self.thaw()!r})"

    def thaw(self) -> dict[str, Any]:
        """The object as a plain dict (nested dicts and lists)."""
        return {key: thaw_json(child) for key, child in self._items.items()}


EMPTY = FrozenJSON._trusted({})


def freeze_json(value: object, where: str = "metadata") -> FrozenJSON:
    """``value`` (a mapping of JSON values) as a :class:`FrozenJSON`; :class:`NotJSON` naming the first part that
    is not JSON (``where``: the field's name, the start of that place)."""
    if isinstance(value, FrozenJSON):
        return value
    if not isinstance(value, Mapping):
        raise NotJSON(where, f"a {type(value).__name__} is not a JSON object (a mapping of texts to JSON values)")
    if (problem := json_problem(value, where)) is not None:
        raise problem
    return _freeze(value)  # type: ignore[no-any-return]


# The pydantic field type: validated by freeze_json, written (model_dump, JSON) as a plain object.
JSONObject = Annotated[
    Mapping[str, JSON],
    PlainValidator(lambda value: freeze_json(value)),
    PlainSerializer(lambda value: thaw_json(value), return_type=dict[str, Any]),
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]
