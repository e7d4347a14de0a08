"""Bank formats and run-side file formats: the two file-format extension points.

A format says which files it *claims*, by their names, and reads them. Nothing is judged by its
content before it is read, so a malformed bank is reported, never silently skipped: every file with
a bank suffix under a bank folder is a bank, in pytest's collection and on the command line alike.
Built-in formats are registered first; formats that
plugins register (``pytest_exam_register_bank_formats`` / ``..._run_formats``) are asked before
them, so a plugin can also take over a suffix. Every front end finds files through these registries:
pytest's bank collection, ``exam-harness evaluate --bank`` and the run loader alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from exam_harness.core.models import QueryBank
from exam_harness.core.registry import Registry
from exam_harness.io.parts import FilePart
from exam_harness.io.textio import base_name, is_gz

if TYPE_CHECKING:
    from exam_harness.io.trec_rag import TrackTopics

HAND_SUFFIXES = (".yaml", ".yml", ".json")


class BankFormat(Protocol):
    """A bank file format: ``claims`` says by its name whether a file is a bank of this format,
    ``load`` reads its query banks."""

    def claims(self, path: Path) -> bool: ...

    def load(self, path: Path) -> list[QueryBank]: ...


class RunFormat(Protocol):
    """A run-side file format (runs, passage collections, responses, graded paragraph files).

    ``collection`` formats are read after all others, with ``keep`` = the passage ids anything else
    references (None: keep every passage), so a full collection can back a few runs.
    """

    @property
    def collection(self) -> bool: ...

    def claims(self, path: Path) -> bool: ...

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart: ...


# --- built-in bank formats --------------------------------------------------------------------


class HandBankFormat:
    """The hand-editable YAML/JSON bank (``queries:`` with questions and nuggets per query)."""

    def claims(self, path: Path) -> bool:
        return not is_gz(path) and path.suffix.lower() in HAND_SUFFIXES

    def load(self, path: Path) -> list[QueryBank]:
        from exam_harness.io.handbank import load_hand_bank

        return load_hand_bank(path)


class WorkbenchBankFormat:
    """Workbench bank JSON lines (``.jsonl`` or ``.jsonl.gz``, one ``{query_id, items}`` per line), or a
    nuggetizer nugget file (``{qid, query, nuggets}`` per line) when its first line is one."""

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith(".jsonl") and not _run_side_jsonl(base_name(path))

    def load(self, path: Path) -> list[QueryBank]:
        from exam_harness.io.nuggetizer import is_nuggetizer_record, load_nuggetizer_bank
        from exam_harness.io.textio import first_json_line
        from exam_harness.io.workbench import load_workbench_bank

        if is_nuggetizer_record(first_json_line(path)):
            return load_nuggetizer_bank(path)
        return load_workbench_bank(path)


def _run_side_jsonl(name: str) -> bool:
    return name == "collection.jsonl" or name.endswith((".responses.jsonl", ".collection.jsonl"))


# --- built-in run formats -----------------------------------------------------------------------


@dataclass(frozen=True)
class Collection:
    """A passage collection named ``collection{suffix}`` or ``*.collection{suffix}``: ``.tsv`` is
    ``passage_id<TAB>text``, ``.jsonl`` one ``{id, text}`` per line."""

    suffix: str
    collection: bool = True

    def claims(self, path: Path) -> bool:
        name = base_name(path)
        return name == f"collection{self.suffix}" or name.endswith(f".collection{self.suffix}")

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        from exam_harness.io.collection import read_collection_jsonl, read_collection_tsv

        return (read_collection_tsv if self.suffix == ".tsv" else read_collection_jsonl)(path, keep)


@dataclass(frozen=True)
class TrecRun:
    collection: bool = False

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith((".run", ".trec"))

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        from exam_harness.io.trec import read_trec_run

        return read_trec_run(path)


@dataclass(frozen=True)
class Responses:
    collection: bool = False

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith(".responses.jsonl")

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        from exam_harness.io.generated import read_responses

        return read_responses(path)


@dataclass(frozen=True)
class WorkbenchParagraphs:
    """Any other ``.jsonl``: a TREC RAG answer file, a nugget assignment file (nuggetizer's assign output) or a
    Workbench paragraph file (its first line says which);
    ``fix``: TREC RAG answers read with the track checker's fixes (``--trec-rag-fix``)."""

    collection: bool = False
    fix: bool = False
    topics: TrackTopics | None = None  # the track's topic file: checked against it (--trec-rag-topics)

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith(".jsonl") and not _run_side_jsonl(base_name(path))

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        from exam_harness.io.textio import first_json_line
        from exam_harness.io.trec_rag import is_rag_answer_record, read_rag_answers
        from exam_harness.io.workbench import read_paragraph_file

        first = first_json_line(path)
        if is_rag_answer_record(first):
            return read_rag_answers(path, fix=self.fix, topics=self.topics)
        from exam_harness.io.assignments import is_assignment_record, read_assignment_part

        if is_assignment_record(first):
            return read_assignment_part(path)
        return read_paragraph_file(path)


def trec_rag_reading(formats: Registry[RunFormat], *, fix: bool = False,
                     topics: TrackTopics | None = None) -> Registry[RunFormat]:
    """``formats`` with TREC RAG answer files read with the track checker's fixes applied (``fix``:
    ``--trec-rag-fix``) and checked against the track's topic file (``topics``: ``--trec-rag-topics``)."""
    reading: Registry[RunFormat] = Registry(formats.kind)
    descriptions = formats.describe()
    for name in formats:
        entry = formats.get(name)
        if isinstance(entry, WorkbenchParagraphs):
            entry = replace(entry, fix=fix, topics=topics)
        reading.register(name, entry, descriptions[name])
    return reading


def trec_rag_formats(formats: Registry[RunFormat], fix: bool, topics_file: Path | None) -> Registry[RunFormat]:
    """The run formats a front end reads with, by its ``trec_rag_fix`` and ``trec_rag_topics`` options."""
    if not fix and topics_file is None:
        return formats
    from exam_harness.io.trec_rag import read_track_topics

    return trec_rag_reading(formats, fix=fix, topics=None if topics_file is None else read_track_topics(topics_file))


def builtin_bank_formats() -> Registry[BankFormat]:
    registry: Registry[BankFormat] = Registry("bank format")
    registry.register("hand", HandBankFormat(), "hand-written YAML/JSON bank (.yaml, .yml, .json)")
    registry.register("workbench", WorkbenchBankFormat(),
                      "Workbench bank or nuggetizer nugget JSON lines (.jsonl, .jsonl.gz)")
    return registry


def builtin_run_formats() -> Registry[RunFormat]:
    registry: Registry[RunFormat] = Registry("run format")
    registry.register("collection-tsv", Collection(".tsv"), "collection.tsv / *.collection.tsv: passage_id<TAB>text")
    registry.register("collection-jsonl", Collection(".jsonl"), "collection.jsonl / *.collection.jsonl: {id, text}")
    registry.register("trec", TrecRun(), "*.run / *.trec: TREC run, qid Q0 docid rank score tag")
    registry.register("responses", Responses(), "*.responses.jsonl: generated responses {query_id, run, response}")
    registry.register("workbench", WorkbenchParagraphs(),
                      "other *.jsonl: TREC RAG answers (2024/2025) or Workbench paragraph file")
    return registry


class _Claims(Protocol):
    def claims(self, path: Path) -> bool: ...


F = TypeVar("F", bound=_Claims)


def claiming(registry: Registry[F], path: Path) -> F | None:
    """The format that claims ``path`` (plugins' formats asked first), or None."""
    for name in reversed(registry.names()):
        fmt = registry.get(name)
        if fmt.claims(path):
            return fmt
    return None
