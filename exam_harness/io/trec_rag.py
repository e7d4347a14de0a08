"""TREC RAG answer files (2024 and 2025 formats): read as generated runs, written back.

2024, one JSON object per line and topic::

    {"run_id", "topic_id", "topic", "references": [segment id, ...], "response_length",
     "answer": [{"text", "citations": [index into references, ...]}, ...]}

2025: ``{"metadata": {"team_id", "run_id", "type": "automatic"|"manual", "narrative_id", "narrative",
"prompt"?}, "references": [...], "answer": [{"text", "citations"}]}``, where a citation is an index into
``references`` or a segment id among them.

Each line becomes one answer of run ``run_id``: the sentences joined by spaces are one passage (id
``rag-<md5 of the text, 16 hex digits>``) ranked first for the topic, and the full response nugget F
measures; the sentences and their citations are kept as :class:`~exam_harness.answers.CitedAnswer`.
The track's validator rules are input errors naming the file, line and rule: at most
:data:`MAX_WORDS` words (NFKC, split on whitespace), at most :data:`MAX_REFERENCES` references,
citations that resolve, and a 2025 ``type`` among :data:`RUN_TYPES`. Topic ids are read as strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from exam_harness.answers import CitedAnswer, CitedSentence
from exam_harness.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, check_word, model_errors
from exam_harness.io.textio import atomic_write_text, iter_json_lines
from exam_harness.models import RankedPassage, Run

MAX_WORDS = 400
MAX_REFERENCES = 100
RUN_TYPES = ("automatic", "manual")
FORMATS = ("2024", "2025")


def is_rag_answer_record(value: Any) -> bool:
    """Whether a JSON line looks like a TREC RAG answer (its ``answer`` is a list of sentences)."""
    return (isinstance(value, dict) and isinstance(value.get("answer"), list)
            and ("run_id" in value or "metadata" in value))


def answer_passage_id(text: str) -> str:
    return "rag-" + hashlib.md5(text.encode("utf-8")).hexdigest()[:16]


def _id_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class _Line:
    def __init__(self, path: Path, lineno: int) -> None:
        self.path, self.lineno = path, lineno

    def fail(self, message: str, field: str, value: object = None, expected: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.lineno, field=field, value=value, expected=expected)

    def word(self, value: Any, field: str, what: str) -> str:
        value = _id_text(value)
        if (why := check_word(value, what)) is not None:
            raise self.fail(why, field, value, f"a {what} without whitespace")
        return str(value)


def _parse(record: Any, line: _Line) -> CitedAnswer:
    if not isinstance(record, dict):
        raise line.fail("a TREC RAG answer line must be a JSON object", "line", type(record).__name__,
                        '{"run_id", "topic_id", "references", "answer"} (2024) or {"metadata", ...} (2025)')
    metadata: dict[str, Any] = {}
    if "metadata" in record:  # 2025
        meta = record["metadata"]
        if not isinstance(meta, dict):
            raise line.fail("metadata must be an object", "metadata", quoted(meta),
                            '{"team_id", "run_id", "type", "narrative_id", "narrative"}')
        run = line.word(meta.get("run_id"), "metadata.run_id", "run_id")
        qid = line.word(meta.get("narrative_id"), "metadata.narrative_id", "narrative_id")
        kind = meta.get("type")
        if kind not in RUN_TYPES:
            raise line.fail("unknown run type", "metadata.type", kind, " or ".join(map(repr, RUN_TYPES)))
        query = meta.get("narrative", "")
        metadata = {key: value for key, value in meta.items() if key not in ("run_id", "narrative_id")}
        metadata["format"] = "2025"
    else:  # 2024
        run = line.word(record.get("run_id"), "run_id", "run_id")
        qid = line.word(record.get("topic_id"), "topic_id", "topic_id")
        query = record.get("topic", "")
        metadata = {"format": "2024"}
    if not isinstance(query, str):
        raise line.fail("the topic text must be a string", "topic", quoted(query), "the query text")
    # a 2024 citation is an index into references only; 2025 also takes a reference's segment id
    refs, sentences = _cited(record, line, MAX_REFERENCES, by_id=metadata["format"] == "2025")
    answer = CitedAnswer(run=run, query_id=qid, query=query, references=refs, sentences=sentences,
                         metadata=metadata)
    words = answer.words
    if words > MAX_WORDS:
        raise line.fail(f"answer of {words} words is longer than {MAX_WORDS}", "answer", words,
                        f"at most {MAX_WORDS} words (NFKC-normalised text split on whitespace; the track's rule)")
    return answer


def _cited(record: dict[str, Any], line: _Line, most: int | None,
           by_id: bool = True) -> tuple[tuple[str, ...], tuple[CitedSentence, ...]]:
    """The references and the cited sentences of a line (``most``: the references allowed; None: any;
    ``by_id``: a citation may be a reference's segment id as well as an index)."""
    references = record.get("references", [])
    if not isinstance(references, list):
        raise line.fail("references must be a list of segment ids", "references", quoted(references), "a list")
    if most is not None and len(references) > most:
        raise line.fail(f"more than {most} references ({len(references)})", "references",
                        len(references), f"at most {most} references (the track's rule)")
    refs = tuple(line.word(ref, f"references[{i}]", "segment id") for i, ref in enumerate(references))
    index_of = {ref: i for i, ref in reversed(list(enumerate(refs)))}
    return refs, tuple(_sentence(s, i, refs, index_of if by_id else {}, line) for i, s in enumerate(record["answer"]))


def cited_response(record: dict[str, Any], path: Path, lineno: int, run: str, query_id: str) -> CitedAnswer:
    """The cited answer of a generated-response line that also holds ``references`` and ``answer``
    sentences (a live system's :class:`~exam_harness.systems.declare.Answer` as its recording writes it):
    read as a TREC RAG answer's, without the track's limits on words and references, which bind only
    track submissions."""
    refs, sentences = _cited(record, _Line(path, lineno), None)
    return CitedAnswer(run=run, query_id=query_id, query="", references=refs, sentences=sentences)


def _sentence(value: Any, index: int, refs: Sequence[str], index_of: dict[str, int], line: _Line) -> CitedSentence:
    where = f"answer[{index}]"
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise line.fail("a sentence must be an object with a text", where, quoted(value), '{"text", "citations"}')
    citations = value.get("citations", [])
    if not isinstance(citations, list):
        raise line.fail("citations must be a list", f"{where}.citations", quoted(citations), "a list of indexes")
    resolved: list[int] = []
    for j, cite in enumerate(citations):
        field = f"{where}.citations[{j}]"
        if isinstance(cite, int) and not isinstance(cite, bool):
            if not 0 <= cite < len(refs):
                raise line.fail(f"citation index {cite} is out of range", field, cite,
                                f"an index into the {len(refs)} references (0..{len(refs) - 1})")
            resolved.append(cite)
        elif isinstance(cite, str) and cite in index_of:
            resolved.append(index_of[cite])
        elif isinstance(cite, str) and not index_of and cite in refs:
            raise line.fail("a 2024 citation is an index into references (a segment id is the 2025 form)", field,
                            quoted(cite), f"an index into the {len(refs)} references (0..{len(refs) - 1})")
        else:
            raise line.fail("citation is no reference of this answer", field, quoted(cite),
                            "an index into references or one of its segment ids")
    return CitedSentence(text=value["text"], citations=tuple(resolved))


def read_rag_answers(path: Path) -> FilePart:
    """Read a TREC RAG answer file (either format, line by line) into runs, passages and answers."""
    part = FilePart(path=path)
    rankings: dict[str, dict[str, list[RankedPassage]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, record in iter_json_lines(path):
        line = _Line(path, lineno)
        answer = _parse(record, line)
        key = (answer.run, answer.query_id)
        if key in seen:
            raise line.fail(f"run {quoted(answer.run)} has a second answer for topic {quoted(answer.query_id)} "
                            f"(first at line {seen[key]})", "topic_id", answer.query_id, "one answer per run and topic")
        seen[key] = lineno
        text = answer.text
        part.run_lines.setdefault(answer.run, lineno)
        part.answers.setdefault(answer.run, {})[answer.query_id] = answer
        part.responses.setdefault(answer.run, {})[answer.query_id] = text
        ranked = rankings.setdefault(answer.run, {}).setdefault(answer.query_id, [])
        if text:  # an empty answer ranks nothing: it covers no nugget
            pid = answer_passage_id(text)
            part.passages.setdefault(pid, (text, lineno))
            ranked.append(RankedPassage(passage_id=pid, rank=1, score=0.0))
    if not seen:
        raise InputError("TREC RAG answer file is empty", path=path, expected="one answer object per line")
    for run, per_query in rankings.items():
        with model_errors(path, part.run_lines[run], "run"):
            part.runs[run] = Run(name=run, rankings=per_query, generated=True, source=str(path))
    return part


# --- writing ------------------------------------------------------------------------------------


def answer_record(answer: CitedAnswer, fmt: str) -> dict[str, Any]:
    """One answer as a line of the 2024 or 2025 format."""
    sentences = [{"text": s.text, "citations": list(s.citations)} for s in answer.sentences]
    if fmt == "2024":
        return {"run_id": answer.run, "topic_id": answer.query_id, "topic": answer.query,
                "references": list(answer.references), "response_length": answer.words, "answer": sentences}
    if fmt == "2025":
        meta = {key: value for key, value in answer.metadata.items() if key != "format"}
        meta.setdefault("team_id", answer.run)
        meta.setdefault("type", "automatic")
        meta.setdefault("narrative", answer.query)
        ordered = {"team_id": meta.pop("team_id"), "run_id": answer.run, "type": meta.pop("type"),
                   "narrative_id": answer.query_id, "narrative": meta.pop("narrative"), **meta}
        return {"metadata": ordered, "references": list(answer.references), "answer": sentences}
    raise ValueError(f"unknown TREC RAG format {fmt!r}; one of {', '.join(FORMATS)}")


def write_rag_answers(path: Path, answers: Iterable[CitedAnswer], fmt: str = "2024") -> None:
    """Write ``answers`` as a TREC RAG answer file of format ``fmt`` (atomically)."""
    lines = [json.dumps(answer_record(a, fmt), ensure_ascii=False) for a in answers]
    atomic_write_text(Path(path), "".join(line + "\n" for line in lines))
