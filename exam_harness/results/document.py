"""The one JSON schema of both result documents: the pytest report and ``exam-harness evaluate --json``.

Both hold the same result core (``measures``, ``systems[].scores``, ``per_query[].scores``, results/schema.py)
in their own envelope; ``kind`` tells them apart (``exam-report`` | ``evaluation``) and ``schema_version``
(:data:`~exam_harness.results.schema.SCHEMA_VERSION`) versions both. ``exam-harness schema`` prints
:func:`json_schema`.
"""

from __future__ import annotations

import functools
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
