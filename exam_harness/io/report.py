"""Reading a JSON report back, validated against the schema it claims."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import SchemaValidator

from exam_harness.errors import InputError
from exam_harness.io.textio import check_json_document, decode_text, number_too_long, read_bytes
from exam_harness.models import readable_from_generated
from exam_harness.report.migrate import migrate
from exam_harness.report.schema import SCHEMA_VERSION, ExamReport

_COLLECTIONS = {"list", "dict", "tuple", "set", "frozenset"}


class _StandIn:
    """Takes the place of each model class in the fail-fast schema (see :func:`_fail_fast_validator`)."""


@functools.cache
def _fail_fast_validator() -> SchemaValidator:
    """The report schema's validator with every list and dict stopping at its first bad item.

    Pydantic collects every error of a document, ~400 bytes each: a 32 MiB report of bad entries would
    hold gigabytes of them. This validator finds the same first error with a handful. Model classes
    are replaced by a stand-in, or pydantic-core would reuse each model's own (collecting) validator.
    """
    schema = copy.deepcopy(ExamReport.__pydantic_core_schema__)
    todo: list[Any] = [schema]
    while todo:  # the schema as a tree of dicts and lists, walked without recursion
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") in _COLLECTIONS:
                node["fail_fast"] = True
            if node.get("type") == "model":
                node["cls"] = _StandIn
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return SchemaValidator(schema)


def _schema_error(exc: ValidationError, path: Path) -> InputError:
    first = exc.errors(include_url=False)[0]
    return InputError(
        f"does not match the report schema: {first['msg']}", path=path,
        field=".".join(str(x) for x in first["loc"]), value=first.get("input"),
    )


def read_report(path: Path) -> ExamReport:
    data = read_bytes(path)
    check_json_document(data, path)
    text = decode_text(data, path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except ValueError:  # an integer of more digits than Python converts
        raise number_too_long(path, None) from None
    written_as = raw.get("schema_version") if isinstance(raw, dict) else None
    if isinstance(raw, dict):
        raw = migrate(raw)  # a kept report of schema 2.x reads as 3.0
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version is None or str(version).split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise InputError(
            "not an exam report of a schema this version reads", path=path, field="schema_version",
            value=version, expected=f"{SCHEMA_VERSION.split('.')[0]}.x",
        )
    try:
        _fail_fast_validator().validate_python(raw)
        report = ExamReport.model_validate(raw)  # valid, so no flood of errors
    except ValidationError as exc:
        raise _schema_error(exc, path) from None
    return migrated(report, written_as)


def migrated(report: ExamReport, written_as: object) -> ExamReport:
    """The test point ids of a report written as schema 2.0, which kept generated ids as
    ``query/md5(text)``; since 2.1 a report keeps the id every output shows
    (:func:`exam_harness.models.readable_id`), so ids in a kept report and in today's CI output match."""
    if written_as != "2.0":
        return report
    for outcome in report.outcomes:
        outcome.test_point_id = readable_from_generated(outcome.test_point_id, outcome.text)
    return report.model_copy(update={"schema_version": SCHEMA_VERSION})
