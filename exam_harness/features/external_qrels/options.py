"""The external qrels feature's options, declared through ``pytest_exam_add_options`` (plugin.py): ``evaluate``'s
``--qrels``, ``--qrels-level``, ``--official-qrels`` and ``--trec-rag-2025-relevance`` (docs/options.md)."""

from __future__ import annotations

from pathlib import Path

from exam_harness.api import FeatureOption, feature_option
from exam_harness.config.options import EVALUATE, integer

QRELS: FeatureOption[tuple[Path, ...]] = feature_option(
    "qrels", (), "Score the runs over these trec_eval qrels files (repeatable) with the --measures, one leaderboard "
    "per file and relevance level, correlated with --official; with official qrels, also per query (and drawn "
    "under --plot) (default: none)", Path, group=EVALUATE, many=True, nargs="+", fronts=("cli",),
    metavar="QRELS_FILE")
LEVELS: FeatureOption[tuple[int, ...]] = feature_option(
    "qrels-level", (), "Relevance levels of the --qrels files, one leaderboard each (default: 1, trec_eval's)",
    integer(0), group=EVALUATE, many=True, nargs="+", fronts=("cli",), metavar="LEVEL")
OFFICIAL: FeatureOption[Path | None] = feature_option(
    "official-qrels", None, "The official qrels (at --relevance-level) that per-query correlations compare with "
    "(default: the human judgments in the run files, if any)", Path, group=EVALUATE, fronts=("cli",),
    metavar="QRELS_FILE")
TRACK_2025: FeatureOption[bool] = feature_option(
    "trec-rag-2025-relevance", False, "The TREC 2025 RAG track's relevance evaluation: every run at nDCG@30 over "
    "the --qrels files (UMBRELA's qrels, or the exam's trec-rag-judgments.tsv) on the topics the --official-qrels "
    "file (NIST's) judged, beside the official qrels' own nDCG@30", group=EVALUATE, flag=True, fronts=("cli",))

OPTIONS = (QRELS, LEVELS, OFFICIAL, TRACK_2025)
