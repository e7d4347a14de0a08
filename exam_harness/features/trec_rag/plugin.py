"""The TREC RAG feature's hook implementations: its formats, measures, sections, writers, options, inputs and the
files of ``--trec-rag-dir``.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py). Sections
and writers keep the places documents and report sets have always shown them in (``before=``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from pathlib import Path

    from exam_harness.api import (
        BankFormat,
        ExamOptions,
        FeatureOptions,
        Measure,
        Registry,
        RunFormat,
        ScoringFront,
        ScoringInputs,
        Section,
        Writer,
        WriterInput,
    )
    from exam_harness.core.models import GraderSpec
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.measures.context import ScoringInput

_HERE = "exam_harness.features.trec_rag"
MEASURES = (
    ("a", "All", "TREC RAG all score: nugget credit (support 1, partial 0.5) / nuggets"),
    ("a_strict", "AllStrict", "TREC RAG strict all score (support only)"),
    ("v", "Vital", "TREC RAG vital score: credit over the vital nuggets"),
    ("v_strict", "VitalStrict", "TREC RAG strict vital score"),
    ("w", "Weighted", "TREC RAG weighted score: vital 1, okay 0.5"),
    ("w_strict", "WeightedStrict", "TREC RAG strict weighted score"),
    ("response-words", "ResponseWords", "words per answer (NFKC, whitespace split)"),
)


@hookimpl(tryfirst=True)
def pytest_exam_register_bank_formats(registry: Registry[BankFormat]) -> None:
    registry.register("nuggetizer", f"{_HERE}.formats:NUGGET_FILES",
                      "nuggetizer nugget JSON lines (.jsonl, .jsonl.gz; first line {qid, query, nuggets})")


@hookimpl(tryfirst=True)
def pytest_exam_register_run_formats(registry: Registry[RunFormat]) -> None:
    registry.register("trec-rag", f"{_HERE}.formats:TRACK_FILES",
                      "*.jsonl whose first line is a TREC RAG answer (2024/2025; any other name too) or a nugget "
                      "assignment (nuggetizer's assign output)")


@hookimpl(tryfirst=True)
def pytest_exam_register_measures(registry: Registry[type[Measure]]) -> None:
    for name, attr, description in MEASURES:
        registry.register(name, f"{_HERE}.measures:{attr}", description)


@hookimpl(tryfirst=True)
def pytest_exam_planned_measures(exam: ScoringInput, grader: GraderSpec) -> list[Measure] | None:
    # the track's scores where nuggets carry an importance (a nuggetizer nugget file) and the grades are nugget
    # assignments: over any other grade they would name a value the track never computes
    if not exam.importance:
        return None
    from exam_harness.features.trec_rag.measures import TRACK_MEASURES, scores_the_track

    return [kind() for kind in TRACK_MEASURES] if scores_the_track(grader) else None


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register("trec-rag", f"{_HERE}.section:SECTION",
                      "each run's TREC RAG nugget assignments where nuggets carry an importance (docs/trec-rag.md)",
                      before="cost")
    registry.register("trec-rag-agreement", f"{_HERE}.agreement_section:SECTION",
                      "the grader's TREC RAG nugget assignments against human ones (--human-assignments)")


@hookimpl(tryfirst=True)
def pytest_exam_register_reporters(registry: Registry[Writer]) -> None:
    registry.register("trec-rag", f"{_HERE}.writers:WRITER",
                      "trec-rag-metrics.jsonl, trec-rag-assignments.jsonl, per run trec-rag-<run>.metrics.jsonl and "
                      "trec-rag-<run>.assignments.jsonl, trec-rag-per-topic.csv/.txt: where the track's scores are",
                      before="markdown")
    registry.register("trec-rag-judgments", f"{_HERE}.writers:JUDGMENTS_WRITER",
                      "trec-rag-judgments.tsv: a relevance grader's EXAM-Qrels in the six columns of the TREC 2025 "
                      "RAG relevance-judgment subtask", before="markdown")
    registry.register("trec-rag-answers", f"{_HERE}.writers:ANSWERS_WRITER",
                      "per run of cited answers, trec-rag-<run>.answers.jsonl: its answers in the TREC RAG 2025 "
                      "format, citations as segment ids", before="markdown")


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.trec_rag.options import OPTIONS

    for option in OPTIONS:
        options.add(option)


@hookimpl(tryfirst=True)
def pytest_exam_inputs(options: ExamOptions, front: ScoringFront, inputs: ExamInputs) -> None:
    from exam_harness.features.trec_rag.options import FIX, TOPICS
    from exam_harness.features.trec_rag.track_dir import supply_assignments

    fix, topics = options.feature(FIX), options.feature(TOPICS)
    if fix or topics is not None:
        from exam_harness.features.trec_rag.answers import read_track_topics
        from exam_harness.features.trec_rag.formats import configured

        inputs.run_formats = configured(inputs.run_formats, fix=fix,
                                        topics=None if topics is None else read_track_topics(topics))
    supply_assignments(options, front, inputs)


@hookimpl(tryfirst=True)
def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    from exam_harness.features.trec_rag.options import HUMAN

    path = options.feature(HUMAN)
    if front == "evaluate" and path is not None:
        from exam_harness.features.trec_rag.agreement import HUMAN_LABELS, load_human_assignments

        inputs.set(HUMAN_LABELS, load_human_assignments(path))  # read before any pair is graded


@hookimpl(tryfirst=True)
def pytest_exam_write_outputs(options: ExamOptions, out: WriterInput) -> list[Path] | None:
    from exam_harness.features.trec_rag.track_dir import write_track_dir

    return write_track_dir(options, out)
