"""The external qrels feature's scoring input: the qrels files ``evaluate``'s options name, read and checked
before any grading (a bad line stops the command naming the file and line)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from exam_harness.api import ConfigError, ExamOptions, InputError, InputKey
from exam_harness.features.external_qrels.options import LEVELS, OFFICIAL, QRELS, TRACK_2025
from exam_harness.io.qrels import Qrels

OFFICIAL_FROM_JUDGMENTS = "judgments of the run files"  # the official qrels' name without --official-qrels


@dataclass(frozen=True)
class QrelsRequest:
    """The --qrels files (path -> qrels) at the --qrels-level levels, the --official-qrels file (``official_file``
    its name), the TREC 2025 RAG relevance evaluation asked for, and whether the leaderboards keep their per-query
    values (--per-query)."""

    files: dict[str, Qrels]
    official: Qrels | None
    official_file: str | None
    levels: tuple[int, ...]
    track_2025: bool
    per_query: bool


QRELS_REQUEST: InputKey[QrelsRequest] = InputKey("external qrels: --qrels / --official-qrels")


def qrels_request(options: ExamOptions) -> QrelsRequest | None:
    """What the options ask of the runs' leaderboards over qrels files (None: neither --qrels nor --official-qrels)."""
    files, official_file, given_levels = options.feature(QRELS), options.feature(OFFICIAL), options.feature(LEVELS)
    if options.feature(TRACK_2025) and not (files and official_file is not None):
        raise ConfigError("--trec-rag-2025-relevance scores the --qrels files (UMBRELA's) on the topics the "
                          "--official-qrels file (NIST's) judged: give both")
    if given_levels and not files:
        raise ConfigError("--qrels-level needs --qrels QRELS_FILE: the qrels files to score the runs over")
    if not files and official_file is None:
        return None
    levels = tuple(dict.fromkeys(given_levels or (1,)))
    if any(level < 1 for level in levels):
        raise ConfigError(f"--qrels-level takes levels >= 1 (at level 0 every judged passage, label 0 too, would "
                          f"count as relevant), got {min(levels)}")
    return QrelsRequest(
        files={str(path): _read_qrels(path) for path in files},
        official=_read_qrels(official_file) if official_file is not None else None,
        official_file=str(official_file) if official_file is not None else None,
        levels=levels, track_2025=options.feature(TRACK_2025), per_query=options.per_query)


def _read_qrels(path: Path) -> Qrels:
    from exam_harness.io.qrels import read_qrels

    qrels = read_qrels(path)
    if not qrels:
        raise InputError("the qrels file holds no judgments", path=path, line=1,
                         expected="'query_id iteration passage_id label' lines")
    return qrels
