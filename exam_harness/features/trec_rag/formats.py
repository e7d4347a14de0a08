"""The TREC RAG track's files as the exam reads them, claimed by their first line among the ``.jsonl`` files (the
built-in Workbench formats read every other one):

- bank side, a nuggetizer nugget file (``{qid, query, nuggets}`` per line; nuggets.py);
- run side, a TREC RAG answer file (2024 or 2025; answers.py), also under any other name (submissions carry any
  name), and a nugget assignment file (nuggetizer's assign output; assignments.py).

``--trec-rag-fix`` and ``--trec-rag-topics`` configure how answer files are read (:func:`configured`, from the
feature's ``pytest_exam_inputs``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.api import FilePart, RunFormat
from exam_harness.core.registry import Registry
from exam_harness.io.formats import first_line_of, run_side_jsonl
from exam_harness.io.textio import base_name

if TYPE_CHECKING:
    from exam_harness.core.models import QueryBank
    from exam_harness.features.trec_rag.answers import TrackTopics


def _jsonl(path: Path) -> bool:
    return base_name(path).endswith(".jsonl") and not run_side_jsonl(base_name(path))


class NuggetFileFormat:
    """A nuggetizer nugget file among the bank files: a ``.jsonl`` (or ``.jsonl.gz``) whose first line is one."""

    def claims(self, path: Path) -> bool:
        from exam_harness.features.trec_rag.nuggets import is_nuggetizer_record

        return _jsonl(path) and is_nuggetizer_record(first_line_of(path))

    def load(self, path: Path) -> list[QueryBank]:
        from exam_harness.features.trec_rag.nuggets import load_nuggetizer_bank

        return load_nuggetizer_bank(path)


@dataclass(frozen=True)
class TrackFiles:
    """A TREC RAG answer file or a nugget assignment file among the run-side files: a ``.jsonl`` whose first line is
    one (an answer file of any other name too: :meth:`recognises`). ``fix``: answers read with the track checker's
    fixes (``--trec-rag-fix``); ``topics``: checked against the track's topic file (``--trec-rag-topics``)."""

    collection: bool = False
    fix: bool = False
    topics: TrackTopics | None = None

    def claims(self, path: Path) -> bool:
        return _jsonl(path) and _kind(path) is not None

    def recognises(self, path: Path) -> bool:
        return _kind(path) == "answers"

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        if _kind(path) == "assignments":
            from exam_harness.features.trec_rag.assignments import read_assignment_part

            return read_assignment_part(path)
        from exam_harness.features.trec_rag.answers import read_rag_answers

        return read_rag_answers(path, fix=self.fix, topics=self.topics)


def _kind(path: Path) -> str | None:
    from exam_harness.features.trec_rag.answers import is_rag_answer_record
    from exam_harness.features.trec_rag.assignments import is_assignment_record

    first = first_line_of(path)
    if is_rag_answer_record(first):
        return "answers"
    return "assignments" if is_assignment_record(first) else None


def configured(formats: Registry[RunFormat], *, fix: bool = False,
               topics: TrackTopics | None = None) -> Registry[RunFormat]:
    """``formats`` with TREC RAG answer files read with the track checker's fixes applied (``fix``:
    ``--trec-rag-fix``) and checked against the track's topic file (``topics``: ``--trec-rag-topics``)."""
    reading: Registry[RunFormat] = Registry(formats.kind)
    descriptions = formats.describe()
    for name in formats:
        entry = formats.get(name)
        if isinstance(entry, TrackFiles):
            entry = replace(entry, fix=fix, topics=topics)
        reading.register(name, entry, descriptions[name])
    return reading


NUGGET_FILES = NuggetFileFormat()
TRACK_FILES = TrackFiles()
