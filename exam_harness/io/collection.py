"""Passage collections: ``passage_id<TAB>text`` TSV or JSON lines with an id and a text field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, check_word, passage_too_long
from exam_harness.io.textio import iter_json_lines, iter_lines

TSV_HEADERS = {("id", "text"), ("docid", "text"), ("passage_id", "text"), ("pid", "text")}
JSON_ID_KEYS = ("id", "passage_id", "docid")
JSON_TEXT_KEYS = ("text", "contents")


def _add(part: FilePart, pid: str, text: str, lineno: int, field: str, keep: set[str] | None) -> None:
    if len(text) > limits.MAX_PASSAGE_CHARS:
        raise passage_too_long(part.path, lineno, "text")
    if keep is not None and pid not in keep:
        return
    known = part.passages.get(pid)
    if known is None:
        part.passages[pid] = (text, lineno)
    elif known[0] != text:
        raise InputError(
            f"passage {quoted(pid)} is defined again with another text (first at line {known[1]})",
            path=part.path,
            line=lineno,
            field=field,
            value=pid,
            expected="each passage id once (or with the same text)",
        )


def read_collection_tsv(path: Path, keep: set[str] | None = None) -> FilePart:
    """Read ``passage_id<TAB>text`` lines; a first line ``id<TAB>text`` (or ``docid``) is a header.

    With ``keep``, only those passage ids are stored (the rest is still checked for form).
    """
    part = FilePart(path=path)
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        pid, sep, text = line.partition("\t")
        if lineno == 1 and (pid.strip().lower(), text.strip().lower()) in TSV_HEADERS:
            continue
        if not sep:
            raise InputError(
                "no tab between passage id and text",
                path=path,
                line=lineno,
                field="passage_id",
                value=line[:40],
                expected="passage_id<TAB>text",
            )
        if (why := check_word(pid, "passage id")) is not None:
            raise InputError(
                why, path=path, line=lineno, field="passage_id", value=pid, expected="an id without whitespace"
            )
        _add(part, pid, text, lineno, "passage_id", keep)
    return part


def _one_of(record: dict[str, Any], keys: tuple[str, ...], path: Path, lineno: int, what: str) -> tuple[str, Any]:
    present = [k for k in keys if k in record]
    if len(present) != 1:
        raise InputError(
            f"{'no' if not present else 'more than one'} {what} field",
            path=path,
            line=lineno,
            field="/".join(keys),
            value=present or sorted(record),
            expected=f"exactly one of {', '.join(keys)}",
        )
    return present[0], record[present[0]]


def read_collection_jsonl(path: Path, keep: set[str] | None = None) -> FilePart:
    """Read ``{"id"|"passage_id"|"docid": ..., "text"|"contents": ...}`` lines (``keep``: as for TSV)."""
    part = FilePart(path=path)
    for lineno, record in iter_json_lines(path):
        if not isinstance(record, dict):
            raise InputError(
                "a collection line must be a JSON object",
                path=path,
                line=lineno,
                field="id",
                expected='{"id": ..., "text": ...}',
            )
        id_key, pid = _one_of(record, JSON_ID_KEYS, path, lineno, "passage id")
        if isinstance(pid, int) and not isinstance(pid, bool):
            pid = str(pid)
        if (why := check_word(pid, "passage id")) is not None:
            raise InputError(why, path=path, line=lineno, field=id_key, value=pid, expected="an id without whitespace")
        text_key, text = _one_of(record, JSON_TEXT_KEYS, path, lineno, "text")
        if not isinstance(text, str):
            raise InputError(
                "must be a string", path=path, line=lineno, field=text_key, value=text, expected="the passage text"
            )
        _add(part, pid, text, lineno, id_key, keep)
    return part
