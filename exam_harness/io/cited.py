"""Cited answers as JSON lines hold them: ``references`` (segment ids) and ``answer`` sentences, each with its
``citations``, read by one set of rules wherever they come from (a TREC RAG answer file, a live system's recorded
answer, a generated response with citations).

:class:`Line` names the file and line of every error; :func:`sentences_of` and :func:`references_of` check the two
lists; :func:`resolve_citations` turns each sentence's citations into indexes into the references. What a reader
does with a citation it cannot resolve, and the warnings, are its own (:class:`CitationAccount`): the TREC RAG
reader applies the track checker's fixes and warns in its account (the TREC RAG feature);
:func:`cited_response` reads a generated response without the track's limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from exam_harness.core.answers import CitedAnswer, CitedSentence
from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.parts import check_run_name, check_word


def id_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class CitationAccount(Protocol):
    """What a reader keeps of the citations it resolves: ``fix`` drops an out-of-range one (else an error),
    ``fixed_line`` says so, ``warn`` notes a kind of oddity (``dup_citation``: one reference cited twice)."""

    @property
    def fix(self) -> bool: ...

    def warn(self, kind: str, lineno: int) -> None: ...

    def fixed_line(self, lineno: int, what: str) -> None: ...


@dataclass
class Unkept:
    """An account that applies no fix and keeps no warning."""

    fix: bool = False

    def warn(self, kind: str, lineno: int) -> None:
        pass

    def fixed_line(self, lineno: int, what: str) -> None:
        pass


class Line:
    def __init__(self, path: Path, lineno: int) -> None:
        self.path, self.lineno = path, lineno

    def fail(self, message: str, field: str, value: object = None, expected: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.lineno, field=field, value=value, expected=expected)

    def word(self, value: Any, field: str, what: str) -> str:
        value = id_text(value)
        if (why := check_word(value, what)) is not None:
            raise self.fail(why, field, value, f"a {what} without whitespace")
        return str(value)

    def run_name(self, value: Any, field: str) -> str:
        """A run_id: an id the writers name files after (``<run>.jsonl``), so a plain name, never a path."""
        value = id_text(value)
        if (why := check_run_name(value, "run_id")) is not None:
            raise self.fail(why, field, value, "a run_id: a plain name without whitespace or path separators")
        return str(value)


@dataclass
class Sentence:
    raw: dict[str, Any]
    text: str
    citations: list[Any]


def sentences_of(record: dict[str, Any], line: Line) -> list[Sentence]:
    answer = record.get("answer")
    if not isinstance(answer, list):
        raise line.fail("answer must be a list of sentences", "answer", quoted(answer), '[{"text", "citations"}]')
    out = []
    for i, value in enumerate(answer):
        where = f"answer[{i}]"
        if not isinstance(value, dict) or not isinstance(value.get("text"), str):
            raise line.fail("a sentence must be an object with a text", where, quoted(value), '{"text", "citations"}')
        if "citations" not in value:
            raise line.fail("a sentence without citations (an error in both years' tools)", f"{where}.citations",
                            None, 'a "citations" list, [] when the sentence cites nothing')
        if not isinstance(value["citations"], list):
            raise line.fail("citations must be a list", f"{where}.citations", quoted(value["citations"]), "a list")
        out.append(Sentence(value, value["text"], list(value["citations"])))
    return out


def references_of(record: dict[str, Any], line: Line) -> list[str]:
    references = record.get("references")
    if not isinstance(references, list):
        raise line.fail("references must be a list of segment ids", "references", quoted(references), "a list")
    return [line.word(ref, f"references[{i}]", "segment id") for i, ref in enumerate(references)]


def resolve_citations(sentences: list[Sentence], refs: list[str], line: Line, check: CitationAccount,
                      segment_ids: bool) -> list[CitedSentence]:
    """Each sentence's citations as indexes: out-of-range ones dropped with ``fix`` (else an error),
    repeated ones read once (a warning)."""
    index_of = {ref: i for i, ref in reversed(list(enumerate(refs)))}
    out = []
    for i, sentence in enumerate(sentences):
        resolved: list[int] = []
        dropped: list[Any] = []
        for j, cite in enumerate(sentence.citations):
            where = f"answer[{i}].citations[{j}]"
            if segment_ids and isinstance(cite, str):
                if cite in index_of:
                    resolved.append(index_of[cite])
                    continue
                if not check.fix:
                    raise line.fail("citation is no reference of this answer", where, quoted(cite),
                                    "one of the answer's references")
            elif is_index(cite):
                if 0 <= cite < len(refs):
                    resolved.append(cite)
                    continue
                if not check.fix:
                    raise line.fail(f"citation index {cite} is out of range", where, cite,
                                    f"an index into the {len(refs)} references (0..{len(refs) - 1})")
            elif not segment_ids and isinstance(cite, str) and cite in index_of:  # the 2025 form in a 2024 file
                raise line.fail("a 2024 citation is an index into references (a segment id is the 2025 form)", where,
                                quoted(cite), f"an index into the {len(refs)} references (0..{len(refs) - 1})")
            else:
                raise line.fail("citation is no reference of this answer", where, quoted(cite),
                                "a segment id among references" if segment_ids else "an index into references")
            dropped.append(cite)
        if dropped:
            check.fixed_line(line.lineno, f"answer[{i}]: dropped out-of-range citation(s) {dropped}")
        once = list(dict.fromkeys(resolved))
        if len(once) != len(resolved):
            check.warn("dup_citation", line.lineno)
        sentence.citations = [refs[c] for c in once] if segment_ids else once
        out.append(CitedSentence(text=sentence.text, citations=tuple(once)))
    return out


def cited_response(record: dict[str, Any], path: Path, lineno: int, run: str, query_id: str) -> CitedAnswer:
    """The cited answer of a generated-response line that also holds ``references`` and ``answer``
    sentences (a live system's :class:`~exam_harness.systems.declare.Answer` as its recording writes it):
    read as a TREC RAG answer's, without the track's limits on words and references, which bind only
    track submissions; citations are indexes or segment ids."""
    line = Line(path, lineno)
    refs = references_of({"references": record.get("references", [])}, line)
    answer = [{"citations": [], **s} if isinstance(s, dict) else s for s in record["answer"]]
    sentences = sentences_of({"answer": answer}, line)
    index_of = {ref: i for i, ref in reversed(list(enumerate(refs)))}
    for sentence in sentences:
        sentence.citations = [index_of.get(c, c) if isinstance(c, str) else c for c in sentence.citations]
    cited = resolve_citations(sentences, refs, line, Unkept(), segment_ids=False)
    return CitedAnswer(run=run, query_id=query_id, query="", references=tuple(refs), sentences=tuple(cited))
