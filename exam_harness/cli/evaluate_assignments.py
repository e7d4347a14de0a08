"""``exam-harness evaluate --assignments FILE ...``: the TREC RAG track's scores of recorded nugget
assignments (nuggetizer's assign output, assessors' files of its shape), with no run files and no bank.

The files are read as run-side files (each line a run's answer to a topic, its labels recorded grades:
``io/assignments.py``) and their own nuggets are the bank (:func:`~exam_harness.io.assignments.
assignment_banks`), so evaluate's one pipeline scores them and writes its one document, report set and
gates' input like any exam; ``--trec-rag-dir`` adds nuggetizer's per-run files under their plain names."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.core.errors import ConfigError

if TYPE_CHECKING:
    from exam_harness.core.models import QueryBank
    from exam_harness.report.writers import WriterInput


def assignment_inputs(args: argparse.Namespace) -> list[QueryBank]:
    """The banks of the assignment files (their nuggets), after the checks of what goes with --assignments."""
    from exam_harness.io.assignments import assignment_banks, check_assignment_file

    if args.runs:
        raise ConfigError("--assignments scores the assignment files alone; leave out the run files "
                          f"({', '.join(map(str, args.runs))}) or --assignments (put the files among the runs to "
                          "score them on a nugget file given with --bank)")
    if args.bank:
        raise ConfigError("--assignments scores the nuggets the files assigned; leave out --bank (put the files "
                          "among the runs to score them on the nugget file instead)")
    for path in args.assignments:
        check_assignment_file(path)
    return assignment_banks(args.assignments)


def write_track_dir(folder: Path, out: WriterInput) -> list[Path]:
    """``--trec-rag-dir``: per run ``<run>.metrics.jsonl`` and ``<run>.assignments.jsonl`` (nuggetizer's
    shapes) and ``trec-rag-per-topic.csv`` / ``.txt``, from the document's track scores and assignments."""
    from exam_harness.io.textio import atomic_write_text
    from exam_harness.report.trec_rag import track_files

    written = []
    for name, text in track_files(out).items():
        atomic_write_text(folder / name, text)
        written.append(folder / name)
    return written
