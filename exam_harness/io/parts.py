"""What one run-side input file contributes, before files are merged by :func:`load_runs`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam_harness.models import RecordedGrade, Run


@dataclass
class FilePart:
    """The content of one file, with the line numbers the merge step needs for its errors."""

    path: Path
    # passage id -> (text, line where it is defined)
    passages: dict[str, tuple[str, int]] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    # run name -> first line that mentions it
    run_lines: dict[str, int] = field(default_factory=dict)
    judgments: dict[str, dict[str, int]] = field(default_factory=dict)
    recorded: dict[tuple[str, str], list[RecordedGrade]] = field(default_factory=dict)
    # run name -> query id -> full generated response
    responses: dict[str, dict[str, str]] = field(default_factory=dict)
    # (llm, prompt class) -> (test point id, grade, answer) -> one shared (frozen) recorded grade
    shared_grades: dict[tuple[Any, Any], dict[tuple[Any, ...], RecordedGrade]] = field(default_factory=dict, repr=False)


_WHITESPACE = re.compile(r"\s")


def check_word(value: object, what: str) -> str | None:
    """``None`` if ``value`` is a non-empty string without whitespace, else why not."""
    if value is None:
        return f"{what} is missing"
    if not isinstance(value, str):
        return f"{what} must be a string"
    if not value:
        return f"{what} must not be empty"
    if _WHITESPACE.search(value):
        return f"{what} must not contain whitespace"
    return None
