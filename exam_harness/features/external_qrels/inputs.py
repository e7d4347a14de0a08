"""The external qrels feature's scoring input: the qrels files ``evaluate``'s options name, read and checked
before any grading (a bad line stops the command naming the file and line)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from exam_harness.api import ConfigError, ExamOptions, InputError, InputKey
from exam_harness.features.external_qrels.options import LEVELS, OFFICIAL, QRELS, TRACK_2025
from exam_harness.io.qrels import Qrels

NO_TREC_MEASURE = ("--qrels scores the runs by trec_eval measures, and --measures names none "
                   "(add one, e.g. --measures ndcg@10)")
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
    if not options.feature(TRACK_2025) and not _names_a_trec_measure(options.measures):
        raise ConfigError(NO_TREC_MEASURE)
    levels = tuple(dict.fromkeys(given_levels or (1,)))
    if any(level < 1 for level in levels):
        raise ConfigError(f"--qrels-level takes levels >= 1 (at level 0 every judged passage, label 0 too, would "
                          f"count as relevant), got {min(levels)}")
    return QrelsRequest(
        files={str(path): _read_qrels(path) for path in files},
        official=_read_qrels(official_file) if official_file is not None else None,
        official_file=str(official_file) if official_file is not None else None,
        levels=levels, track_2025=options.feature(TRACK_2025), per_query=options.per_query)


def _names_a_trec_measure(names: tuple[str, ...]) -> bool:
    """Whether ``--measures`` may name a trec_eval measure, told before any grading. A name no measure parses
    counts as may: the plan refuses it with its own message."""
    from exam_harness.measures.parsing import parse_measure
    from exam_harness.measures.trec import TrecMeasure

    for name in names:
        try:
            if isinstance(parse_measure(name), TrecMeasure):
                return True
        except ConfigError:
            return True
    return False


def _read_qrels(path: Path) -> Qrels:
    from exam_harness.io.qrels import read_qrels

    qrels = read_qrels(path)
    if not qrels:
        raise InputError("the qrels file holds no judgments", path=path, line=1,
                         expected="'query_id iteration passage_id label' lines")
    return qrels
