"""The TREC RAG feature's options, declared through ``pytest_exam_add_options`` (plugin.py): pytest's
``--exam-NAME`` and ini ``exam_NAME``, each subcommand of the group's ``--NAME`` (docs/options.md, docs/trec-rag.md)."""

from __future__ import annotations

from pathlib import Path

from exam_harness.api import FeatureOption, feature_option
from exam_harness.config.options import EVALUATE, INPUTS, SCORING

FIX: FeatureOption[bool] = feature_option(
    "trec-rag-fix", False, "Read TREC RAG answer files with the track checker's fixes applied (over-long answers "
    "trimmed from the end, out-of-range citations dropped, duplicate references merged) and say what changed "
    "on which line (default: read them as given; the track's errors refuse the file)", group=SCORING, flag=True)
TOPICS: FeatureOption[Path | None] = feature_option(
    "trec-rag-topics", None, "The track's topic file (2024: 'id<TAB>text' lines; 2025 and later: JSON lines "
    "{id, title}), which ragnarok's checkers require: TREC RAG answer files are checked against it as they "
    "check them (an unknown topic, a changed topic text and a reference that is no MS MARCO v2.1 segment id "
    "refuse a 2024 file; an unknown narrative_id refuses a 2025 file, a reference of another form is a "
    "warning there) (default: none, the topic rules are not applied)", Path, group=SCORING, path=True,
    metavar="FILE")
ASSIGNMENTS: FeatureOption[tuple[Path, ...]] = feature_option(
    "assignments", (), "TREC RAG nugget assignment file (nuggetizer's assign output, or assessors' files of its "
    "shape) read as recorded grades, as if it were among the runs, scored on the nuggets it assigned (evaluate: "
    "with no run files and no bank, the track's A, V and W, strict too, per run and topic); repeatable "
    "(default: none)", Path, group=INPUTS, many=True, nargs="+", path=True, metavar="FILE")
HUMAN: FeatureOption[Path | None] = feature_option(
    "human-assignments", None, "Human nugget assignments (nuggetizer's shape: {run_id, qid, nuggets: [{text, "
    "assignment}]}) to measure the grader's TREC RAG assignments against: confusion and Cohen's kappa "
    "(default: none)", Path, group=EVALUATE, path=True, fronts=("cli",), metavar="ASSIGNMENTS_JSONL")
TRACK_DIR: FeatureOption[Path | None] = feature_option(
    "trec-rag-dir", None, "With --assignments: write per run <run>.metrics.jsonl and <run>.assignments.jsonl as "
    "nuggetizer writes them, and the per-topic table (trec-rag-per-topic.csv, .txt) here (default: none)", Path,
    group=EVALUATE, path=True, fronts=("cli",), metavar="DIR")

OPTIONS = (FIX, TOPICS, ASSIGNMENTS, HUMAN, TRACK_DIR)
