"""trec_eval qrels files: ``query_id iteration passage_id label`` lines.

Written sorted by (query, passage) through the one atomic writer, so equal labels give equal bytes;
read back with the line of any bad entry named. The TREC 2025 RAG track's relevance-judgment subtask
takes six columns, ``topic_id Q0 segment_id judgment confidence run_id`` (TREC-RAG/trec-rag.github.io,
``docs/_posts/2025-06-27-2025-track-guidelines.md``, "Relevance Judgment Subtask", output format):
:func:`judgments_text` writes them and :func:`read_qrels` reads them too (the label is the judgment).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import line_columns
from exam_harness.io.textio import atomic_write_text, iter_lines

Qrels = dict[str, dict[str, int]]


def _check_id(value: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise InputError(f"{what} cannot be written to a qrels file", field=what, value=value,
                         expected="a non-empty id without whitespace")


def qrels_text(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """The qrels file content: ``qid 0 pid label`` lines sorted by (qid, pid)."""
    lines: list[str] = []
    for qid in sorted(qrels):
        _check_id(qid, "query_id")
        for pid in sorted(qrels[qid]):
            _check_id(pid, "passage_id")
            label = qrels[qid][pid]
            if isinstance(label, bool) or not isinstance(label, int):
                raise InputError(f"qrels label of passage {pid!r} for query {qid!r} is not an integer",
                                 field="label", value=label, expected="an int")
            lines.append(f"{qid} 0 {pid} {label}\n")
    return "".join(lines)


def judgments_text(qrels: Mapping[str, Mapping[str, int]], run_id: str,
                   confidence: Mapping[tuple[str, str], float] | None = None) -> str:
    """The relevance-judgment subtask's file: ``qid Q0 pid judgment confidence run_id`` lines sorted by
    (qid, pid); a pair without a ``confidence`` gets 1, as the guidelines ask where none applies."""
    _check_id(run_id, "run_id")
    lines: list[str] = []
    for line in qrels_text(qrels).splitlines():
        qid, _zero, pid, label = line.split()
        value = (confidence or {}).get((qid, pid), 1)
        lines.append(f"{qid} Q0 {pid} {label} {value:g} {run_id}\n")
    return "".join(lines)


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    """Write ``qrels`` atomically (see :func:`qrels_text`)."""
    path = Path(path)
    atomic_write_text(path, qrels_text(qrels))
    return path


def relevance_out_of_range(path: str | Path, line: int | None, field: str, label: int) -> InputError:
    """A relevance label past :data:`~exam_harness.io.limits.MAX_RELEVANCE_LABEL` (10**30 would overflow
    nDCG's gain and trec_eval's C int)."""
    bound = limits.MAX_RELEVANCE_LABEL
    return InputError("relevance label out of range", path=path, line=line, field=field, value=label,
                      expected=f"an integer in -{bound:,}..{bound:,} (limit MAX_RELEVANCE_LABEL)")


def read_qrels(path: str | Path) -> Qrels:
    """Read a trec qrels file (``qid iteration pid label``), or the relevance-judgment subtask's six columns
    (``qid Q0 pid judgment confidence run_id``: the judgment is the label); blank lines are skipped."""
    path = Path(path)
    qrels: Qrels = {}
    for lineno, line in iter_lines(path, "MAX_FIELDS_LINE_BYTES"):
        count = 6 if len(line.split()) == 6 else 4
        fields = line_columns(line, path, lineno, count, "field", "expected 4 fields, found {n}",
                              "'query_id iteration passage_id label' (or the relevance-judgment subtask's "
                              "'topic_id Q0 segment_id judgment confidence run_id')")
        if not fields:
            continue
        qid, _, pid, label_text = fields[:4]
        try:
            label = int(label_text)
        except ValueError:
            raise InputError("relevance label is not an integer", path=path, line=lineno, field="label",
                             value=label_text, expected="an integer such as 0, 1, 2") from None
        if abs(label) > limits.MAX_RELEVANCE_LABEL:
            raise relevance_out_of_range(path, lineno, "label", label)
        labels = qrels.setdefault(qid, {})
        if pid in labels:
            raise InputError(f"passage judged twice for query {quoted(qid)}", path=path, line=lineno,
                             field="passage_id", value=pid, expected="one line per (query, passage)")
        labels[pid] = label
    return qrels
