"""``--assignments FILE ...`` (pytest: ``--exam-assignments``): the TREC RAG track's scores of recorded nugget
assignments (nuggetizer's assign output, assessors' files of its shape); ``evaluate --trec-rag-dir``.

The files are supplied to the exam's inputs as run-side files (each line a run's answer to a topic, its labels
recorded grades: assignments.py) with their own nuggets as the banks of their topics
(:func:`~exam_harness.features.trec_rag.assignments.assignment_banks`), so either front end's one pipeline scores
them and writes its one document, report set and gates' input like any exam. ``evaluate`` scores them alone, with
no run files and no bank; ``--trec-rag-dir`` adds nuggetizer's per-run files under their plain names."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.core.errors import ConfigError

if TYPE_CHECKING:
    from exam_harness.api import ExamOptions, ScoringFront, WriterInput
    from exam_harness.exam.inputs import ExamInputs


def supply_assignments(options: ExamOptions, front: ScoringFront, inputs: ExamInputs) -> None:
    """The assignment files the options name, supplied to ``inputs`` with the nuggets they assigned; under
    ``evaluate`` after the checks of what goes with ``--assignments`` and ``--trec-rag-dir``."""
    from exam_harness.exam.inputs import SuppliedInputs
    from exam_harness.features.trec_rag.assignments import assignment_banks, check_assignment_file
    from exam_harness.features.trec_rag.options import ASSIGNMENTS, TRACK_DIR

    paths = options.feature(ASSIGNMENTS)
    option = "--exam-assignments" if front == "pytest" else "--assignments"
    if front == "evaluate":
        track_dir = options.feature(TRACK_DIR)
        if track_dir is not None:
            from exam_harness.results.preflight import check_writable

            check_writable([("--trec-rag-dir", track_dir, True)])
            if not paths:
                raise ConfigError("--trec-rag-dir writes what --assignments scores; without it the track's files "
                                  "come with the reports (trec-rag-*.jsonl)")
        if paths and inputs.given_runs:
            raise ConfigError("--assignments scores the assignment files alone; leave out the run files "
                              f"({', '.join(map(str, inputs.given_runs))}) or --assignments (put the files among the "
                              "runs to score them on a nugget file given with --bank)")
        if paths and inputs.given_banks:
            raise ConfigError("--assignments scores the nuggets the files assigned; leave out --bank (put the files "
                              "among the runs to score them on the nugget file instead)")
        for path in paths:
            check_assignment_file(path)
    if paths:
        inputs.supply(SuppliedInputs(option, tuple(paths), check_assignment_file, assignment_banks,
                                     f"the nuggets the {option} files assigned"))


def write_track_dir(options: ExamOptions, out: WriterInput) -> list[Path] | None:
    """``--trec-rag-dir``: per run ``<run>.metrics.jsonl`` and ``<run>.assignments.jsonl`` (nuggetizer's
    shapes) and ``trec-rag-per-topic.csv`` / ``.txt``, from the document's track scores and assignments."""
    from exam_harness.features.trec_rag.options import TRACK_DIR
    from exam_harness.features.trec_rag.writers import track_files
    from exam_harness.io.textio import atomic_write_text

    folder = options.feature(TRACK_DIR)
    if folder is None:
        return None
    written = []
    for name, text in track_files(out).items():
        atomic_write_text(folder / name, text)
        written.append(folder / name)
    return written
