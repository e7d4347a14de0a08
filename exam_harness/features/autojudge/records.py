"""A nugget kind's record and a test point's ``metadata`` (core/json_values.py), both ways.

A record's fields that the test point does not give (a nuggetizer nugget's ``reasoning``, ``trace`` and
``assignment``; a v3 nugget's ``creator``, ``references``, ``quality``, ``sub_nuggets``, its own ``metadata``; a
ragtime26 nugget's ``aggregator_type``) travel in the test point's metadata under the kind's own names, as JSON;
each gold answer's other fields (its ``references``, ``metadata``) under ``answers``, one object per gold answer.
Written back, they are laid over what the test point alone converts to, so a record comes back whole. The test
point's own fields win: its text, and its importance unless the metadata holds the same importance typed (a
number). The kind's models validate what the metadata names; a value a field cannot take is refused.

A kind's bank record (one per query: a v3 bank's ``creator``, ``full_query``, ``quality``, ...; a ragtime26 bank's
run ``metadata``; a nuggetizer bank's ``full_query``) travels the same way in the exam bank's ``metadata``
(``QueryBank.metadata``), each of the query's banks (facets) carrying the same.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from exam_harness.core.json_values import thaw_json
from exam_harness.core.models import QueryBank, TestPoint

ANSWERS = "answers"  # each gold answer's other fields, in gold-answer order
R = TypeVar("R", bound=BaseModel)


def record_extras(record: BaseModel, derived: BaseModel, held: Collection[str]) -> dict[str, Any]:
    """The fields of ``record`` (as JSON) whose value differs from ``derived``'s (the record the test point alone
    converts to), ``held`` left out: what the test point's metadata must carry."""
    mine, base = record.model_dump(mode="json"), derived.model_dump(mode="json")
    return {key: value for key, value in mine.items() if key not in held and value != base.get(key)}


def answer_extras(answers: Sequence[BaseModel] | None, derived_none: bool) -> list[dict[str, Any]] | None:
    """Each answer's fields other than its text that are set, or None when none is and the answers are what the
    gold answers alone give (``derived_none``: the gold answers alone give no answer list, where the record has an
    empty one)."""
    if answers is None:
        return None
    extras = [{k: v for k, v in a.model_dump(mode="json").items() if k != "answer" and v is not None}
              for a in answers]
    return extras if any(extras) or (not answers and derived_none) else None


def split_metadata(tp: TestPoint, fields: Collection[str], held: Collection[str]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the kind's fields the test point's metadata names, its other keys) — ``held`` (the fields the test point
    itself writes) are refused there: a ValueError naming the test point."""
    mine: dict[str, Any] = {}
    others: dict[str, Any] = {}
    for key, value in thaw_json(tp.metadata).items():
        if key in held:
            raise ValueError(f"test point {tp.id!r}: its metadata names {key!r}, the kind's field its own "
                             f"{'text' if key != ANSWERS else 'gold answers'} is written in")
        (mine if key in fields else others)[key] = value
    return mine, others


def laid_over(derived: R, extras: Mapping[str, Any], tp: TestPoint, kind: str) -> R:
    """``derived`` with the fields ``extras`` names set, validated by the kind's model (a ValueError naming the
    test point and the field where a value does not fit). An importance in ``extras`` is kept only where it is the
    test point's own, typed otherwise (``3`` for ``"3"``)."""
    extras = dict(extras)
    if "importance" in extras and (tp.importance is None or str(extras["importance"]) != tp.importance):
        del extras["importance"]  # the test point's importance was changed since: it wins
    return set_fields(derived, extras, f"test point {tp.id!r}", kind)


def set_fields(derived: R, extras: Mapping[str, Any], who: str, kind: str) -> R:
    """``derived`` with the fields ``extras`` names set, validated by the kind's model: a ValueError naming ``who``
    (the test point, the bank) and the field where a value does not fit."""
    if not extras:
        return derived
    try:
        return type(derived).model_validate({**derived.model_dump(mode="json"), **extras})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{who} cannot be written as {kind}: its metadata's {where!r} "
                         f"{first['msg'].lower()}") from None


def split_bank_metadata(bank: QueryBank, fields: Collection[str], held: Collection[str]
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the kind's bank fields the bank's metadata names, its other keys); ``held`` (the fields the bank itself
    writes: its query id, its nuggets) are refused there, a ValueError naming the bank."""
    mine: dict[str, Any] = {}
    others: dict[str, Any] = {}
    for key, value in thaw_json(bank.metadata).items():
        if key in held:
            raise ValueError(f"bank {bank.key!r}: its metadata names {key!r}, the kind's field its own query id or "
                             "test points are written in")
        (mine if key in fields else others)[key] = value
    return mine, others


class OneRecordPerQuery:
    """The banks of each query, checked to carry one bank metadata: a kind holds one bank record per query, so
    banks (facets) of a query with different metadata are refused rather than one of them dropped."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.first: dict[str, QueryBank] = {}

    def is_new(self, bank: QueryBank) -> bool:
        """Whether ``bank`` is its query's first (a ValueError where it is not and its metadata differs)."""
        first = self.first.get(bank.query.id)
        if first is None:
            self.first[bank.query.id] = bank
            return True
        if first.metadata != bank.metadata:
            raise ValueError(f"banks {first.key!r} and {bank.key!r} of query {bank.query.id!r} carry different "
                             f"metadata, and {self.kind} holds one record per query")
        return False
