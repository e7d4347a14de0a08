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

Read as a run-side file (:func:`read_assignment_part`: a ``.jsonl`` among the runs whose first line is an
assignment), each line is the run's answer to the topic (its ``answer_text``, one passage) with each
nugget's label as a recorded grade (support 2, partial_support 1, anything else 0; grading run
:data:`RECORDED_LLM` / :data:`RECORDED_PROMPT_CLASS`): ``--grader recorded`` (the default on such files)
replays them, and the track's scores come out of either front end with no grader, over the nugget file
given as the bank.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, check_run_name, check_word
from exam_harness.io.textio import iter_json_lines

if TYPE_CHECKING:
    from exam_harness.core.models import QueryBank

LABELS = ("support", "partial_support", "not_support")
LABEL_GRADES = {"support": 2, "partial_support": 1, "not_support": 0}
RECORDED_LLM = "assignment-file"
RECORDED_PROMPT_CLASS = "NuggetizerAssignment"  # an assignment prompt class: the track's scores read these grades
# run -> topic -> (nugget text, importance, label) per nugget in file order
Assigned = dict[str, dict[str, list[tuple[str, str, str]]]]


@dataclass
class AssignmentSet:
    """The labels of one or more assignment files, the warnings they raise and where each (run, topic) was read."""

    labels: Assigned = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    origin: dict[tuple[str, str], tuple[Path, int]] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)  # topic -> the query text of its first line

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
        if (why := check_run_name(run, "run_id")) is not None:  # the writers name files after it
            raise fail(why, "run_id", run, "the run's id, a plain name (default: the file's stem)")
        key = (str(run), str(qid))
        if key in found.origin:
            first, first_line = found.origin[key]
            raise fail(f"a second assignment of run {quoted(run)} to topic {quoted(qid)} "
                       f"(first at {first}:{first_line})", "qid", qid, "one line per run and topic")
        found.origin[key] = (path, lineno)
        query = record.get("query", "")
        if not isinstance(query, str):
            raise fail("query must be a string", "query", quoted(query), "the topic's query text")
        found.queries.setdefault(key[1], query)
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


def assignment_banks(paths: Iterable[Path]) -> list[QueryBank]:
    """The nuggets the files assigned, as one nugget bank per topic: its lines' nuggets (text and importance,
    in file order, every copy of a repeated text; ids by the nugget file's rule), each line's labels then
    being recorded grades of exactly these nuggets. The lines of one topic must list the same nuggets (as
    nuggetizer's assign step writes them from one nugget file): a pytest session and the evaluation document
    hold one nugget list per topic, so a line that lists others is an input error naming both lines."""
    from exam_harness.core.models import Query, QueryBank, TestPoint, test_point_id
    from exam_harness.features.trec_rag.nuggets import nugget_weight
    from exam_harness.io.parts import model_errors

    found = read_assignment_files(paths)
    first: dict[str, tuple[str, str]] = {}  # topic -> the (run, topic) whose line gives its nuggets
    banks: list[QueryBank] = []
    for (run, qid), (path, lineno) in found.origin.items():
        nuggets = [(text, importance) for text, importance, _label in found.labels[run][qid]]
        if qid in first:
            other = first[qid]
            theirs = [(text, importance) for text, importance, _label in found.labels[other[0]][other[1]]]
            if nuggets != theirs:
                at = next((i for i, (a, b) in enumerate(zip(nuggets, theirs)) if a != b),
                          min(len(nuggets), len(theirs)))
                first_path, first_line = found.origin[other]
                raise InputError(
                    f"topic {quoted(qid)} lists other nuggets than at {first_path}:{first_line} (from nuggets[{at}] "
                    "on): the files' nuggets are scored, one list per topic", path=path, line=lineno,
                    field=f"nuggets[{at}]", expected="the same nuggets (text, importance) in every line of a topic, "
                    "as nuggetizer's assign writes them from one nugget file")
            continue
        first[qid] = (run, qid)
        if not nuggets:
            continue  # nothing was assigned: nothing to score (as a nugget file's topic without nuggets)
        points: list[TestPoint] = []
        seen: dict[str, int] = {}
        with model_errors(path, lineno, "nuggets"):
            for text, importance in nuggets:
                base = test_point_id(qid, text)
                seen[base] = seen.get(base, 0) + 1
                tid = base if seen[base] == 1 else f"{base}~{seen[base]}"  # the nugget file's rule for repeats
                points.append(TestPoint(id=tid, query_id=qid, kind="nugget", text=text,
                                        weight=nugget_weight(importance), importance=importance))
            banks.append(QueryBank(query=Query(id=qid, text=found.queries.get(qid) or qid), test_points=tuple(points),
                                   source=str(path)))
    return banks


def is_assignment_record(value: object) -> bool:
    """Whether a JSON line is a nugget assignment (``qid`` and nuggets that carry an ``assignment``)."""
    if not isinstance(value, dict) or "qid" not in value or not isinstance(value.get("nuggets"), list):
        return False
    nuggets = value["nuggets"]
    return bool(nuggets) and isinstance(nuggets[0], dict) and "assignment" in nuggets[0]


def check_assignment_file(path: Path) -> None:
    """Raise InputError unless ``path`` is an assignment file (its first line an assignment): a file named
    as one is never read as another kind of run file."""
    from exam_harness.io.textio import first_json_line

    if not path.exists():  # a FIFO or device exists: first_json_line's regular-file check names it
        raise InputError("assignment file not found", path=path, expected="an existing nugget assignment file")
    if not is_assignment_record(first_json_line(path)):
        raise InputError("not a nugget assignment file", path=path, line=1, field="nuggets",
                         expected='{"qid", "nuggets": [{"text", "importance", "assignment"}]} per line')


def read_assignment_part(path: Path) -> FilePart:
    """An assignment file as run-side content: per line the run's answer (one passage ranked first) and
    each nugget's label as a recorded grade of that passage."""
    from exam_harness.core.models import RankedPassage, RecordedGrade, Run, test_point_id
    from exam_harness.features.trec_rag.answers import answer_passage_id
    from exam_harness.io.parts import model_errors

    found = AssignmentSet()
    _read_one(path, found)
    part = FilePart(path=path, warnings=list(found.warnings))
    rankings: dict[str, dict[str, list[RankedPassage]]] = {}
    texts = _answer_texts(path)
    for (run, qid), (_path, lineno) in found.origin.items():
        part.run_lines.setdefault(run, lineno)
        ranked = rankings.setdefault(run, {}).setdefault(qid, [])
        text = texts.get(lineno, "")
        part.responses.setdefault(run, {})[qid] = text
        if not text.strip():
            continue  # an empty answer ranks nothing: every nugget is missed
        # one passage per run's answer, even where two runs wrote the same text: each run's labels are its own
        pid = "asg-" + answer_passage_id(f"{run}\x00{text}")[len("rag-"):]
        part.passages.setdefault(pid, (text, lineno))
        ranked.append(RankedPassage(passage_id=pid, rank=1, score=0.0))
        seen: dict[str, int] = {}
        for nugget_text, _importance, label in found.labels[run][qid]:
            base = test_point_id(qid, nugget_text)
            seen[base] = seen.get(base, 0) + 1
            tid = base if seen[base] == 1 else f"{base}~{seen[base]}"  # the nugget file's rule for repeats
            grade = RecordedGrade(test_point_id=tid, grade=LABEL_GRADES.get(label, 0), answer=label,
                                  llm=RECORDED_LLM, prompt_class=RECORDED_PROMPT_CLASS)
            part.recorded.setdefault((pid, tid), []).append(grade)
    for run, per_query in rankings.items():
        with model_errors(path, part.run_lines[run], "run"):
            part.runs[run] = Run(name=run, rankings=per_query, generated=True, source=str(path))
    return part


def _answer_texts(path: Path) -> dict[int, str]:
    """line -> the line's ``answer_text`` (nuggetizer writes the answer's sentences joined by spaces)."""
    out: dict[int, str] = {}
    for lineno, record in iter_json_lines(path):
        text = record.get("answer_text") if isinstance(record, dict) else None
        if text is not None and not isinstance(text, str):
            raise InputError("answer_text must be a string", path=path, line=lineno, field="answer_text",
                             value=quoted(text), expected="the assessed answer's text")
        out[lineno] = text or ""
    return out
