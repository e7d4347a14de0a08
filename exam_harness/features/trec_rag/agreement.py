"""Agreement of the harness's nugget assignments with human ones (TREC RAG assessors').

The human file has nuggetizer's assignment shape, one JSON object per line and (run, topic)::

    {"run_id", "qid", "nuggets": [{"text", "assignment": "support"|"partial_support"|"not_support"}, ...]}

Each human label is paired with the harness's label of the same (run, topic, nugget text) (see
measures.py for how grades become labels). The result: the confusion table (harness label x human
label), Cohen's kappa over the three labels, each label's one-vs-rest kappa, the share of agreeing pairs,
and how many human labels found no harness label (a run, topic or nugget the exam did not hold).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel

from exam_harness.api import InputKey
from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import check_word
from exam_harness.io.textio import iter_json_lines
from exam_harness.measures.kappa import cohen_kappa, finite, one_vs_rest

LABELS = ("support", "partial_support", "not_support")
HumanLabels = dict[tuple[str, str, str], str]  # human nugget assignments: (run, qid, nugget text) -> label
HUMAN_LABELS: InputKey[HumanLabels] = InputKey("trec_rag: --human-assignments")  # the section's scoring input


class AssignmentAgreement(BaseModel):
    """The trec-rag-agreement section of the evaluation document."""

    pairs: int
    unmatched: int  # human labels without a harness label
    agreement: float | None  # share of pairs with the same label
    kappa: float | None  # Cohen's kappa over the three labels
    label_kappa: dict[str, float | None]  # each label against the other two
    confusion: dict[str, dict[str, int]]  # harness label -> human label -> count


def load_human_assignments(path: Path) -> HumanLabels:
    """Read a human assignment file; a malformed line, an unknown label or a nugget labelled twice for one
    (run, topic) is an InputError naming the line."""
    labels: HumanLabels = {}
    lines: dict[tuple[str, str, str], int] = {}
    for lineno, record in iter_json_lines(path):
        def fail(message: str, field: str, value: object = None, expected: str | None = None,
                 lineno: int = lineno) -> InputError:
            return InputError(message, path=path, line=lineno, field=field, value=value, expected=expected)

        if not isinstance(record, dict) or not isinstance(record.get("nuggets"), list):
            raise fail("a line must be an object with a nuggets list", "nuggets", None,
                       '{"run_id", "qid", "nuggets": [{"text", "assignment"}]}')
        ids = []
        for name in ("run_id", "qid"):
            value = record.get(name)
            value = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
            if (why := check_word(value, name)) is not None:
                raise fail(why, name, value, f"the {name} of the assessed answer")
            ids.append(str(value))
        run, qid = ids
        for i, nugget in enumerate(record["nuggets"]):
            where = f"nuggets[{i}]"
            if not isinstance(nugget, dict) or not isinstance(nugget.get("text"), str):
                raise fail("a nugget must be an object with a text", where, quoted(nugget), '{"text", "assignment"}')
            label = nugget.get("assignment")
            if label not in LABELS:
                raise fail("unknown assignment label", f"{where}.assignment", label, " or ".join(LABELS))
            key = (run, qid, nugget["text"])
            if key in lines:
                raise fail(f"nugget {quoted(nugget['text'])} is labelled twice for run {run!r}, topic {qid!r} "
                           f"(first at line {lines[key]})", f"{where}.text", None, "one label per nugget")
            lines[key] = lineno
            labels[key] = label
    if not labels:
        raise InputError("the human assignment file holds no labels", path=path, expected="one object per line")
    return labels


def assignment_agreement(machine: Iterable[tuple[str, str, str, str]], human: Mapping[tuple[str, str, str], str]
                         ) -> AssignmentAgreement:
    """``machine``: (run, qid, nugget text, label) of the harness's assignments."""
    index = {label: i for i, label in enumerate(LABELS)}
    table: dict[int, dict[int, int]] = {i: dict.fromkeys(range(len(LABELS)), 0) for i in range(len(LABELS))}
    matched = 0
    for run, qid, text, label in machine:
        theirs = human.get((run, qid, text))
        if theirs is None:
            continue
        table[index[label]][index[theirs]] += 1
        matched += 1
    same = sum(table[i][i] for i in table)
    return AssignmentAgreement(
        pairs=matched, unmatched=len(human) - matched,
        agreement=same / matched if matched else None,
        kappa=finite(cohen_kappa(table)),
        label_kappa={label: finite(cohen_kappa(one_vs_rest(table, {i}, {i}))) for label, i in index.items()},
        confusion={label: {other: table[i][j] for other, j in index.items()} for label, i in index.items()},
    )
