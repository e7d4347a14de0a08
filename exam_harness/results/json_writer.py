"""The JSON writer of the exam report: deterministic text (sorted keys, fixed indentation), made in
pieces so that a TREC-sized report is never held whole as one tree of dicts.

JSON holds no ``NaN`` or infinity (Python's json writes a bare ``NaN``, which no JSON reader, nor this
harness's, accepts): a section holding one is left out of the document, and any other such number is
written as ``null``, each named in a warning (results/left_out.py), so the file written is always JSON
(:func:`json_document`, :func:`json_text`; issue 39, finding 11)."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import fields
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from exam_harness.results.left_out import leave_out

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from exam_harness.results.schema import ExamReport

REPORT_NAME = "exam-report.json"

# The report's long lists (a TREC-sized exam: 30,000 per-query scores, 600,000 outcomes), serialised
# item by item: dumping the whole report as one tree of dicts first was most of a session's peak memory.
STREAMED_LISTS = ("outcomes", "per_query")


def report_json(report: ExamReport) -> str:
    """Deterministic JSON: sorted keys, fixed indentation, so equal scores give equal bytes. The bytes
    are those of ``json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True,
    ensure_ascii=False)``; see :func:`report_json_pieces`."""
    return "".join(report_json_pieces(report))


def report_json_pieces(report: ExamReport) -> Iterator[str]:
    """:func:`report_json`'s text in pieces, made as they are consumed: the lists of
    :data:`STREAMED_LISTS` are dumped one item at a time."""
    doc = json_document(report.model_dump(mode="json", exclude=set(STREAMED_LISTS)), REPORT_NAME)
    marker = f"exam-harness-list-{uuid.uuid4().hex}-"  # no report text can hold it
    for name in STREAMED_LISTS:
        doc[name] = marker + name
    text = json_text(doc, REPORT_NAME, indent=2, sort_keys=True)
    for name in sorted(STREAMED_LISTS, key=lambda n: text.index(f'"{marker}{n}"')):
        before, text = text.split(f'"{marker}{name}"', 1)
        yield before
        yield from _json_list(getattr(report, name), name, level=1)
    yield text + "\n"


def _json_list(items: Sequence[BaseModel | DataclassInstance], name: str, *, level: int) -> Iterator[str]:
    """The pieces of ``items`` (the document's list ``name``) as ``json.dumps(..., indent=2)`` writes a list
    ``level`` deep."""
    if not items:
        yield "[]"
        return
    pad = "  " * (level + 1)
    yield "[\n"
    for index, item in enumerate(items):
        fields = item.model_dump(mode="json") if isinstance(item, BaseModel) else _plain_fields(item)
        text = json_text(fields, REPORT_NAME, indent=2, sort_keys=True, where=f"{name}.{index}")
        yield ("" if index == 0 else ",\n") + pad + text.replace("\n", "\n" + pad)  # JSON texts hold no raw \n
    yield "\n" + "  " * level + "]"


# --- no NaN in JSON ------------------------------------------------------------------------------


def json_document(doc: dict[str, Any], file_name: str) -> dict[str, Any]:
    """``doc`` (a document dumped in JSON mode) without the sections that hold a number JSON cannot hold,
    each named in a warning: a section's content is its own model, whose reader would refuse a null there."""
    sections = doc.get("sections")
    if isinstance(sections, dict):
        for key in list(sections):
            bad = next(_non_finite(sections[key], f"sections.{key}"), None)
            if bad is not None:
                del sections[key]
                leave_out(f"section {key!r} left out of {file_name}: its {bad[0]} is {bad[1]!r}, which JSON cannot "
                          "hold (no NaN or infinity)")
    return doc


def json_text(value: Any, file_name: str, *, where: str = "", **dump: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dump)``, always JSON: a ``NaN`` or an infinity is written as
    ``null``, named in a warning (``where``: the dotted place of ``value`` in the document)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, **dump)
    except ValueError:
        found = list(_non_finite(value, where))
        if not found:
            raise
        shown = ", ".join(f"{field} ({number!r})" for field, number in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        leave_out(f"{file_name}: {shown}{more} not a finite number, written as null (JSON has no NaN or infinity)")
        return json.dumps(_nulled(value), ensure_ascii=False, allow_nan=False, **dump)


def _non_finite(value: Any, where: str) -> Iterator[tuple[str, float]]:
    """(dotted field, number) of every NaN or infinity in ``value``, without recursion."""
    todo: list[tuple[str, Any]] = [(where, value)]
    while todo:
        at, item = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            yield at or "(document)", item
        elif isinstance(item, dict):
            todo.extend(reversed([(f"{at}.{k}" if at else str(k), v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            todo.extend(reversed([(f"{at}.{i}" if at else str(i), v) for i, v in enumerate(item)]))


def _nulled(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (a JSON-mode dump: dicts, lists, scalars)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nulled(v) for v in value]
    return value


def _plain_fields(item: DataclassInstance) -> dict[str, object]:
    """A dataclass of plain JSON values as a dict (``dataclasses.asdict`` deep-copies every value: three
    times slower, and a report writes 600,000 outcomes)."""
    names = _field_names(type(item))
    values = attrgetter(*names)(item)  # a tuple for two names or more
    return dict(zip(names, values if len(names) > 1 else (values,)))


@cache
def _field_names(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))
