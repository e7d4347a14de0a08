"""The one writer registry: every file a result document is written as, in both front ends.

A writer turns a document (the pytest session's :class:`~exam_harness.results.schema.ExamReport` or
``evaluate``'s :class:`~exam_harness.report.evaluation.EvaluationReport`) and what stands beside it (the
plan, the EXAM-Qrels, the gates' details, passage texts) into files by name; it reads the document and
never changes it. Plugins add writers through ``pytest_exam_register_reporters`` (hookspecs.py).

Where the files go is the front end's choice, the same in both:

- the **report set** (pytest's ``--exam-report-dir``, ``evaluate --report-dir``): every writer's files
  except those of :data:`ON_REQUEST`, written as one unit through the atomic report set
  (io/report_set.py);
- the writers of :data:`ON_REQUEST` only where an option names their place (``--markdown FILE``,
  ``--html DIR``, ``--plot DIR``; pytest's with the ``exam-`` prefix), each file written atomically; the
  markdown text is also appended to ``$GITHUB_STEP_SUMMARY``; so is a feature's writer that names the option
  of its file (``option``: the Workbench feature's ``evaluate --export-workbench FILE``), written by ``evaluate``.
"""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

from exam_harness.core.errors import ExamError
from exam_harness.core.registry import Registry

if TYPE_CHECKING:
    from exam_harness.config.options import FeatureOption
    from exam_harness.core.answers import CitedAnswer
    from exam_harness.core.models import GraderSpec
    from exam_harness.exam.inputs import ExamView
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.measures.qrels import Qrels
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.gate_checks import Verdicts
    from exam_harness.results.schema import ExamReport

    Document: TypeAlias = ExamReport | EvaluationReport

GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # GitHub Actions' file that each step appends its summary to
EVALUATION_NAME = "evaluation.json"  # evaluate's document (the pytest report's is reporters.REPORT_NAME)
MARKDOWN_NAME = "exam-summary.md"
HTML_NAME = "index.html"

# Built-in writers whose files are written only where an option names their place, never in the report set.
ON_REQUEST: tuple[str, ...] = ("markdown", "html", "plots")


@dataclass(frozen=True)
class Binary:
    """A file given as bytes (an image). A plain ``bytes`` value is refused: most often it is text
    encoded by mistake, and the set's files are UTF-8 text otherwise."""

    data: bytes


# A file's content: its text, its text in pieces (written as they come, so a long report is never held
# whole: at 600,000 outcomes the JSON text alone is about 200 MB), or an image's bytes.
FileContent = str | Iterable[str] | Binary


@dataclass(frozen=True)
class WriterInput:
    """What a writer reads: the document and what the front end has beside it."""

    document: Document
    plan: ExamPlan | None = None
    qrels: Mapping[str, Qrels] = field(default_factory=dict)  # file name -> the EXAM-Qrels it holds
    verdicts: Verdicts | None = None  # the gates' details (threshold checks, changes), for the summaries
    passages: Mapping[str, str] = field(default_factory=dict)  # passage id -> text shown beside a miss
    exam: GradedExam | None = None  # the exam's grades behind the document (evaluate's), for a writer of them
    # run -> query -> the cited answers the runs held (TREC RAG answer files, live systems': ExamInputs.answers)
    answers: Mapping[str, Mapping[str, CitedAnswer]] = field(default_factory=dict)


@dataclass(frozen=True)
class GradedExam:
    """The exam a document was scored from, as ``evaluate`` graded it: its view (passages, banks, pool), the
    grading pass's outcome and the grader's identity (the Workbench feature writes them as a paragraph file)."""

    view: ExamView
    outcome: GradingOutcome
    spec: GraderSpec


class Writer(Protocol):
    def files(self, out: WriterInput) -> Mapping[str, FileContent]:
        """File name -> content; empty where the document holds nothing this writer writes."""
        ...


class WriterOutputError(ExamError):
    """A writer gave a file's content as something other than a text, text pieces or :class:`Binary`."""


# --- the built-in writers -------------------------------------------------------------------------


class JsonWriter:
    """The document itself: ``exam-report.json`` (pytest) or ``evaluation.json`` (evaluate)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.results.json_writer import REPORT_NAME, json_document, json_text, report_json_pieces
        from exam_harness.results.schema import ExamReport

        doc = out.document
        if isinstance(doc, ExamReport):
            return {REPORT_NAME: report_json_pieces(doc)}
        # a section holding a NaN is left out, another NaN written as null, each said (results/json_writer.py)
        return {EVALUATION_NAME: json_text(json_document(doc.to_json(), EVALUATION_NAME), EVALUATION_NAME, indent=1)
                + "\n"}


class QrelsWriter:
    """The EXAM-Qrels as trec_eval qrels files, one per label variant (and tau)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.io.qrels import qrels_text

        return {name: qrels_text(qrels) for name, qrels in out.qrels.items()}


class MarkdownWriter:
    """A markdown summary (leaderboard, gates, regressions, missed required test points)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.results.schema import ExamReport

        doc = out.document
        if isinstance(doc, ExamReport):
            from exam_harness.report.markdown import render_markdown

            return {MARKDOWN_NAME: render_markdown(doc, out.verdicts)}
        from exam_harness.report.evaluation_summary import evaluation_markdown

        return {MARKDOWN_NAME: evaluation_markdown(doc, _label(out))}


class HtmlWriter:
    """A self-contained HTML page (pytest's: leaderboard, heatmap, grades, drill-down to misses)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.results.schema import ExamReport

        doc = out.document
        if isinstance(doc, ExamReport):
            from exam_harness.report.html import render_html

            return {HTML_NAME: render_html(doc, out.passages)}
        from exam_harness.report.evaluation_summary import evaluation_html

        return {HTML_NAME: evaluation_html(doc, _label(out))}


class PlotsWriter:
    """evaluate's leaderboards against the official ranking (PNG and SVG) and the figures of the sections that draw
    their own (an optional ``images(content)``: file name -> bytes)."""

    def files(self, out: WriterInput) -> dict[str, FileContent]:
        from exam_harness.results.schema import ExamReport

        doc = out.document
        if isinstance(doc, ExamReport):
            return {}  # one tau and no official leaderboard: the HTML report draws the session's scores
        from exam_harness.report.plots import leaderboard_images
        from exam_harness.results.sections import section_images

        images = leaderboard_images(doc)
        images.update(section_images(doc.sections))  # a section's own figures (the external qrels' per query)
        return {name: Binary(data) for name, data in images.items()}


def _label(out: WriterInput) -> str:
    return out.plan.labels[0] if out.plan is not None and out.plan.labels else "max-grade"


def builtin_writers() -> Registry[Writer]:
    registry: Registry[Writer] = Registry("writer")
    registry.register("qrels", QrelsWriter(), "trec_eval qrels files, one per label variant")
    registry.register("json", JsonWriter(), "exam-report.json (evaluate: evaluation.json), the versioned JSON document")
    registry.register("markdown", MarkdownWriter(), f"{MARKDOWN_NAME}, a summary for a PR comment or the CI's page")
    registry.register("html", HtmlWriter(), f"{HTML_NAME}, a self-contained HTML report")
    registry.register("plots", PlotsWriter(), "evaluate's leaderboards and per-query correlations (PNG, SVG)")
    return registry


# --- writing ----------------------------------------------------------------------------------------


def report_set_names(registry: Registry[Writer]) -> list[str]:
    """The writers whose files make the report set: every one but those written on request."""
    return [name for name in registry.names() if name not in ON_REQUEST and requested_option(registry, name) is None]


def requested_option(registry: Registry[Writer], name: str) -> FeatureOption[Path | None] | None:
    """The option naming the one file writer ``name`` is written to (optional ``option`` of a feature's writer, the
    Workbench feature's ``--export-workbench``), or None: a writer of the report set or a built-in on request."""
    if name in ON_REQUEST:
        return None
    option = getattr(registry.get(name), "option", None)
    from exam_harness.config.options import FeatureOption

    return option if isinstance(option, FeatureOption) else None


def encoded_files(registry: Registry[Writer], names: Iterable[str],
                  out: WriterInput) -> dict[str, bytes | Iterable[bytes]]:
    """The files of the writers ``names``, as bytes (a ``.gz`` name compressed); a file name two writers
    give is an error."""
    files: dict[str, bytes | Iterable[bytes]] = {}
    made_by: dict[str, str] = {}
    for name in names:
        for file_name, content in registry.get(name).files(out).items():
            if file_name in made_by:
                raise WriterOutputError(f"writers {made_by[file_name]!r} and {name!r} both write {file_name!r}")
            made_by[file_name] = name
            data = _encoded(name, file_name, content)
            if file_name.endswith(".gz"):
                data = gzip.compress(data if isinstance(data, bytes) else b"".join(data), mtime=0)
            files[file_name] = data
    return files


def write_report_files(folder: Path, registry: Registry[Writer], out: WriterInput) -> list[Path]:
    """Every report-set writer's files, written into ``folder`` as one set (old set or new after any kill)."""
    from exam_harness.io.report_set import write_report_set

    return write_report_set(folder, encoded_files(registry, report_set_names(registry), out))


def requested_text(registry: Registry[Writer], name: str, out: WriterInput) -> str:
    """The one text file writer ``name`` makes (the markdown summary, the Workbench file)."""
    made = registry.get(name).files(out)
    if len(made) != 1:
        raise WriterOutputError(f"writer {name!r} gave {len(made)} files where one file is asked for")
    [(file_name, content)] = made.items()
    data = _encoded(name, file_name, content)
    return (data if isinstance(data, bytes) else b"".join(data)).decode("utf-8")


def write_requested_file(registry: Registry[Writer], name: str, target: Path, out: WriterInput) -> list[Path]:
    """Writer ``name``'s one file at ``target`` (atomically; compressed where ``target`` ends in .gz)."""
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(target, requested_text(registry, name, out))
    return [target]


def write_requested_folder(registry: Registry[Writer], name: str, folder: Path, out: WriterInput) -> list[Path]:
    """Writer ``name``'s files into ``folder`` (created), each atomically; other files there stay."""
    from exam_harness.io.textio import atomic_write_bytes

    files = encoded_files(registry, [name], out)
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, data in files.items():
        atomic_write_bytes(folder / file_name, data)
    return [folder / file_name for file_name in files]


def _encoded(writer: str, file_name: str, content: object) -> bytes | Iterator[bytes]:
    """A writer's file as bytes: a text at once, pieces as they are written (each checked)."""
    if isinstance(content, Binary):
        return content.data
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, (bytes, bytearray)) or not isinstance(content, Iterable):
        raise WriterOutputError(_bad_output(writer, file_name, content))
    return _encoded_pieces(writer, file_name, content)


def _encoded_pieces(writer: str, file_name: str, pieces: Iterable[object]) -> Iterator[bytes]:
    for piece in pieces:
        if not isinstance(piece, str):
            raise WriterOutputError(_bad_output(writer, file_name, piece, "a piece"))
        yield piece.encode("utf-8")


def _bad_output(writer: str, file_name: str, value: object, what: str = "the content") -> str:
    return (f"writer {writer!r} gave {what} of {file_name!r} as {type(value).__name__}; a writer's files() "
            "maps each file name to a text (str), an iterable of text pieces or a Binary (bytes)")


# --- $GITHUB_STEP_SUMMARY: the markdown writer's text, appended ---------------------------------------


def step_summary_problem(path: Path) -> str | None:
    """Why ``path`` cannot take an appended summary (a folder, a FIFO, a device: not a regular file), or None.
    A missing file is fine (it is created); a missing or unwritable folder shows when appending."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a FIFO, socket or device)"
    return None


def append_step_summary(path: str, text: str) -> None:
    """Append ``text`` to ``path`` (GitHub Actions collects what each step appends). Opened without
    blocking, and refused unless it is a regular file, so a FIFO put there since the check cannot hang
    the session."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        handle.write(text)
