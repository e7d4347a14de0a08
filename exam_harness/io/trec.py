"""TREC run files: ``qid Q0 docid rank score tag`` per line, whitespace separated.

The run name is the tag; a file with several tags holds several runs. Ranks are kept as given
(integers >= 0: some submitted runs start at 0).
"""

from __future__ import annotations

import math
from pathlib import Path

from exam_harness.core.errors import InputError
from exam_harness.core.models import RankedPassage, Run
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, line_columns, model_errors
from exam_harness.io.textio import iter_lines

COLUMNS = "qid Q0 docid rank score tag"


def read_trec_run(path: Path) -> FilePart:
    part = FilePart(path=path)
    rankings: dict[str, dict[str, list[RankedPassage]]] = {}
    # (run, query) -> docid -> line, to name both lines of a duplicate
    seen: dict[tuple[str, str], dict[str, int]] = {}
    for lineno, line in iter_lines(path, "MAX_FIELDS_LINE_BYTES"):
        cols = line_columns(line, path, lineno, 6, "column", "{n} columns",
                            f"6 whitespace-separated columns: {COLUMNS}")
        if not cols:
            continue
        qid, _q0, docid, rank_text, score_text, tag = cols
        try:
            rank = int(rank_text)
        except ValueError:
            rank = -1
        if rank < 0:
            raise InputError(
                "invalid rank", path=path, line=lineno, field="rank", value=rank_text, expected="an integer >= 0"
            )
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise InputError(
                "invalid score", path=path, line=lineno, field="score", value=score_text, expected="a finite number"
            )
        docs = seen.setdefault((tag, qid), {})
        if docid in docs:
            raise InputError(
                f"run {quoted(tag)} lists docid {quoted(docid)} twice for query {quoted(qid)} "
                f"(first at line {docs[docid]})",
                path=path,
                line=lineno,
                field="docid",
                value=docid,
                expected="each docid once per query and run",
            )
        docs[docid] = lineno
        if tag not in part.run_lines:
            part.run_lines[tag] = lineno
            rankings[tag] = {}
        rankings[tag].setdefault(qid, []).append(RankedPassage(passage_id=docid, rank=rank, score=score))
    if not rankings:
        # An empty run would silently vanish from the leaderboard and from --exam-fail-under.
        raise InputError("run file is empty: it has no ranking lines", path=path,
                         expected="lines 'qid Q0 docid rank score tag'")
    for tag, per_query in rankings.items():
        with model_errors(path, part.run_lines[tag], "run"):
            part.runs[tag] = Run(name=tag, rankings=per_query, source=str(path))
    return part


def find_run_line(path: Path, run: str, query_id: str, docid: str) -> int | None:
    """The line of ``path`` where ``run`` ranks ``docid`` for ``query_id`` (for error messages)."""
    for lineno, line in iter_lines(path, "MAX_FIELDS_LINE_BYTES"):
        cols = line.split()
        if len(cols) == 6 and cols[0] == query_id and cols[2] == docid and cols[5] == run:
            return lineno
    return None
