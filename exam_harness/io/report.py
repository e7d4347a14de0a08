"""Reading a JSON report back, validated against the schema it claims."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from exam_harness.errors import InputError
from exam_harness.io.textio import read_text
from exam_harness.report.schema import SCHEMA_VERSION, ExamReport


def read_report(path: Path) -> ExamReport:
    text = read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version is None or str(version).split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise InputError(
            "not an exam report of a schema this version reads", path=path, field="schema_version",
            value=version, expected=f"{SCHEMA_VERSION.split('.')[0]}.x",
        )
    try:
        return ExamReport.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"does not match the report schema: {first['msg']}", path=path,
            field=".".join(str(x) for x in first["loc"]), value=first.get("input"),
        ) from None
