"""Reading a JSON report back, validated against the schema it claims."""

from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import SchemaValidator

from exam_harness.core.errors import InputError
from exam_harness.core.models import readable_from_generated
from exam_harness.io.textio import read_json_file as read_json_file
from exam_harness.results.migrate import migrate
from exam_harness.results.schema import SCHEMA_VERSION, ExamReport

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


def schema_error(exc: ValidationError, path: Path) -> InputError:
    first = exc.errors(include_url=False)[0]
    return InputError(
        f"does not match the report schema: {first['msg']}", path=path,
        field=".".join(str(x) for x in first["loc"]), value=first.get("input"),
    )


def read_report(path: Path) -> ExamReport:
    text, raw = read_json_file(path)
    if isinstance(raw, dict) and raw.get("kind") == "evaluation":  # the other envelope of the one schema
        raise InputError("an `exam-harness evaluate --json` document, not an exam report (exam-report.json)",
                         path=path, field="kind", value="evaluation", expected="exam-report")
    return exam_report_from(text, raw, path)


def exam_report_from(text: str, raw: Any, path: Path) -> ExamReport:
    """The exam report ``raw`` (parsed from ``text``, read from ``path``): checked, migrated and validated."""
    written_as = raw.get("schema_version") if isinstance(raw, dict) else None
    check_values(raw, path)  # before migrating: the fields are named as the file writes them
    if isinstance(raw, dict):
        raw = migrate(raw)  # a kept report of an older schema reads as today's (results/migrate.py)
    migrated_text = written_as != SCHEMA_VERSION  # an older report may have been rewritten: check what was read
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    # a migrated report keeps the version it was written as: 3.x (2.x migrated to 3.0 first) or today's
    if version is None or str(version).split(".")[0] not in ("3", SCHEMA_VERSION.split(".")[0]):
        raise InputError(
            "not an exam report of a schema this version reads", path=path, field="schema_version",
            value=version, expected=f"3.x or {SCHEMA_VERSION.split('.')[0]}.x",
        )
    try:
        _fail_fast_validator().validate_python(raw)
        # then strictly, in JSON mode (python mode would want dataclass instances): a number given as a
        # string, a count as 2.0 or a bool as 1 is refused. Second, so that a document of bad entries is
        # refused by the cheap check: a strict error on it would quote the whole document as its input.
        _fail_fast_validator().validate_json(json.dumps(raw) if migrated_text else text, strict=True)
    except ValidationError as exc:
        raise schema_error(exc, path) from None
    try:
        report = ExamReport.model_validate(raw)  # valid, so no flood of errors
    except ValidationError as exc:  # pragma: no cover - the strict check above is stricter
        raise schema_error(exc, path) from None
    return migrated(report, written_as)


# Scores that are fractions of a query's test points (or means of them): 0..1. Schema 2.x held them in
# fixed fields; 3.0 keys them by measure name under systems[].scores[NAME].mean and per_query[].scores[NAME].
_FRACTIONS = {("systems", "exam_cover"), ("systems", "n_exam_cover"), ("per_query", "exam_cover"),
              ("per_query", "n_exam_cover"), ("per_query", "nugget_f"), ("systems", "nugget_f", "mean")}
_FRACTION_MEASURES = ("exam-cover", "n-exam-cover", "nugget-f")


def _is_fraction(named: tuple[str, ...]) -> bool:
    if named in _FRACTIONS:
        return True
    if len(named) >= 3 and named[1] == "scores" and named[0] in ("systems", "per_query"):
        measure = named[2]
        return measure.startswith(_FRACTION_MEASURES) and named[3:] in ((), ("mean",))
    return False


def check_values(raw: Any, path: Path) -> None:
    """Every number of a report is finite and not negative (a Cohen's kappa in -1..1), and each score that is a
    fraction is at most 1:
    a kept report is data a gate compares with, so ``NaN`` (which Python's json reads and writes) or a
    negative score would make every comparison pass. Raises InputError naming the field."""
    # outcomes (one per run and test point: 600,000 in a TREC-sized exam) hold one number each, checked
    # directly; the schema made it an integer or null already
    outcomes = raw.get("outcomes") if isinstance(raw, dict) else None
    for i, outcome in enumerate(outcomes if isinstance(outcomes, list) else []):
        grade = outcome.get("best_grade") if isinstance(outcome, dict) else None
        if isinstance(grade, int) and grade < 0:
            raise InputError("a report's numbers are not negative", path=path, field=f"outcomes.{i}.best_grade",
                             value=grade, expected="a number >= 0")
    rest = {k: v for k, v in raw.items() if k != "outcomes"} if isinstance(raw, dict) else raw
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), rest)]
    while todo:  # no recursion: the document's depth was bounded, but a loop is as short
        where, value = todo.pop()
        if isinstance(value, dict):
            todo.extend(reversed([((*where, k), v) for k, v in value.items()]))  # first field first
        elif isinstance(value, list):
            todo.extend(reversed([((*where, i), v) for i, v in enumerate(value)]))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            field = ".".join(str(x) for x in where)
            if isinstance(value, float) and not math.isfinite(value):  # an int is finite (and may not fit a float)
                raise InputError("a report's numbers are finite", path=path, field=field, value=value,
                                 expected="a finite number (not NaN or infinity)")
            named = tuple(x for x in where if isinstance(x, str))
            if any("kappa" in name for name in named):  # Cohen's kappa (a section's figure) is signed
                if not -1 <= value <= 1:
                    raise InputError("a Cohen's kappa out of range", path=path, field=field, value=value,
                                     expected="a kappa in -1..1")
                continue
            if value < 0:
                raise InputError("a report's numbers are not negative", path=path, field=field, value=value,
                                 expected="a number >= 0")
            if _is_fraction(named) and value > 1:
                raise InputError("a score out of range", path=path, field=field, value=value,
                                 expected="a score in 0..1")


def migrated(report: ExamReport, written_as: object) -> ExamReport:
    """The test point ids of a report written as schema 2.0, which kept generated ids as
    ``query/md5(text)``; since 2.1 a report keeps the id every output shows
    (:func:`exam_harness.core.models.readable_id`), so ids in a kept report and in today's CI output match."""
    if written_as != "2.0":
        return report
    for outcome in report.outcomes:
        outcome.test_point_id = readable_from_generated(outcome.test_point_id, outcome.text)
    return report.model_copy(update={"schema_version": SCHEMA_VERSION})
