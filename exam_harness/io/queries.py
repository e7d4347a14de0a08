"""Query and facet files of bank generation (``exam-harness generate QUERIES --facets FACETS``).

Queries: a JSON object ``{query_id: text}`` or a TSV file of ``id<TAB>text`` lines. Facets (subtopics):
JSON ``{query_id: {facet_id: text}}`` or TSV ``query_id<TAB>facet_id<TAB>text``. Lines starting with
``#`` are comments. Bad input is an :class:`~exam_harness.core.errors.InputError` naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.core.models import Query
from exam_harness.io.limits import quoted
from exam_harness.io.parts import invisible_char, model_errors
from exam_harness.io.textio import check_json_document, check_surrogates, number_too_long, read_text


def _is_json(path: Path, text: str) -> bool:
    return path.suffix.lower() == ".json" or text.lstrip().startswith("{")


def _is_id(value: str) -> bool:
    return bool(value) and not any(ch.isspace() for ch in value) and invisible_char(value) is None


def _read(path: Path) -> str:
    if not path.exists():
        raise InputError("file not found", path=path)
    return read_text(path)


def _tsv_lines(text: str, path: Path) -> Iterator[tuple[int, str]]:
    """The numbered lines of a TSV query or facet file, each within
    :data:`~exam_harness.io.limits.MAX_FIELDS_LINE_BYTES`."""
    most = limits.MAX_FIELDS_LINE_BYTES
    for lineno, line in enumerate(text.splitlines(), start=1):
        if len(line) > most // 4 and len(line.encode("utf-8")) > most:
            size = limits.size_text(most)
            raise limits.over_limit(f"line longer than {size}", "MAX_FIELDS_LINE_BYTES", f"lines of at most {size}",
                                    path=path, line=lineno)
        yield lineno, line


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook that refuses a key given twice (``json.loads`` would keep the last silently)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _json_object(path: Path, text: str, what: str, expected: str) -> dict[str, Any]:
    """The file's top-level JSON object; a syntax error or another top-level value names the file."""
    check_json_document(text, path)
    try:
        data = check_surrogates(text, json.loads(text, object_pairs_hook=_unique_keys), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except _DuplicateKey as dup:
        raise InputError(f"duplicate key {quoted(dup.args[0])}", path=path, field=limits.cut(dup.args[0]),
                         expected="each id once per object") from None
    except ValueError:  # an integer of more digits than Python converts
        raise number_too_long(path, None) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} must be a JSON object", path=path, line=1, value=type(data).__name__,
                         expected=expected)
    return data


def _json_entries(path: Path, text: str, what: str, expected: str, kind: type, message: str,
                  entry_expected: str) -> Iterator[tuple[str, Any]]:
    """(key, value) of the file's top-level JSON object, each value checked to be a ``kind``."""
    for key, value in _json_object(path, text, what, expected).items():
        if not isinstance(value, kind):
            raise InputError(message, path=path, field=limits.cut(key), value=value, expected=entry_expected)
        yield key, value


def _tsv_rows(text: str, path: Path, count: int, message: str, expected: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, its ``count`` tab-separated fields, stripped) of each line that is not blank or a
    ``#`` comment; the last field keeps any further tabs."""
    for lineno, line in _tsv_lines(text, path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t", count - 1)
        if len(fields) != count:
            raise InputError(message, path=path, line=lineno, value=line, expected=expected)
        yield lineno, [f.strip() for f in fields]


def load_queries(path: Path) -> list[Query]:
    """Queries from a JSON object ``{id: text}`` or a TSV file ``id<TAB>text`` (``#`` lines skipped)."""
    text = _read(path)
    pairs: list[tuple[str, str, int | None]] = []
    if _is_json(path, text):
        entries = _json_entries(path, text, "queries", '{"query_id": "query text", ...}', str,
                                "query text must be a string", '{"query_id": "query text"}')
        pairs.extend((qid, qtext, None) for qid, qtext in entries)
    else:
        rows = _tsv_rows(text, path, 2, "a query line needs a tab between id and text", "id<TAB>text")
        pairs.extend((qid, qtext, lineno) for lineno, (qid, qtext) in rows)
    if len(pairs) > limits.MAX_QUERIES_PER_FILE:
        count = limits.count_text(limits.MAX_QUERIES_PER_FILE)
        raise limits.over_limit(f"more than {count} queries in one file", "MAX_QUERIES_PER_FILE",
                                f"at most {count} queries per file", path=path, line=pairs[-1][2])
    queries: list[Query] = []
    seen: set[str] = set()
    for qid, qtext, line_of_query in pairs:
        where: dict[str, Any] = {"path": path, "line": line_of_query}
        if not _is_id(qid):
            raise InputError("bad query id", **where, field="id", value=qid,
                             expected="an id without whitespace or control characters")
        if not qtext.strip():
            raise InputError("empty query text", **where, field=limits.cut(qid), expected="the query text")
        if qid in seen:
            raise InputError("duplicate query id", **where, field="id", value=qid, expected="each query once")
        seen.add(qid)
        with model_errors(path, line_of_query, "query"):
            queries.append(Query(id=qid, text=qtext.strip()))
    if not queries:
        raise InputError("no queries", path=path, expected='a JSON object {"id": "text"} or lines id<TAB>text')
    return queries


def load_facets(path: Path, query_ids: set[str]) -> dict[str, dict[str, str]]:
    """Facets from JSON ``{query_id: {facet_id: text}}`` or TSV ``query_id<TAB>facet_id<TAB>text``."""
    text = _read(path)
    triples: list[tuple[str, str, Any, int | None]] = []
    if _is_json(path, text):
        entries = _json_entries(path, text, "facets", '{"query_id": {"facet_id": "facet text"}}', dict,
                                "facets of a query must be an object", '{"facet_id": "facet text"}')
        triples.extend((qid, fid, ftext, None) for qid, query_facets in entries for fid, ftext in query_facets.items())
    else:
        rows = _tsv_rows(text, path, 3, "a facet line needs three tab-separated fields",
                         "query_id<TAB>facet_id<TAB>text")
        triples.extend((qid, fid, ftext, lineno) for lineno, (qid, fid, ftext) in rows)
    facets: dict[str, dict[str, str]] = {}
    for qid, fid, ftext, line_of_facet in triples:
        if qid not in query_ids:
            raise InputError(
                "facet of an unknown query",
                path=path,
                line=line_of_facet,
                field="query_id",
                value=qid,
                expected="a query id of the queries file",
            )
        if not _is_id(fid):
            raise InputError(
                "bad facet id",
                path=path,
                line=line_of_facet,
                field="facet_id",
                value=fid,
                expected="an id without whitespace or control characters",
            )
        if not isinstance(ftext, str) or not ftext.strip():
            raise InputError(
                "empty facet text",
                path=path,
                line=line_of_facet,
                field=limits.cut(fid),
                value=ftext,
                expected="the facet text",
            )
        if fid in facets.get(qid, {}):
            raise InputError(
                "duplicate facet id",
                path=path,
                line=line_of_facet,
                field="facet_id",
                value=fid,
                expected="each facet once per query",
            )
        facets.setdefault(qid, {})[fid] = ftext.strip()
    return facets


def add_facets(queries: list[Query], facets: dict[str, dict[str, str]]) -> list[Query]:
    """The queries, each with its facets from :func:`load_facets` (a query with facets gets a bank per facet)."""
    return [q.model_copy(update={"facets": facets[q.id]}) if q.id in facets else q for q in queries]
