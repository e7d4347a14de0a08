"""nuggetizer nugget files (the output of its ``create`` step) as nugget banks, and back.

One JSON object per line and query: ``{"query", "qid", "nuggets": [{"text", "importance"}]}``.
Read with nuggetizer's own semantics (castorini/nuggetizer ``cli/adapters.py``,
``scored_nuggets_from_record``; ``core/metrics.py``, ``calculate_nugget_scores``): the importance is
whatever word the file holds (nuggetizer writes its scorer's word lowercased, so real files hold
``failed``, ``not_relevant``, ... beside ``vital`` and ``okay``), a missing one is ``vital``, and only
``vital`` is vital; an importance that is no single word (``active learning``) or empty (``""``) is read as
nuggetizer reads it, a string that is not ``vital`` (A counts it, V and W do not); a nugget text given twice
for one query is kept twice (nuggetizer scores both). Each nugget becomes a nugget test point with its
importance kept (``TestPoint.importance``), its other fields (``reasoning``, ``trace``, ...) as its ``metadata``
(written back as they came; a line's fields beside ``qid``, ``query`` and ``nuggets``, such as autojudge-base's
``full_query``, are its bank's ``metadata``), and the TREC QA weight nugget F reads (vital 1, anything else
0: see measures.nuggets). Ids follow the method's rule (``qid/md5(text)``; the n-th repeat of a text gets
``~n``). A query without nuggets is skipped (nothing
to assign). These oddities are warnings, each kind said in one line per file; a malformed line is an
input error.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from exam_harness.core.errors import InputError
from exam_harness.core.json_values import json_problem, thaw_json
from exam_harness.core.models import Query, QueryBank, TestPoint, test_point_id
from exam_harness.io.limits import quoted
from exam_harness.io.parts import check_word, model_errors
from exam_harness.io.textio import atomic_write_text, iter_json_lines

IMPORTANCES = ("vital", "okay")  # the two words the track's scores name; any other word is read as well
VITAL = "vital"
NUGGET_FIELDS = ("text", "importance")  # a nugget's fields the test point holds; the others are its metadata
LINE_FIELDS = ("qid", "query", "nuggets")  # a line's fields the bank holds; the others are the bank's metadata


def nugget_weight(importance: str) -> float:
    """The TREC QA weight nugget F reads: vital 1, any other importance 0."""
    return 1.0 if importance == VITAL else 0.0


def is_nuggetizer_record(value: Any) -> bool:
    return isinstance(value, dict) and "qid" in value and isinstance(value.get("nuggets"), list)


def load_nuggetizer_bank(path: Path, notify: Callable[[str], None] | None = None) -> list[QueryBank]:
    """Read a nuggetizer nugget file into one nugget bank per query; its warnings are said through
    ``notify`` (default: a line on stderr), see :func:`nuggetizer_warnings`."""
    banks, warnings = read_nuggetizer_bank(path)
    if warnings:
        from exam_harness.core.display import print_notice

        for warning in warnings:
            (notify or print_notice)(f"warning: {warning}")
    return banks


def _counted(values: Counter[str]) -> str:
    return ", ".join(f"{word!r} x{n}" for word, n in sorted(values.items()))


def nuggetizer_warnings(path: Path, other_importance: Counter[str], repeats: list[int],
                        empty: list[int], odd_importance: Counter[str] | None = None) -> list[str]:
    """One line per kind of oddity in a nugget file."""
    out = []
    if other_importance:
        out.append(f"{path}: {sum(other_importance.values())} nugget(s) of an importance other than vital/okay "
                   f"({_counted(other_importance)}): kept, not vital, and outside W's okay weight (as nuggetizer "
                   "scores them)")
    if odd_importance:
        out.append(f"{path}: {sum(odd_importance.values())} nugget(s) whose importance is no single word "
                   f"({_counted(odd_importance)}): kept as written, not vital, counted in A only (nuggetizer "
                   "compares the importance with 'vital' and scores them so)")
    if repeats:
        out.append(f"{path}: {len(repeats)} nugget text(s) repeated within a query (lines "
                   f"{', '.join(map(str, sorted(set(repeats))[:10]))}): each kept and scored, as nuggetizer does")
    if empty:
        out.append(f"{path}: {len(empty)} quer(y/ies) without nuggets (lines {', '.join(map(str, empty[:10]))}): "
                   "nothing to assign, skipped")
    return out


def read_nuggetizer_bank(path: Path) -> tuple[list[QueryBank], list[str]]:
    """The banks of a nuggetizer nugget file and its warnings (one line per kind)."""
    banks: list[QueryBank] = []
    lines: dict[str, int] = {}
    other_importance: Counter[str] = Counter()
    odd_importance: Counter[str] = Counter()  # multi-word or empty: nuggetizer reads any string
    repeats: list[int] = []
    empty: list[int] = []
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
            importance = nugget.get("importance", VITAL)  # a missing one is vital (scored_nuggets_from_record)
            if not isinstance(importance, str):
                raise fail("a nugget importance must be a string", f"{where}.importance", quoted(importance),
                           " or ".join(map(repr, IMPORTANCES)) + " (any other string is read as not vital)")
            if importance not in IMPORTANCES:
                odd = not importance.strip() or check_word(importance, "importance") is not None
                (odd_importance if odd else other_importance)[importance] += 1
            extra = {key: value for key, value in nugget.items() if key not in NUGGET_FIELDS}  # reasoning, trace, ...
            if (problem := json_problem(extra, where)) is not None:
                raise fail(problem.why, problem.where, expected="JSON values (JSON has no NaN or infinity)")
            tid = base = test_point_id(qid, nugget["text"])
            repeat = 1
            while tid in points:
                repeat += 1
                tid = f"{base}~{repeat}"
            if repeat > 1:
                repeats.append(lineno)
            with model_errors(path, lineno, "nugget"):
                points[tid] = TestPoint(id=tid, query_id=qid, kind="nugget", text=nugget["text"],
                                        weight=nugget_weight(importance), importance=importance, metadata=extra)
        if not points:
            empty.append(lineno)
            continue
        extra = {key: value for key, value in record.items() if key not in LINE_FIELDS}  # full_query, ...
        if (problem := json_problem(extra, "")) is not None:
            raise fail(problem.why, problem.where.lstrip("."), expected="JSON values (JSON has no NaN or infinity)")
        with model_errors(path, lineno, "query"):
            banks.append(QueryBank(query=Query(id=qid, text=query or qid), test_points=tuple(points.values()),
                                   source=str(path), metadata=extra))
    if not banks:
        raise InputError("empty nugget file" if not empty else "no query of the nugget file has nuggets",
                         path=path, line=1, expected="one JSON object per query with its nuggets")
    return banks, nuggetizer_warnings(path, other_importance, repeats, empty, odd_importance)


def nuggetizer_record(bank: QueryBank) -> dict[str, Any]:
    """A bank's nuggets as a nuggetizer line (a nugget without importance is written as vital), each nugget's
    metadata (``reasoning``, ``trace``, ...) as its other fields, the bank's metadata as the line's."""
    taken = [key for key in LINE_FIELDS if key in bank.metadata]
    if taken:
        raise InputError(f"bank {quoted(bank.key)} cannot be written as a nuggetizer line: its metadata holds "
                         f"{quoted(taken[0])}, a field the bank's own {taken[0]} is written in", field="metadata",
                         value=taken[0], expected="metadata keys other than " + ", ".join(LINE_FIELDS))
    return {"query": bank.query.text, "qid": bank.query.id,
            "nuggets": [_nugget(tp) for tp in bank.test_points if tp.kind == "nugget"], **thaw_json(bank.metadata)}


def _nugget(tp: TestPoint) -> dict[str, Any]:
    taken = [key for key in NUGGET_FIELDS if key in tp.metadata]
    if taken:
        raise InputError(f"test point {quoted(tp.id)} cannot be written as a nuggetizer nugget: its metadata holds "
                         f"{quoted(taken[0])}, a field the nugget's own {taken[0]} is written in", field="metadata",
                         value=taken[0], expected="metadata keys other than " + " and ".join(NUGGET_FIELDS))
    return {"text": tp.text, "importance": VITAL if tp.importance is None else tp.importance,
            **thaw_json(tp.metadata)}


def write_nuggetizer_nuggets(path: Path, banks: Iterable[QueryBank]) -> None:
    """Export the nugget test points of ``banks`` as a nuggetizer nugget file (atomically); banks of the
    same query (facets) are merged into one line (their metadata must agree: a line has one), questions are left
    out."""
    merged: dict[str, dict[str, Any]] = {}
    for bank in banks:
        record = nuggetizer_record(bank)
        if not record["nuggets"]:
            continue
        known = merged.setdefault(bank.query.id, {**record, "nuggets": []})
        if bank.metadata != {k: v for k, v in known.items() if k not in LINE_FIELDS}:  # as JSON: 1 is not 1.0
            raise InputError(f"bank {quoted(bank.key)} carries other metadata than the first bank of its query, and "
                             "a nuggetizer line has one", field="metadata", value=bank.key,
                             expected="one metadata for the banks (facets) of a query")
        known["nuggets"].extend(record["nuggets"])
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged.values())
    atomic_write_text(Path(path), text)
