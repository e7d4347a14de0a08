"""The one JSON schema of both result documents: the pytest report and ``exam-harness evaluate --json``.

Both hold the same result core (``measures``, ``systems[].scores``, ``per_query[].scores``, results/schema.py)
in their own envelope; ``kind`` tells them apart (``exam-report`` | ``evaluation``) and ``schema_version``
(:data:`~exam_harness.results.schema.SCHEMA_VERSION`) versions both. ``exam-harness schema`` prints
:func:`json_schema`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from exam_harness.results.evaluation import EvaluationReport
from exam_harness.results.schema import SCHEMA_VERSION, ExamReport

ResultDocument = Annotated[ExamReport | EvaluationReport, Field(discriminator="kind")]


@functools.cache
def document_adapter() -> TypeAdapter[ExamReport | EvaluationReport]:
    """Validates either document (by its ``kind``)."""
    return TypeAdapter(ResultDocument)


def json_schema() -> dict[str, Any]:
    """The JSON Schema both documents validate against, titled with the schema version."""
    schema = document_adapter().json_schema()
    schema["title"] = f"exam-harness result document, schema {SCHEMA_VERSION}"
    return schema


def validate_document(document: object) -> ExamReport | EvaluationReport:
    """A parsed JSON document (either kind) validated against the schema; pydantic's ValidationError if not."""
    return document_adapter().validate_python(document)


def read_document(path: Path) -> ExamReport | EvaluationReport:
    """Either result document from its file: an exam report (as ``io.report.read_report`` reads it, an
    older schema migrated) or ``evaluate``'s; a bad file is an InputError naming it, the line or field."""
    from pydantic import ValidationError

    from exam_harness.core.errors import InputError
    from exam_harness.results.read import exam_report_from, read_json_file, schema_error

    text, raw = read_json_file(path)
    if not (isinstance(raw, dict) and raw.get("kind") == "evaluation"):
        return exam_report_from(text, raw, path)
    version = raw.get("schema_version")
    if str(version).split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise InputError("not an evaluation document of a schema this version reads", path=path,
                         field="schema_version", value=version, expected=f"{SCHEMA_VERSION.split('.')[0]}.x")
    from exam_harness.results.migrate import cascade_before_4_2, evaluation_to_sections

    if str(version) in ("4.0", "4.1"):  # 4.0's optional parts move into sections; 4.0/4.1 cascade entries to 4.2's
        text = json.dumps(cascade_before_4_2(evaluation_to_sections(raw)))
    try:
        return EvaluationReport.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise schema_error(exc, path) from None
