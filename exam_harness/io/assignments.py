"""nuggetizer assignment files (the output of its ``assign`` step, and assessors' files of the same shape)
read as recorded grades: each nugget's label for one run's answer to one topic.

One JSON object per line and (run, topic)::

    {"query", "qid", "answer_text", "response_length", "run_id",
     "nuggets": [{"text", "importance", "assignment"}, ...]}

Read with nuggetizer's semantics (castorini/nuggetizer ``core/metrics.py``, ``calculate_nugget_scores``):
the label is ``support``, ``partial_support`` or ``not_support``; any other label (an LLM's stray word)
is kept and earns nothing, and is said in one warning line per file. The run is the line's ``run_id``,
else the file's stem (nuggetizer's ``get_run_id`` names a run by its answer file's stem). The importance
is any word (only ``vital`` is vital); a missing one is ``vital``, as nuggetizer's create step reads it.
A malformed line, or a second line for one (run, topic), is an input error naming the line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import check_word
from exam_harness.io.textio import iter_json_lines

LABELS = ("support", "partial_support", "not_support")
# run -> topic -> (nugget text, importance, label) per nugget in file order
Assigned = dict[str, dict[str, list[tuple[str, str, str]]]]


@dataclass
class AssignmentSet:
    """The labels of one or more assignment files, the warnings they raise and where each (run, topic) was read."""

    labels: Assigned = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    origin: dict[tuple[str, str], tuple[Path, int]] = field(default_factory=dict)

    def importance_labels(self) -> dict[str, dict[str, list[tuple[str, str]]]]:
        """run -> topic -> (importance, label) per nugget: what the track's scores read."""
        return {run: {q: [(imp, label) for _text, imp, label in nuggets] for q, nuggets in by_topic.items()}
                for run, by_topic in self.labels.items()}

    def machine_rows(self) -> Iterable[tuple[str, str, str, str]]:
        """(run, topic, nugget text, label) of every nugget: one side of an agreement table."""
        for run, by_topic in self.labels.items():
            for q, nuggets in by_topic.items():
                for text, _imp, label in nuggets:
                    yield run, q, text, label


def _word(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def read_assignment_files(paths: Iterable[Path]) -> AssignmentSet:
    """Read every assignment file of ``paths`` into one :class:`AssignmentSet`."""
    found = AssignmentSet()
    for path in map(Path, paths):
        _read_one(path, found)
    if not found.labels:
        raise InputError("the assignment files hold no labels", path=", ".join(map(str, paths)),
                         expected='one {"qid", "run_id", "nuggets": [{"text", "importance", "assignment"}]} per line')
    return found


def _read_one(path: Path, found: AssignmentSet) -> None:
    odd: Counter[str] = Counter()
    odd_lines: list[int] = []
    for lineno, record in iter_json_lines(path):
        def fail(message: str, field: str, value: object = None, expected: str | None = None,
                 lineno: int = lineno) -> InputError:
            return InputError(message, path=path, line=lineno, field=field, value=value, expected=expected)

        if not isinstance(record, dict) or not isinstance(record.get("nuggets"), list):
            raise fail("an assignment line must be an object with a nuggets list", "nuggets", None,
                       '{"qid", "run_id", "nuggets": [{"text", "importance", "assignment"}]}')
        qid = _word(record.get("qid"))
        if (why := check_word(qid, "qid")) is not None:
            raise fail(why, "qid", qid, "the topic id")
        run = _word(record.get("run_id", path.name.split(".")[0] if path.name.endswith(".gz") else path.stem))
        if (why := check_word(run, "run_id")) is not None:
            raise fail(why, "run_id", run, "the run's id (default: the file's stem)")
        key = (str(run), str(qid))
        if key in found.origin:
            first, first_line = found.origin[key]
            raise fail(f"a second assignment of run {quoted(run)} to topic {quoted(qid)} "
                       f"(first at {first}:{first_line})", "qid", qid, "one line per run and topic")
        found.origin[key] = (path, lineno)
        nuggets: list[tuple[str, str, str]] = []
        for i, nugget in enumerate(record["nuggets"]):
            where = f"nuggets[{i}]"
            if not isinstance(nugget, dict) or not isinstance(nugget.get("text"), str):
                raise fail("a nugget must be an object with a text", where, quoted(nugget),
                           '{"text", "importance", "assignment"}')
            importance = nugget.get("importance", "vital")
            label = nugget.get("assignment")
            for name, value in (("importance", importance), ("assignment", label)):
                if not isinstance(value, str):
                    raise fail(f"a nugget's {name} must be a string", f"{where}.{name}", quoted(value),
                               " or ".join(LABELS) if name == "assignment" else "'vital' or 'okay'")
            assert isinstance(importance, str) and isinstance(label, str)
            if label not in LABELS:
                odd[label] += 1
                if not odd_lines or odd_lines[-1] != lineno:
                    odd_lines.append(lineno)
            nuggets.append((nugget["text"], importance, label))
        found.labels.setdefault(key[0], {})[key[1]] = nuggets
    if odd:
        words = ", ".join(f"{quoted(word)} x{n}" for word, n in sorted(odd.items()))
        found.warnings.append(f"{path}: {sum(odd.values())} nugget(s) with a label other than "
                              f"{'/'.join(LABELS)} ({words}; lines {', '.join(map(str, odd_lines[:10]))}): "
                              "each counts 0, as nuggetizer scores it")
