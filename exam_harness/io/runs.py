"""Load everything the systems produced: runs, passage texts, judgments, recorded grades, responses.

:func:`load_runs` takes files and folders (folders are read non-recursively in sorted name order;
hidden files, ``README*``, ``*.md``, ``.gitkeep`` and the manifests of recorded systems, ``*.system.json``,
are skipped) and recognises each file by name:

* ``collection.tsv`` / ``*.collection.tsv``: ``passage_id<TAB>text`` (optional header line)
* ``collection.jsonl`` / ``*.collection.jsonl``: ``{"id"|"passage_id"|"docid", "text"|"contents"}``
* ``*.run`` / ``*.trec``: TREC run files, ``qid Q0 docid rank score tag``
* ``*.responses.jsonl``: generated responses ``{"query_id", "run"|"system", "response"}``
* other ``*.jsonl``: Workbench paragraph files (lines ``[query_id, [paragraph, ...]]``), unless a feature's
  format claims the file by its first line (the TREC RAG feature: its answer files, 2024/2025, and nugget
  assignment files)
* a file of any other name that a format recognises by its content (``recognises``: a TREC RAG answer
  file, whose submissions carry any name)

each optionally gzipped (``.gz``). Collections are read last and keep only the passages that some
run ranks (or a judgment or recorded grade mentions), so a full collection can back a few runs; with
no such reference at all every passage is kept.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness.core.answers import CitedAnswer
from exam_harness.core.errors import InputError
from exam_harness.core.models import ExamData, Passage, Run
from exam_harness.core.registry import Registry
from exam_harness.io.formats import RunFormat, TrecRun, claiming, default_run_formats, recognising
from exam_harness.io.parts import RECOGNISED_FORMS as RECOGNISED_FORMS
from exam_harness.io.parts import FilePart
from exam_harness.io.textio import is_hidden
from exam_harness.io.trec import find_run_line


@dataclass
class LoadedRuns:
    """What :func:`load_runs` found: the exam data (without banks) and full generated responses.

    ``responses[run][query_id]`` is the complete text of a generated response (its segments are
    the run's ranked passages); nugget F-score measures its length.
    """

    data: ExamData
    responses: dict[str, dict[str, str]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    # run -> query id -> an answer with cited sentences (TREC RAG answer files)
    answers: dict[str, dict[str, CitedAnswer]] = field(default_factory=dict)
    # the files' warnings (e.g. the TREC RAG checker's), each said once through ``notify`` as it was read
    warnings: list[str] = field(default_factory=list)


def _skipped_in_folder(path: Path) -> bool:
    name = path.name
    return (is_hidden(path) or name.startswith("README") or name.lower().endswith((".md", ".system.json"))
            or name == ".gitkeep")


def file_format(path: Path, formats: Registry[RunFormat]) -> RunFormat:
    """The run format that claims ``path`` by its name, else one that recognises it by its content (a TREC RAG
    submission carries any name, often none with a suffix), or an InputError listing the recognised forms."""
    fmt = claiming(formats, path) or recognising(formats, path)
    if fmt is None:
        raise InputError(
            "unrecognised run-side file", path=path, field="file name", value=path.name, expected=RECOGNISED_FORMS
        )
    return fmt


def run_files(paths: Sequence[Path]) -> list[Path]:
    """The files named by ``paths`` (folders expanded non-recursively, sorted, skipping docs/hidden)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(p for p in sorted(path.iterdir()) if p.is_file() and not _skipped_in_folder(p))
        elif path.exists():
            files.append(path)
        else:
            raise InputError("run path not found", path=path, expected="an existing run file or folder")
    return files


class _Merger:
    def __init__(self) -> None:
        self.passages: dict[str, tuple[str, Path, int]] = {}
        self.runs: dict[str, Run] = {}
        self.run_origin: dict[str, tuple[Path, int]] = {}
        self.trec_runs: set[str] = set()  # runs read from TREC run files (their errors can name a line)
        self.judgments: dict[str, dict[str, int]] = {}
        self.recorded: dict[tuple[str, str], list] = {}  # type: ignore[type-arg]
        self.responses: dict[str, dict[str, str]] = {}
        self.answers: dict[str, dict[str, CitedAnswer]] = {}
        self.warnings: list[str] = []

    def add(self, part: FilePart, trec: bool) -> None:
        path = part.path
        self.warnings.extend(part.warnings)
        for name, run in part.runs.items():
            line = part.run_lines.get(name, 0)
            if name in self.runs:
                first_path, first_line = self.run_origin[name]
                raise InputError(
                    f"run {name!r} is already defined in {first_path}:{first_line}",
                    path=path,
                    line=line or None,
                    field="run",
                    value=name,
                    expected="each run name in one file only",
                )
            self.runs[name] = run
            self.run_origin[name] = (path, line)
            if trec:
                self.trec_runs.add(name)
        for pid, (text, line) in part.passages.items():
            known = self.passages.get(pid)
            if known is None:
                self.passages[pid] = (text, path, line)
            elif known[0] != text:
                raise InputError(
                    f"passage {pid!r} has another text than in {known[1]}:{known[2]}",
                    path=path,
                    line=line,
                    field="passage_id",
                    value=pid,
                    expected="one text per passage id across all files",
                )
        for qid, levels in part.judgments.items():
            merged = self.judgments.setdefault(qid, {})
            for pid, level in levels.items():
                merged[pid] = max(level, merged.get(pid, level))
        if not self.recorded:
            self.recorded = part.recorded  # the usual single graded file: no copying
        else:
            for key, grades in part.recorded.items():
                self.recorded.setdefault(key, []).extend(grades)
        for run_name, per_query in part.responses.items():
            self.responses.setdefault(run_name, {}).update(per_query)
        for run_name, answers in part.answers.items():
            self.answers.setdefault(run_name, {}).update(answers)

    def referenced(self) -> set[str]:
        refs = {r.passage_id for run in self.runs.values() for ranked in run.rankings.values() for r in ranked}
        refs.update(pid for levels in self.judgments.values() for pid in levels)
        refs.update(pid for pid, _tid in self.recorded)
        # the segments cited answers reference: support evaluation reads their texts
        refs.update(ref for by_query in self.answers.values() for answer in by_query.values()
                    for ref in answer.references)
        return refs

    def check_missing(self) -> None:
        missing: list[tuple[str, str, str]] = []
        for name, run in self.runs.items():
            for qid, ranked in run.rankings.items():
                missing.extend((name, qid, r.passage_id) for r in ranked if r.passage_id not in self.passages)
        if not missing:
            return
        name, qid, docid = missing[0]
        path, _line = self.run_origin[name]
        line = find_run_line(path, name, qid, docid) if name in self.trec_runs else None
        more = f" (and {len(missing) - 1} more missing docids)" if len(missing) > 1 else ""
        raise InputError(
            f"run {name!r} ranks docid {docid!r} for query {qid!r}, which is in no loaded collection{more}",
            path=path,
            line=line,
            field="docid",
            value=docid,
            expected="every ranked docid in a collection file (collection.tsv, *.collection.jsonl) "
            "or a Workbench paragraph file among the run paths",
        )


def load_runs(paths: Sequence[Path], formats: Registry[RunFormat] | None = None,
              notify: Callable[[str], None] | None = None) -> LoadedRuns:
    """Read and merge every run-side file under ``paths`` (see the module docstring).

    Raises InputError for unrecognised files, a run name defined by two files, a passage id with two
    different texts, and (after all files are read) a ranked docid that no file gives a text for. The
    files' warnings are kept in :attr:`LoadedRuns.warnings` and each said through ``notify`` (default:
    a line on stderr).
    """
    with collector_paused():
        loaded = _load_runs(paths, formats or default_run_formats())
    if loaded.warnings:
        from exam_harness.core.display import print_notice

        for warning in loaded.warnings:
            (notify or print_notice)(f"warning: {warning}")
    return loaded


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the files are read (and while a report is built,
    report/build.py): both make lists, dicts, tuples and models by the hundred thousand without a cycle
    (DL19: ~240k the collector tracks), and its full passes over them found nothing and cost more than
    a third of reading and about half of validating a report's outcomes."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _load_runs(paths: Sequence[Path], formats: Registry[RunFormat]) -> LoadedRuns:
    files = run_files(paths)
    merger = _Merger()
    collections: list[tuple[Path, RunFormat]] = []
    for path in files:
        fmt = file_format(path, formats)
        if fmt.collection:
            collections.append((path, fmt))
        else:
            merger.add(fmt.read(path), isinstance(fmt, TrecRun))
    if collections:
        refs = merger.referenced() or None
        for path, fmt in collections:
            merger.add(fmt.read(path, keep=refs), False)
    merger.check_missing()
    passages = {pid: Passage(id=pid, text=text) for pid, (text, _path, _line) in merger.passages.items()}
    data = ExamData.model_construct(
        runs=merger.runs, passages=passages, judgments=merger.judgments, recorded=merger.recorded
    )
    return LoadedRuns(data=data, responses=merger.responses, files=files, answers=merger.answers,
                      warnings=merger.warnings)
