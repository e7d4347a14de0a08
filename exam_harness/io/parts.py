"""What one run-side input file contributes, before files are merged by :func:`load_runs`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import exam_harness.io.limits as limits
from exam_harness.core.answers import CitedAnswer
from exam_harness.core.errors import InputError
from exam_harness.core.ids import id_problem, name_problem
from exam_harness.core.ids import invisible_char as invisible_char  # the loaders read it from here
from exam_harness.core.models import RecordedGrade, Run

# The run-side file forms the loaders recognise, as one text for error messages (``expected=``): the run loader
# (runs.py) and the readers it dispatches to (workbench.py) both name it.
RECOGNISED_FORMS = (
    "collection.tsv or *.collection.tsv (passage_id<TAB>text), "
    "collection.jsonl or *.collection.jsonl ({id, text}), "
    "*.run or *.trec (TREC run: qid Q0 docid rank score tag), "
    "*.responses.jsonl (generated responses: {query_id, run, response}), "
    "*.jsonl (TREC RAG answers: {run_id, topic_id, references, answer: [{text, citations}]} or the 2025 "
    "{metadata, references, answer}; nugget assignments: {qid, run_id, answer_text, nuggets: [{text, importance, "
    "assignment}]}; else a Workbench paragraph file: [query_id, [paragraph, ...]]), "
    "a file of any other name whose first line is a TREC RAG answer; "
    "each optionally .gz"
)


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
    # run name -> query id -> an answer whose sentences cite references (TREC RAG answer files)
    answers: dict[str, dict[str, CitedAnswer]] = field(default_factory=dict)
    # what the file's format warns about (a warning never refuses a file), one line per kind of warning
    warnings: list[str] = field(default_factory=list)
    # (llm, prompt class) -> (test point id, grade, answer) -> one shared (frozen) recorded grade
    shared_grades: dict[tuple[Any, Any], dict[tuple[Any, ...], RecordedGrade]] = field(default_factory=dict, repr=False)


def line_columns(line: str, path: Path, lineno: int, count: int, column: str, wrong_count: str,
                 expected: str) -> list[str]:
    """The whitespace-separated columns of a line of a trec file ([] for a blank line), checked: ``count``
    of them (else ``wrong_count``, formatted with ``n``, the number found) and none with an invisible
    character."""
    cols = line.split()
    if not cols:
        return cols
    if len(cols) != count:
        raise InputError(wrong_count.format(n=len(cols)), path=path, line=lineno, field="line", value=line[:80],
                         expected=expected)
    if (invisible := invisible_char("".join(cols))) is not None:
        raise InputError(f"a {column} contains {invisible}", path=path, line=lineno, field="line", value=line[:80],
                         expected="ids of visible characters (a damaged or concatenated file?)")
    return cols


def check_word(value: object, what: str) -> str | None:
    """``None`` if ``value`` can be an id (exam_harness/core/ids.py: the one rule), else why not."""
    return id_problem(value, what)


def check_run_name(value: object, what: str) -> str | None:
    """``None`` if ``value`` can be a run's name (an id the writers name files after), else why not."""
    return name_problem(value, what)


@contextlib.contextmanager
def model_errors(path: Path, line: int | None, what: str) -> Iterator[None]:
    """An InputError naming the place for a rule of :mod:`exam_harness.core.models` that the loader did not
    check first (the models validate on their own, so no loader passes a ValidationError on)."""
    try:
        yield
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputError(f"invalid {what}: {first['msg']}", path=path, line=line,
                         field=".".join(str(part) for part in first["loc"]) or None) from None


def passage_too_long(path: Path, line: int, field: str) -> InputError:
    """The error for a passage text past :data:`~exam_harness.io.limits.MAX_PASSAGE_CHARS`."""
    most = limits.count_text(limits.MAX_PASSAGE_CHARS)
    return limits.over_limit(f"passage text longer than {most} characters", "MAX_PASSAGE_CHARS",
                             f"passages of at most {most} characters", path=path, line=line, field=field)
