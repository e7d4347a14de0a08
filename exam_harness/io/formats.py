"""Bank formats and run-side file formats: the two file-format extension points.

A format says which files it *claims*, by their names, and reads them. Nothing is judged by its
content before it is read, so a malformed bank is reported, never silently skipped: every file with
a bank suffix under a bank folder is a bank, in pytest's collection and on the command line alike.
Built-in formats are registered first; formats that
features and plugins register (``pytest_exam_register_bank_formats`` / ``..._run_formats``) are asked before
them, so a plugin can also take over a suffix, or claim some files of a suffix by their first line where the
built-in format still reads the rest (the TREC RAG feature's nugget, answer and assignment files among the
``.jsonl`` ones): a file is never left unread. Every front end finds files through these registries:
pytest's bank collection, ``exam-harness evaluate --bank`` and the run loader alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from exam_harness.core.models import QueryBank
from exam_harness.core.registry import Registry
from exam_harness.io.parts import FilePart
from exam_harness.io.textio import base_name, is_gz

HAND_SUFFIXES = (".yaml", ".yml", ".json")


class BankFormat(Protocol):
    """A bank file format: ``claims`` says by its name whether a file is a bank of this format,
    ``load`` reads its query banks."""

    def claims(self, path: Path) -> bool: ...

    def load(self, path: Path) -> list[QueryBank]: ...


class RunFormat(Protocol):
    """A run-side file format (runs, passage collections, responses, graded paragraph files).

    ``collection`` formats are read after all others, with ``keep`` = the passage ids anything else
    references (None: keep every passage), so a full collection can back a few runs. A format may also have
    ``recognises(path) -> bool``: asked (plugins' first) for a file no format claims by its name, by its content
    (TREC RAG submissions carry any name).
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
    """Workbench bank JSON lines (``.jsonl`` or ``.jsonl.gz``, one ``{query_id, items}`` per line): every
    ``.jsonl`` bank file no feature's format claims by its first line."""

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith(".jsonl") and not run_side_jsonl(base_name(path))

    def load(self, path: Path) -> list[QueryBank]:
        from exam_harness.io.workbench import load_workbench_bank

        return load_workbench_bank(path)


def run_side_jsonl(name: str) -> bool:
    """Whether a ``.jsonl`` file name is a run-side file's by its name (a collection, responses)."""
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
    """Any other ``.jsonl``: a Workbench paragraph file (every one no feature's format claims by its first line:
    the TREC RAG feature's answer and assignment files)."""

    collection: bool = False

    def claims(self, path: Path) -> bool:
        return base_name(path).endswith(".jsonl") and not run_side_jsonl(base_name(path))

    def read(self, path: Path, keep: set[str] | None = None) -> FilePart:
        from exam_harness.io.workbench import read_paragraph_file

        return read_paragraph_file(path)


def builtin_bank_formats() -> Registry[BankFormat]:
    registry: Registry[BankFormat] = Registry("bank format")
    registry.register("hand", HandBankFormat(), "hand-written YAML/JSON bank (.yaml, .yml, .json)")
    registry.register("workbench", WorkbenchBankFormat(), "Workbench bank JSON lines (.jsonl, .jsonl.gz)")
    return registry


def builtin_run_formats() -> Registry[RunFormat]:
    registry: Registry[RunFormat] = Registry("run format")
    registry.register("collection-tsv", Collection(".tsv"), "collection.tsv / *.collection.tsv: passage_id<TAB>text")
    registry.register("collection-jsonl", Collection(".jsonl"), "collection.jsonl / *.collection.jsonl: {id, text}")
    registry.register("trec", TrecRun(), "*.run / *.trec: TREC run, qid Q0 docid rank score tag")
    registry.register("responses", Responses(), "*.responses.jsonl: generated responses {query_id, run, response}")
    registry.register("workbench", WorkbenchParagraphs(), "other *.jsonl: Workbench paragraph file")
    return registry


_defaults: dict[str, tuple[Any, Registry[Any]]] = {}


def use_formats(hook: Any, bank_formats: Registry[BankFormat], run_formats: Registry[RunFormat]) -> None:
    """Make the registries a front end filled through ``hook`` the defaults of callers given none while ``hook`` is
    the active one."""
    _defaults["bank"] = (hook, bank_formats)
    _defaults["run"] = (hook, run_formats)


def default_bank_formats() -> Registry[BankFormat]:
    """The built-in bank formats and those the active front end's features and plugins register (core/host.py: the
    in-tree features' with no front end), for a caller given no registry. Filled once per hook relay."""
    return _default("bank", builtin_bank_formats, "pytest_exam_register_bank_formats")


def default_run_formats() -> Registry[RunFormat]:
    """The built-in run formats and the active front end's features' and plugins' (see :func:`default_bank_formats`)."""
    return _default("run", builtin_run_formats, "pytest_exam_register_run_formats")


def _default(kind: str, builtin: Any, hook_name: str) -> Registry[Any]:
    from exam_harness.core.host import active_hook

    hook = active_hook()
    known = _defaults.get(kind)
    if known is None or known[0] is not hook:
        registry = builtin()
        getattr(hook, hook_name)(registry=registry)
        known = _defaults[kind] = (hook, registry)
    return known[1]


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


def recognising(registry: Registry[F], path: Path) -> F | None:
    """The format that recognises ``path`` by its content (``recognises``; plugins' formats asked first), or None:
    for a file no format claims by its name."""
    for name in reversed(registry.names()):
        fmt = registry.get(name)
        recognises = getattr(fmt, "recognises", None)
        if callable(recognises) and recognises(path):
            return fmt
    return None


def first_line_of(path: Path) -> object:
    """The first JSON line of ``path`` for a format that claims files by it, None where it is none (not JSON
    lines, unreadable: the format that reads every file of its name says what is wrong)."""
    from exam_harness.core.errors import InputError
    from exam_harness.io.textio import first_json_line

    try:
        return first_json_line(path)
    except (InputError, OSError, UnicodeDecodeError, EOFError):
        return None
