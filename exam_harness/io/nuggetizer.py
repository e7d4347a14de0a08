"""nuggetizer nugget files (the output of its ``create`` step) as nugget banks, and back.

One JSON object per line and query: ``{"query", "qid", "nuggets": [{"text", "importance": "vital"|"okay"}]}``.
Each nugget becomes a nugget test point with its importance kept (``TestPoint.importance``) and the TREC
QA weight nugget F reads (vital 1, okay 0: okay nuggets earn no recall, see measures.nuggets). Ids follow
the method's rule (``qid/md5(text)``); a nugget text given twice for one query is an input error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from exam_harness.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import check_word, model_errors
from exam_harness.io.textio import atomic_write_text, iter_json_lines
from exam_harness.models import Query, QueryBank, TestPoint, test_point_id

IMPORTANCES = ("vital", "okay")
NUGGET_WEIGHTS = {"vital": 1.0, "okay": 0.0}


def is_nuggetizer_record(value: Any) -> bool:
    return isinstance(value, dict) and "qid" in value and isinstance(value.get("nuggets"), list)


def load_nuggetizer_bank(path: Path) -> list[QueryBank]:
    """Read a nuggetizer nugget file into one nugget bank per query."""
    banks: list[QueryBank] = []
    lines: dict[str, int] = {}
    for lineno, record in iter_json_lines(path):
        def fail(message: str, field: str, value: object = None, expected: str | None = None,
                 lineno: int = lineno) -> InputError:
            return InputError(message, path=path, line=lineno, field=field, value=value, expected=expected)

        if not is_nuggetizer_record(record):
            raise fail("a nugget line must be an object with qid and a nuggets list", "nuggets",
                       type(record).__name__, '{"qid", "query", "nuggets": [{"text", "importance"}]}')
        qid = record["qid"]
        qid = str(qid) if isinstance(qid, int) and not isinstance(qid, bool) else qid
        if (why := check_word(qid, "qid")) is not None:
            raise fail(why, "qid", qid, "a query id without whitespace")
        if qid in lines:
            raise fail(f"query {quoted(qid)} appears twice (first at line {lines[qid]})", "qid", qid,
                       "one line per query")
        lines[qid] = lineno
        query = record.get("query", "")
        if not isinstance(query, str):
            raise fail("query must be a string", "query", quoted(query), "the query text")
        points: dict[str, TestPoint] = {}
        for i, nugget in enumerate(record["nuggets"]):
            where = f"nuggets[{i}]"
            if not isinstance(nugget, dict) or not isinstance(nugget.get("text"), str) or not nugget["text"].strip():
                raise fail("a nugget must be an object with a non-empty text", where, quoted(nugget),
                           '{"text", "importance"}')
            importance = nugget.get("importance", "vital")
            if importance not in IMPORTANCES:
                raise fail("unknown nugget importance", f"{where}.importance", importance,
                           " or ".join(map(repr, IMPORTANCES)))
            tid = test_point_id(qid, nugget["text"])
            if tid in points:
                raise fail("the same nugget text twice for one query", f"{where}.text", quoted(nugget["text"]),
                           "distinct nugget texts")
            with model_errors(path, lineno, "nugget"):
                points[tid] = TestPoint(id=tid, query_id=qid, kind="nugget", text=nugget["text"],
                                        weight=NUGGET_WEIGHTS[importance], importance=importance)
        if not points:
            raise fail("a query without nuggets", "nuggets", [], "at least one nugget")
        with model_errors(path, lineno, "query"):
            banks.append(QueryBank(query=Query(id=qid, text=query or qid), test_points=tuple(points.values()),
                                   source=str(path)))
    if not banks:
        raise InputError("empty nugget file", path=path, line=1, expected="one JSON object per query")
    return banks


def nuggetizer_record(bank: QueryBank) -> dict[str, Any]:
    """A bank's nuggets as a nuggetizer line (a nugget without importance is written as vital)."""
    return {"query": bank.query.text, "qid": bank.query.id,
            "nuggets": [{"text": tp.text, "importance": tp.importance or "vital"}
                        for tp in bank.test_points if tp.kind == "nugget"]}


def write_nuggetizer_nuggets(path: Path, banks: Iterable[QueryBank]) -> None:
    """Export the nugget test points of ``banks`` as a nuggetizer nugget file (atomically); banks of the
    same query (facets) are merged into one line, questions are left out."""
    merged: dict[str, dict[str, Any]] = {}
    for bank in banks:
        record = nuggetizer_record(bank)
        if not record["nuggets"]:
            continue
        known = merged.setdefault(bank.query.id, {**record, "nuggets": []})
        known["nuggets"].extend(record["nuggets"])
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged.values())
    atomic_write_text(Path(path), text)
