"""TREC RAG answer files (2024 and 2025 formats): read as generated runs, checked by the track's rules, written back
(the references and cited sentences by the one reading of cited answers, io/cited.py).

2024, one JSON object per line and topic::

    {"run_id", "topic_id", "topic", "references": [segment id, ...], "response_length",
     "answer": [{"text", "citations": [index into references, ...]}, ...]}

2025: ``{"metadata": {"team_id", "run_id", "type": "automatic"|"manual", "narrative_id", "narrative",
"prompt"?}, "references": [...], "answer": [{"text", "citations"}]}``, where the citations of a file are
all indexes into ``references`` (the validator's ``--format 1``) or all segment ids among them (``--format 2``).

Each line becomes one answer of run ``run_id``: the sentences joined by spaces are one passage (id
``rag-<md5 of the text, 16 hex digits>``) ranked first for the topic, and the full response nugget F
measures; the sentences and their citations are kept as :class:`~exam_harness.core.answers.CitedAnswer`.

The rules are the track's own, classified as its tools classify them (docs/trec-rag.md names each):
the 2024 checker (ragnarok ``scripts/rag24_validation.py``, ``check_rag24_run``) and the 2025 validator
(``scripts/rag25_validation.py``, ``validate_entry`` and its ``fix_*`` helpers). An *error* is an
:class:`InputError` naming file, line and field; a *warning* never refuses a file: each kind is said once
per file (:attr:`FilePart.warnings`), with the lines it concerns. With ``fix`` the checker's fixes are
applied as the file is read (over-long answers trimmed from the end, out-of-range citations dropped,
duplicate references merged, ``response_length`` set) and :attr:`FilePart.fixes` says what changed on
which line; :func:`fix_rag_file` gives the fixed file's text as the checker's ``.fixed`` file holds it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam_harness.core.answers import CitedAnswer, word_count
from exam_harness.core.errors import InputError
from exam_harness.core.ids import file_name
from exam_harness.core.models import RankedPassage, Run
from exam_harness.io.cited import Line as _Line
from exam_harness.io.cited import Sentence as _Sentence
from exam_harness.io.cited import is_index as _is_index
from exam_harness.io.cited import references_of as _references
from exam_harness.io.cited import resolve_citations as _resolve
from exam_harness.io.cited import sentences_of as _sentences
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, model_errors
from exam_harness.io.textio import atomic_write_text, iter_json_lines

MAX_WORDS = 400  # both years; 2024 warns (and its fix trims), 2025 checks only when fixing (--fix-length)
MAX_REFERENCES_2024 = 20  # 2024: an error
MAX_REFERENCES_2025 = 100  # 2025: no error; --fix-citations trims to it
RUN_TYPES = ("automatic", "manual")
FORMATS = ("2024", "2025")
FIELDS_2024 = ("run_id", "topic_id", "topic", "references", "response_length", "answer")
METADATA_KEYS_2025 = ("team_id", "run_id", "narrative_id")
# the MS MARCO v2.1 segment id, as both years' checkers match a reference (ragnarok scripts/rag24_validation.py
# and rag25_validation.py, MARCODOC): an error in 2024, a warning in 2025; applied with the track's topic file
MARCODOC = re.compile(r"^msmarco_v2\.1_doc_\d+_\d+#\d+_\d+$")

# warning kinds: key -> what one line per file says after "<n> line(s) ..."
WARNINGS = {
    "long": "hold an answer over 400 words (the 2024 checker warns and its fix trims sentences from the end; "
            "read as given unless --trec-rag-fix)",
    "long_fixed": "hold an answer over 400 words (the 2024 checker warns): trimmed from the end as its fix "
                  "does (--trec-rag-fix), each line's change said below",
    "length": "report a response_length other than the answer's words (the 2024 checker warns)",
    "long_reported": "report a response_length over 400 (the 2024 checker warns)",
    "dup_citation": "cite one reference twice in a sentence (the 2024 checker warns; read once)",
    "no_type": "lack the optional metadata.type (the 2025 validator warns)",
    "no_narrative": "lack the optional metadata.narrative (the 2025 validator warns)",
    "no_prompt": "lack the optional metadata.prompt (the 2025 validator warns)",
    "not_marcodoc": "hold a reference that is no MS MARCO v2.1 segment id (the 2025 validator warns: "
                    "rag25_validation.py, MARCODOC)",
}


def is_rag_answer_record(value: Any) -> bool:
    """Whether a JSON line looks like a TREC RAG answer (its ``answer`` is a list of sentences)."""
    return (isinstance(value, dict) and isinstance(value.get("answer"), list)
            and ("run_id" in value or "metadata" in value))


def answer_passage_id(text: str) -> str:
    return "rag-" + hashlib.md5(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class TrackTopics:
    """The track's topic file, which ragnarok's checkers require (``-f`` / ``--topics``): topic id -> text."""

    path: Path
    texts: tuple[tuple[str, str], ...]

    def text_of(self) -> dict[str, str]:
        return dict(self.texts)


def read_track_topics(path: Path) -> TrackTopics:
    """A topic file as ragnarok's checkers read one: 2024 ``id<TAB>text`` lines (rag24_validation.py,
    ``load_topics``), 2025 and later JSON lines with ``id`` and ``title`` (rag25_validation.py,
    ``load_topic_ids``; its topic id is ``str(id)``). A line of neither shape is an input error naming it
    (the 2024 checker stops on it; the 2025 validator skips it with a message)."""
    from exam_harness.io.textio import check_json_depth, iter_lines, number_too_long

    texts: dict[str, str] = {}
    for lineno, raw in iter_lines(Path(path)):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            check_json_depth(line, path, lineno)  # json.loads recurses: the depth is bounded first
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not a JSON object ({exc.msg})", path=path, line=lineno,
                                 expected='{"id", "title"} (2025) or id<TAB>text (2024)') from None
            except ValueError:  # an integer of more digits than Python converts
                raise number_too_long(path, lineno) from None
            if not isinstance(record, dict) or "id" not in record or not isinstance(record.get("title"), str):
                raise InputError("a topic line needs an id and a title", path=path, line=lineno,
                                 field="title" if isinstance(record, dict) and "id" in record else "id",
                                 expected='{"id", "title"} (rag25_validation.py, load_topic_ids)')
            topic, text = str(record["id"]), record["title"]
        else:
            parts = line.split("\t")
            if len(parts) != 2:
                raise InputError("a topic line is id<TAB>text", path=path, line=lineno, field="line",
                                 value=quoted(line), expected="one tab (rag24_validation.py, load_topics)")
            topic, text = parts
        texts[topic] = text
    if not texts:
        raise InputError("the topic file holds no topic", path=path, line=1,
                         expected="id<TAB>text lines (2024) or {\"id\", \"title\"} lines (2025)")
    return TrackTopics(Path(path), tuple(texts.items()))


@dataclass
class RagFileCheck:
    """The account of one answer file: warnings by kind (their lines), fixes per line, the fixed records."""

    path: Path
    fix: bool = False
    warned: dict[str, list[int]] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    run_tag: str | None = None  # 2024: the first line's run_id (another one is an error)
    citation_kind: tuple[str, int] | None = None  # 2025: ("index" | "segment id", first line)
    topics: TrackTopics | None = None  # the track's topic file: its rules apply (--trec-rag-topics)
    answered: set[str] = field(default_factory=set)  # 2024 topics answered, for the topic file's missing ones

    def warn(self, kind: str, lineno: int) -> None:
        lines = self.warned.setdefault(kind, [])
        if not lines or lines[-1] != lineno:
            lines.append(lineno)

    def fixed_line(self, lineno: int, what: str) -> None:
        self.fixes.append(f"{self.path}:{lineno}: {what}")

    @property
    def warnings(self) -> list[str]:
        """One line per kind of warning."""
        out = []
        for kind, lines in self.warned.items():
            shown = ", ".join(map(str, lines[:10])) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")
            out.append(f"{self.path}: {len(lines)} line(s) {WARNINGS[kind]}: line {shown}")
        return out


def _merge_duplicates(refs: list[str], sentences: list[_Sentence], line: _Line, check: RagFileCheck) -> list[str]:
    """References with each segment id once (its first place); index citations follow their reference."""
    unique = list(dict.fromkeys(refs))
    if len(unique) == len(refs):
        return refs
    new_index = {ref: i for i, ref in enumerate(unique)}
    for sentence in sentences:
        sentence.citations = [new_index[refs[c]] if _is_index(c) and 0 <= c < len(refs) else c
                              for c in sentence.citations]
    check.fixed_line(line.lineno, f"removed {len(refs) - len(unique)} duplicate reference(s)")
    return unique


def _trim(sentences: list[_Sentence], line: _Line, check: RagFileCheck) -> list[_Sentence]:
    """The checker's fix of an over-long answer: sentences removed from the end until it has at most 400 words."""
    words = sum(word_count(s.text.strip()) for s in sentences)
    kept = list(sentences)
    while words > MAX_WORDS and kept:
        last = kept.pop()
        words -= word_count(last.text.strip())
    if len(kept) != len(sentences):
        check.fixed_line(line.lineno, f"removed {len(sentences) - len(kept)} sentence(s) from the end "
                                      f"({sum(word_count(s.text.strip()) for s in sentences)} -> {words} words)")
    return kept


def _fixed_answer(sentences: list[_Sentence]) -> list[dict[str, Any]]:
    return [{**s.raw, "citations": s.citations} for s in sentences]


def _parse_2024(record: dict[str, Any], line: _Line, check: RagFileCheck) -> CitedAnswer:
    for name in FIELDS_2024:
        if name not in record:
            raise line.fail(f'the 2024 line lacks "{name}"', name, None, ", ".join(FIELDS_2024))
    run = line.run_name(record["run_id"], "run_id")
    if check.run_tag is None:
        check.run_tag = run
    elif run != check.run_tag:
        raise line.fail(f"run tag {quoted(run)} differs from the file's first ({quoted(check.run_tag)})", "run_id",
                        run, "one run_id per 2024 file (the checker's rule)")
    qid = line.word(record["topic_id"], "topic_id", "topic_id")
    query = record["topic"]
    if not isinstance(query, str):
        raise line.fail("the topic text must be a string", "topic", quoted(query), "the query text")
    if check.topics is not None:
        _check_topic_2024(qid, query, line, check.topics)
        check.answered.add(qid)
    reported = record["response_length"]
    if not _is_index(reported):
        raise line.fail("response_length must be an integer", "response_length", quoted(reported), "the words")
    refs = _references(record, line)
    if check.topics is not None:
        for i, ref in enumerate(refs):
            if not MARCODOC.match(ref):
                raise line.fail("the reference is no MS MARCO v2.1 segment id (an error in the 2024 checker: "
                                "rag24_validation.py, 'Invalid reference docno')", f"references[{i}]", quoted(ref),
                                "msmarco_v2.1_doc_<n>_<n>#<n>_<n>")
    sentences = _sentences(record, line)
    if len(set(refs)) != len(refs):
        if not check.fix:
            dup = next(ref for i, ref in enumerate(refs) if ref in refs[:i])
            raise line.fail(f"duplicate reference {quoted(dup)} (an error in the 2024 checker)", "references", dup,
                            "each segment id once (--trec-rag-fix merges them)")
        refs = _merge_duplicates(refs, sentences, line, check)
    if len(refs) > MAX_REFERENCES_2024:
        raise line.fail(f"{len(refs)} references, more than {MAX_REFERENCES_2024}", "references", len(refs),
                        f"at most {MAX_REFERENCES_2024} references (the 2024 checker's rule)")
    if reported > MAX_WORDS:
        check.warn("long_reported", line.lineno)
    cited = _resolve(sentences, refs, line, check, segment_ids=False)
    words = sum(word_count(s.text.strip()) for s in sentences)
    long = words > MAX_WORDS
    if long:
        check.warn("long_fixed" if check.fix else "long", line.lineno)
        if check.fix:
            sentences = _trim(sentences, line, check)
            cited = cited[:len(sentences)]
            words = sum(word_count(s.text.strip()) for s in sentences)
    # the checker's fix of a long answer sets response_length before it compares: no warning of its own then
    if words != reported:
        if not long:
            check.warn("length", line.lineno)
        if check.fix:
            check.fixed_line(line.lineno, f"response_length {reported} -> {words}")
    if check.fix:
        check.fixed.append({**record, "references": refs, "response_length": words,
                            "answer": _fixed_answer(sentences)})
    return CitedAnswer(run=run, query_id=qid, query=query, references=tuple(refs), sentences=tuple(cited),
                       metadata={"format": "2024"})


def _parse_2025(record: dict[str, Any], line: _Line, check: RagFileCheck) -> CitedAnswer:
    meta = record["metadata"]
    if not isinstance(meta, dict):
        raise line.fail("metadata must be an object", "metadata", quoted(meta), ", ".join(METADATA_KEYS_2025))
    for key in METADATA_KEYS_2025:
        if key not in meta:
            raise line.fail(f"metadata lacks {key}", f"metadata.{key}", None, ", ".join(METADATA_KEYS_2025))
    run = line.run_name(meta["run_id"], "metadata.run_id")
    qid = line.word(meta["narrative_id"], "metadata.narrative_id", "narrative_id")
    if check.topics is not None and qid not in check.topics.text_of():
        raise line.fail(f"narrative_id {quoted(qid)} is not in the topic file {check.topics.path} (an error in the "
                        "2025 validator: rag25_validation.py, validate_entry)", "metadata.narrative_id", qid,
                        "a topic id of the topic file")
    if "type" not in meta:
        check.warn("no_type", line.lineno)
    elif meta["type"] not in RUN_TYPES:
        raise line.fail("unknown run type", "metadata.type", meta["type"], " or ".join(map(repr, RUN_TYPES)))
    for key in ("narrative", "prompt"):
        if key not in meta:
            check.warn(f"no_{key}", line.lineno)
    query = meta.get("narrative", "")
    if not isinstance(query, str):
        raise line.fail("the narrative must be a string", "metadata.narrative", quoted(query), "the query text")
    refs = _references(record, line)
    if check.topics is not None and not all(MARCODOC.match(ref) for ref in refs):
        check.warn("not_marcodoc", line.lineno)
    sentences = _sentences(record, line)
    kinds = {"segment id" if isinstance(c, str) else "index" for s in sentences for c in s.citations}
    if len(kinds) > 1:
        raise line.fail("citations mix indexes and segment ids", "answer", None,
                        "all indexes (--format 1) or all segment ids (--format 2)")
    if kinds:
        kind = kinds.pop()
        if check.citation_kind is None:
            check.citation_kind = (kind, line.lineno)
        elif check.citation_kind[0] != kind:
            raise line.fail(f"citations are {kind}es" if kind == "index" else f"citations are {kind}s"
                            + f", at line {check.citation_kind[1]} {check.citation_kind[0]}"
                            + ("es" if check.citation_kind[0] == "index" else "s"), "answer", None,
                            "one citation form per file, as the validator's --format reads it")
    segment_ids = check.citation_kind is not None and check.citation_kind[0] == "segment id"
    if check.fix:
        refs = _merge_duplicates(refs, sentences, line, check)
        if len(refs) > MAX_REFERENCES_2025:
            check.fixed_line(line.lineno, f"references trimmed from {len(refs)} to {MAX_REFERENCES_2025}")
            refs = refs[:MAX_REFERENCES_2025]
    cited = _resolve(sentences, refs, line, check, segment_ids=segment_ids)
    if check.fix and sum(word_count(s.text.strip()) for s in sentences) > MAX_WORDS:
        sentences = _trim(sentences, line, check)
        cited = cited[:len(sentences)]
    if check.fix:
        check.fixed.append({**record, "references": refs, "answer": _fixed_answer(sentences)})
    metadata = {key: value for key, value in meta.items() if key not in ("run_id", "narrative_id")}
    metadata["format"] = "2025"
    return CitedAnswer(run=run, query_id=qid, query=query, references=tuple(refs), sentences=tuple(cited),
                       metadata=metadata)


def _check_topic_2024(qid: str, query: str, line: _Line, topics: TrackTopics) -> None:
    """The 2024 checker's topic rules (rag24_validation.py, check_rag24_run): a known topic, its text as the
    topic file holds it."""
    texts = topics.text_of()
    if qid not in texts:
        raise line.fail(f"unknown topic {quoted(qid)}: not in the topic file {topics.path} (an error in the 2024 "
                        "checker: rag24_validation.py, 'Unknown topic')", "topic_id", qid,
                        "a topic id of the topic file")
    if query != texts[qid]:
        raise line.fail(f"the topic text is not the official one of topic {quoted(qid)} in {topics.path} (an error in "
                        "the 2024 checker: rag24_validation.py, 'Topic text does not match official topic')", "topic",
                        quoted(query), quoted(texts[qid]))


def _parse(record: Any, line: _Line, check: RagFileCheck) -> CitedAnswer:
    if not isinstance(record, dict):
        raise line.fail("a TREC RAG answer line must be a JSON object", "line", type(record).__name__,
                        '{"run_id", "topic_id", "references", "answer"} (2024) or {"metadata", ...} (2025)')
    if "metadata" in record:
        return _parse_2025(record, line, check)
    if "narrative_id" in record and "topic_id" not in record:
        # ragnarok's quickstart shows 2025 lines flat; its converter and validator nest them under "metadata"
        raise line.fail('a 2025 line keeps team_id, run_id and narrative_id under "metadata"; this one has '
                        "them at the top level", "metadata", None,
                        '{"metadata": {"team_id", "run_id", "narrative_id", ...}, "references", "answer"} '
                        "(as ragnarok's convert trec25-format writes it)")
    return _parse_2024(record, line, check)


def check_rag_answers(path: Path, fix: bool = False, topics: TrackTopics | None = None
                      ) -> tuple[FilePart, RagFileCheck]:
    """Read a TREC RAG answer file (either format, line by line) into runs, passages and answers, with the
    account of its warnings and (``fix``) fixes; with the track's ``topics``, checked against them as the
    checkers do."""
    part = FilePart(path=path)
    check = RagFileCheck(path=path, fix=fix, topics=topics)
    rankings: dict[str, dict[str, list[RankedPassage]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, record in iter_json_lines(path):
        line = _Line(path, lineno)
        answer = _parse(record, line, check)
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
        if text.strip():  # an empty answer ranks nothing: it covers no nugget
            pid = answer_passage_id(text)
            part.passages.setdefault(pid, (text, lineno))
            ranked.append(RankedPassage(passage_id=pid, rank=1, score=0.0))
    if not seen:
        raise InputError("TREC RAG answer file is empty", path=path, expected="one answer object per line")
    for run, per_query in rankings.items():
        with model_errors(path, part.run_lines[run], "run"):
            part.runs[run] = Run(name=run, rankings=per_query, generated=True, source=str(path))
    part.warnings.extend(check.warnings)
    if topics is not None and check.answered:  # the 2024 checker warns of each topic no line answers
        missing = [t for t in topics.text_of() if t not in check.answered]
        if missing:
            shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            part.warnings.append(f"{path}: {len(missing)} topic(s) of {topics.path} have no answer (the 2024 checker "
                                 f"warns: 'No response returned for topic'): {shown}")
    part.warnings.extend(check.fixes)
    return part, check


def read_rag_answers(path: Path, fix: bool = False, topics: TrackTopics | None = None) -> FilePart:
    """Read a TREC RAG answer file (see :func:`check_rag_answers`)."""
    return check_rag_answers(path, fix, topics)[0]


def fix_rag_file(path: Path) -> tuple[str, list[str]]:
    """The text of ``path`` with the track's fixes applied (the checker's ``.fixed`` file) and the account
    of what changed, one entry per change and line."""
    _part, check = check_rag_answers(path, fix=True)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in check.fixed), check.fixes


# --- writing ------------------------------------------------------------------------------------


def answer_record(answer: CitedAnswer, fmt: str, segment_ids: bool = False) -> dict[str, Any]:
    """One answer as a line of the 2024 or 2025 format; ``segment_ids``: 2025 citations as the segment ids
    themselves (the validator's ``--format 2``) rather than indexes (``--format 1``, 2024's only form)."""
    if fmt == "2024":
        sentences = [{"text": s.text, "citations": list(s.citations)} for s in answer.sentences]
        return {"run_id": answer.run, "topic_id": answer.query_id, "topic": answer.query,
                "references": list(answer.references), "response_length": answer.words, "answer": sentences}
    if fmt == "2025":
        sentences = [{"text": s.text, "citations": answer.cited(s) if segment_ids else list(s.citations)}
                     for s in answer.sentences]
        meta = {key: value for key, value in answer.metadata.items() if key != "format"}
        meta.setdefault("team_id", answer.run)
        meta.setdefault("type", "automatic")
        meta.setdefault("narrative", answer.query)
        ordered = {"team_id": meta.pop("team_id"), "run_id": answer.run, "type": meta.pop("type"),
                   "narrative_id": answer.query_id, "narrative": meta.pop("narrative"), **meta}
        return {"metadata": ordered, "references": list(answer.references), "answer": sentences}
    raise ValueError(f"unknown TREC RAG format {fmt!r}; one of {', '.join(FORMATS)}")


def rag_answer_text(answers: Iterable[CitedAnswer], fmt: str = "2024", segment_ids: bool = False) -> str:
    """``answers`` as the text of one TREC RAG answer file (a 2024 file holds one run: the checker's rule)."""
    answers = list(answers)
    runs = sorted({a.run for a in answers})
    if fmt == "2024" and len(runs) > 1:
        raise ValueError(f"a 2024 TREC RAG file holds one run, not {len(runs)} ({', '.join(runs)}): "
                         "see rag_answer_files")
    return "".join(json.dumps(answer_record(a, fmt, segment_ids), ensure_ascii=False) + "\n" for a in answers)


def rag_answer_files(answers: Iterable[CitedAnswer], fmt: str = "2024", segment_ids: bool = False) -> dict[str, str]:
    """One TREC RAG answer file per run, ``{file name: content}``: ``<run>.jsonl``, topics in the order given."""
    by_run: dict[str, list[CitedAnswer]] = {}
    for answer in answers:
        by_run.setdefault(answer.run, []).append(answer)
    return {file_name(run, ".jsonl"): rag_answer_text(run_answers, fmt, segment_ids)
            for run, run_answers in by_run.items()}


def write_rag_answers(path: Path, answers: Iterable[CitedAnswer], fmt: str = "2024", segment_ids: bool = False) -> None:
    """Write ``answers`` as a TREC RAG answer file of format ``fmt`` (atomically)."""
    atomic_write_text(Path(path), rag_answer_text(answers, fmt, segment_ids))
