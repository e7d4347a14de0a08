"""The JSON writer of the exam report: deterministic text (sorted keys, fixed indentation), made in
pieces so that a TREC-sized report is never held whole as one tree of dicts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import fields
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING

from pydantic import BaseModel

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
    doc = report.model_dump(mode="json", exclude=set(STREAMED_LISTS))
    marker = f"exam-harness-list-{uuid.uuid4().hex}-"  # no report text can hold it
    for name in STREAMED_LISTS:
        doc[name] = marker + name
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    for name in sorted(STREAMED_LISTS, key=lambda n: text.index(f'"{marker}{n}"')):
        before, text = text.split(f'"{marker}{name}"', 1)
        yield before
        yield from _json_list(getattr(report, name), level=1)
    yield text + "\n"


def _json_list(items: Sequence[BaseModel | DataclassInstance], *, level: int) -> Iterator[str]:
    """The pieces of ``items`` as ``json.dumps(..., indent=2)`` writes a list ``level`` deep."""
    if not items:
        yield "[]"
        return
    pad = "  " * (level + 1)
    yield "[\n"
    for index, item in enumerate(items):
        fields = item.model_dump(mode="json") if isinstance(item, BaseModel) else _plain_fields(item)
        text = json.dumps(fields, indent=2, sort_keys=True, ensure_ascii=False)
        yield ("" if index == 0 else ",\n") + pad + text.replace("\n", "\n" + pad)  # JSON texts hold no raw \n
    yield "\n" + "  " * level + "]"


def _plain_fields(item: DataclassInstance) -> dict[str, object]:
    """A dataclass of plain JSON values as a dict (``dataclasses.asdict`` deep-copies every value: three
    times slower, and a report writes 600,000 outcomes)."""
    names = _field_names(type(item))
    values = attrgetter(*names)(item)  # a tuple for two names or more
    return dict(zip(names, values if len(names) > 1 else (values,)))


@cache
def _field_names(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))
