"""The Autograding Workbench formats: bank JSON lines and graded paragraph files.

Banks: one JSON object per line with ``query_id``, optional ``facet_id``, ``query_text``, ``info``
and ``items`` (or the older ``questions``); each item is a question (``question_id``,
``question_text``, optional ``gold_answers``) or a nugget (``nugget_id``, ``nugget_text``). One
:class:`QueryBank` per line. Extra keys this project writes and reads back: per item ``choices``,
``weight``, ``required``, ``importance``, ``metadata`` (a test point's free-form JSON object); per line
``facet_text`` (when the facet text is not the part of ``query_text`` after the first " / "), ``secret`` and
``metadata`` (the bank's own free-form JSON object).
Other unknown keys are ignored (Workbench tools add metadata such as ``test_collection`` and ``hash``).

An item repeated verbatim (same id, same text; generated banks contain a few) is kept once: the
id rule makes them one test point. The same id with a different text is an error.

Paragraph files: one line per query, ``[query_id, [paragraph, ...]]`` (see docs/method.md). Recorded
grades go to ``ExamData.recorded[(paragraph_id, test_point_id)]``. Direct grades (the paragraph's
``grades`` list, graded for the query rather than for a test point) are recorded under the
pseudo test point id :func:`direct_grade_id` (``"<query_id>/direct"``; never a real id, whose last
part is an md5 hex digest), since one passage may be graded for several queries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.core.json_values import json_problem, thaw_json
from exam_harness.core.models import (
    MAX_GRADE,
    Query,
    QueryBank,
    RankedPassage,
    RecordedGrade,
    Run,
    TestPoint,
    TestPointKind,
    test_point_id,
)
from exam_harness.core.redaction import secret_input_errors, secret_texts
from exam_harness.io.handbank import FACET_SEPARATOR
from exam_harness.io.limits import quoted
from exam_harness.io.located import finite_number
from exam_harness.io.parts import RECOGNISED_FORMS, FilePart, check_word, model_errors, passage_too_long
from exam_harness.io.qrels import relevance_out_of_range
from exam_harness.io.textio import atomic_write_text, first_json_line, iter_json_lines

DIRECT_GRADE_SUFFIX = "direct"
ITEM_FORMS = "a question (question_id, question_text[, gold_answers]) or a nugget (nugget_id, nugget_text)"


def direct_grade_id(query_id: str) -> str:
    """The pseudo test point id under which a passage's direct grades for ``query_id`` are recorded."""
    return f"{query_id}/{DIRECT_GRADE_SUFFIX}"


def facet_text_of(query_text: str) -> str:
    """The facet part of a Workbench facet bank's query text (TREC CAR: ``"title / heading"``)."""
    head, sep, tail = query_text.partition(FACET_SEPARATOR)
    return tail if sep and head and tail else query_text


def _id_text(value: Any) -> Any:
    # TREC query ids are sometimes written as JSON numbers
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def is_workbench_bank_record(value: Any) -> bool:
    return isinstance(value, dict) and "query_id" in value and ("items" in value or "questions" in value)


# --- banks ------------------------------------------------------------------------------------


def load_workbench_bank(path: Path) -> list[QueryBank]:
    """Read a Workbench bank (``.jsonl`` or ``.jsonl.gz``), one :class:`QueryBank` per line."""
    banks: list[QueryBank] = []
    bank_lines: dict[tuple[str, str | None], int] = {}
    id_lines: dict[str, tuple[int, str, bool]] = {}
    query_ids: set[str] = set()
    for lineno, record in iter_json_lines(path):
        secret = isinstance(record, dict) and record.get("secret") is True
        with secret_input_errors(secret_texts(record, skip_key=_is_id_key) if secret else ()):
            bank = _bank_record(record, path, lineno, id_lines)
        query_ids.add(bank.query.id)
        if len(query_ids) > limits.MAX_QUERIES_PER_FILE:
            count = limits.count_text(limits.MAX_QUERIES_PER_FILE)
            raise limits.over_limit(f"more than {count} queries in one file", "MAX_QUERIES_PER_FILE",
                                    f"at most {count} queries per file", path=path, line=lineno, field="query_id")
        key = (bank.query.id, bank.facet_id)
        if key in bank_lines:
            raise InputError(
                f"bank {quoted(bank.key)} appears twice (first at line {bank_lines[key]})",
                path=path,
                line=lineno,
                field="query_id",
                value=bank.key,
                expected="one line per query (and facet)",
            )
        bank_lines[key] = lineno
        banks.append(bank)
    if not banks:
        raise InputError("empty bank file", path=path, line=1, expected="one JSON object per query")
    return banks


def _is_id_key(key: str) -> bool:
    return key.endswith("_id")


def _bank_record(record: Any, path: Path, lineno: int, id_lines: dict[str, tuple[int, str, bool]]) -> QueryBank:
    def fail(message: str, field: str, value: Any = None, expected: str | None = None) -> InputError:
        return InputError(message, path=path, line=lineno, field=field, value=value, expected=expected)

    if not isinstance(record, dict):
        raise fail("a bank line must be a JSON object", "query_id", expected="{query_id, query_text, items: [...]}")
    qid = _id_text(record.get("query_id"))
    if (why := check_word(qid, "query_id")) is not None:
        raise fail(why, "query_id", qid, "a query id without whitespace")
    fid = _id_text(record.get("facet_id"))
    if fid is not None and (why := check_word(fid, "facet_id")) is not None:
        raise fail(why, "facet_id", fid, "a facet id without whitespace, or null")
    qtext = record.get("query_text")
    if not isinstance(qtext, str) or not qtext.strip():
        raise fail("missing or empty query text", "query_text", qtext, "the query text")
    if "items" in record and "questions" in record:
        raise fail(
            "both 'items' and 'questions' given", "questions", expected="'items' (or the older 'questions'), not both"
        )
    list_key = "items" if "items" in record else "questions"
    items = record.get(list_key)
    if not isinstance(items, list):
        raise fail("missing test point list", list_key, items, f"a list of items, each {ITEM_FORMS}")
    if not items:
        raise fail(f"bank {quoted(qid)} has no test points", list_key, expected="at least one question or nugget")
    _check_counts(len(items), len(id_lines) + len(items), list_key, fail)
    facets: dict[str, str] = {}
    if fid is not None:
        ftext = record.get("facet_text", facet_text_of(qtext))
        if not isinstance(ftext, str) or not ftext.strip():
            raise fail("facet text must be a non-empty string", "facet_text", ftext)
        facets = {fid: ftext}
    secret = record.get("secret", False)
    if not isinstance(secret, bool):
        raise fail("must be true or false", "secret", secret, "true or false")
    metadata = _json_object(record, "metadata", "metadata", fail)

    points: list[TestPoint] = []
    for index, item in enumerate(items):
        tp = _item(item, f"{list_key}[{index}]", qid, fid, fail)
        seen = id_lines.get(tp.id)
        if seen is not None:
            if seen[0] == lineno and seen[1] == tp.text:
                continue  # verbatim repeat of an item: one test point
            # an earlier secret bank's text is never quoted
            first = f"line {seen[0]}" if seen[2] else f"line {seen[0]} with text {quoted(seen[1])}"
            raise fail(
                f"duplicate test point id (first at {first})",
                f"{list_key}[{index}].{tp.kind}_id",
                tp.id,
                "unique test point ids (the id rule is query_id/md5(text))",
            )
        id_lines[tp.id] = (lineno, tp.text, secret)
        points.append(tp)
    try:
        return QueryBank(
            query=Query(id=qid, text=qtext, facets=facets),
            facet_id=fid,
            test_points=tuple(points),
            source=str(path),
            secret=secret,
            metadata=metadata,
        )
    except ValidationError as exc:  # pragma: no cover - fields are checked above
        raise fail(f"invalid bank: {exc.errors()[0]['msg']}", "query_id", qid) from None


def _check_counts(in_bank: int, in_file: int, field: str, fail: Any) -> None:
    """At most :data:`~exam_harness.io.limits.MAX_TEST_POINTS_PER_BANK` test points per line and
    ``MAX_TEST_POINTS_PER_FILE`` per file (before any is built)."""
    for count, limit, where in ((in_bank, "MAX_TEST_POINTS_PER_BANK", "bank"),
                                (in_file, "MAX_TEST_POINTS_PER_FILE", "file")):
        most: int = getattr(limits, limit)
        if count > most:
            shown = limits.count_text(most)
            raise fail(f"more than {shown} test points in one {where}", field,
                       expected=f"at most {shown} test points per {where} (limit {limit})")


def _item(item: Any, where: str, qid: str, fid: str | None, fail: Any) -> TestPoint:
    if not isinstance(item, dict):
        raise fail("a test point must be a JSON object", where, item, ITEM_FORMS)
    is_q = "question_id" in item or "question_text" in item
    is_n = "nugget_id" in item or "nugget_text" in item
    if is_q == is_n:
        raise fail("cannot tell whether this item is a question or a nugget", where, sorted(item), ITEM_FORMS)
    kind = "question" if is_q else "nugget"
    text = item.get(f"{kind}_text")
    if not isinstance(text, str) or not text.strip():
        raise fail(f"missing or empty {kind} text", f"{where}.{kind}_text", text, "a non-empty string")
    tid = item.get(f"{kind}_id")
    if tid is None:
        tid = test_point_id(qid, text, fid)
    elif (why := check_word(tid, f"{kind}_id")) is not None:
        raise fail(why, f"{where}.{kind}_id", tid, "an id without whitespace (default: query_id/md5(text))")
    if "query_id" in item and _id_text(item["query_id"]) != qid:
        raise fail(
            f"item belongs to another query than its line ({quoted(qid)})", f"{where}.query_id", item["query_id"],
            quoted(qid),
        )
    if "facet_id" in item and _id_text(item["facet_id"]) != fid:
        raise fail(
            f"item belongs to another facet than its line ({quoted(fid)})", f"{where}.facet_id", item["facet_id"],
            quoted(fid),
        )
    fields: dict[str, Any] = {}
    for key, target in (("gold_answers", "gold_answers"), ("choices", "choices")):
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail("must be a list of strings", f"{where}.{key}", value, "a list of strings")
        fields[target] = tuple(value)
    if "weight" in item:
        weight = finite_number(item["weight"])
        if weight is None or weight < 0:
            raise fail("weight must be a finite number >= 0", f"{where}.weight", item["weight"], "a number >= 0")
        fields["weight"] = weight
    if "required" in item:
        if not isinstance(item["required"], bool):
            raise fail("must be true or false", f"{where}.required", item["required"], "true or false")
        fields["required"] = item["required"]
    if item.get("importance") is not None:  # a TREC RAG nugget's importance, any string
        if not isinstance(item["importance"], str):
            raise fail("must be a string", f"{where}.importance", item["importance"], "'vital', 'okay' or another word")
        fields["importance"] = item["importance"]
    fields["metadata"] = _json_object(item, "metadata", f"{where}.metadata", fail)
    try:
        return TestPoint(id=tid, query_id=qid, kind=cast(TestPointKind, kind), text=text, facet_id=fid, **fields)
    except ValidationError as exc:  # a rule of the model not checked above
        raise fail(f"invalid {kind}: {exc.errors()[0]['msg']}", where, expected=ITEM_FORMS) from None


def _json_object(record: dict[str, Any], key: str, where: str, fail: Any) -> dict[str, Any]:
    """``record[key]`` as a JSON object (empty where not given); an InputError naming the place of a value JSON
    cannot hold (``where``: the key's place in the line)."""
    if key not in record:
        return {}
    value = record[key]
    if (problem := json_problem(value, where)) is not None or not isinstance(value, dict):
        raise fail(problem.why if problem else "must be a JSON object", problem.where if problem else where,
                   expected="an object of JSON values (JSON has no NaN or infinity)")
    return value


def workbench_bank_record(bank: QueryBank) -> dict[str, Any]:
    """One bank as a Workbench ``items`` line (plus this project's extra keys where needed)."""
    query = bank.query
    record: dict[str, Any] = {"query_id": query.id}
    if bank.facet_id is not None:
        record["facet_id"] = bank.facet_id
    record["query_text"] = query.text
    if bank.facet_id is not None:
        ftext = query.facets.get(bank.facet_id, facet_text_of(query.text))
        if ftext != facet_text_of(query.text):
            record["facet_text"] = ftext
    record["info"] = None
    if bank.secret:
        record["secret"] = True
    if bank.metadata:
        record["metadata"] = thaw_json(bank.metadata)
    items: list[dict[str, Any]] = []
    for tp in bank.test_points:
        item: dict[str, Any] = {"query_id": tp.query_id}
        if tp.facet_id is not None:
            item["facet_id"] = tp.facet_id
        item[f"{tp.kind}_id"] = tp.id
        item[f"{tp.kind}_text"] = tp.text
        if tp.gold_answers:
            item["gold_answers"] = list(tp.gold_answers)
        if tp.choices:
            item["choices"] = list(tp.choices)
        if tp.weight != 1.0:
            item["weight"] = tp.weight
        if tp.required:
            item["required"] = True
        if tp.importance is not None:
            item["importance"] = tp.importance
        if tp.metadata:
            item["metadata"] = thaw_json(tp.metadata)
        items.append(item)
    record["items"] = items
    return record


def write_workbench_bank(path: Path, banks: Sequence[QueryBank]) -> None:
    """Write ``banks`` as Workbench ``items`` JSON lines (``.jsonl`` or ``.jsonl.gz``), atomically."""
    path = Path(path)
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
        raise InputError("a Workbench bank must be written to .jsonl or .jsonl.gz", path=path)
    lines = [json.dumps(workbench_bank_record(bank), ensure_ascii=False) for bank in banks]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


# --- graded paragraph files -------------------------------------------------------------------


def is_paragraph_record(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], list)


_UNREAD = object()


def read_paragraph_file(path: Path, first: Any = _UNREAD) -> FilePart:
    """Read a Workbench paragraph file into passages, runs, judgments and recorded grades.

    Workbench ranks are kept as given (some runs start at 0); each run's lists are sorted by rank.
    A first line that is not a paragraph line is reported as what it looks like (a bank, or unknown).
    ``first``: the first line's value where the caller has parsed it already (the format's sniff), so that
    a line of megabytes is not parsed once more to be checked.
    """
    _check_first_line(path, first_json_line(path) if first is _UNREAD else first)
    reader = _ParagraphReader(path)
    for lineno, record in iter_json_lines(path):
        if not is_paragraph_record(record):
            raise InputError(
                "a paragraph line must be [query_id, [paragraph, ...]]",
                path=path,
                line=lineno,
                field="line",
                value=type(record).__name__,
                expected="a two-element JSON array",
            )
        qid = _id_text(record[0])
        if (why := check_word(qid, "query_id")) is not None:
            raise InputError(why, path=path, line=lineno, field="[0] (query_id)", value=qid, expected="a query id")
        for index, para in enumerate(record[1]):
            reader.paragraph(para, qid, lineno, f"[1][{index}]")
    return reader.finish()


def _check_first_line(path: Path, first: Any) -> None:
    if first is None:
        raise InputError("empty JSON-lines file", path=path, expected=RECOGNISED_FORMS)
    if is_paragraph_record(first):
        return
    if is_workbench_bank_record(first):
        raise InputError("this is a bank file, not a run file; list it under the bank paths (exam_banks)",
                         path=path, line=1, expected=RECOGNISED_FORMS)
    raise InputError(
        "unrecognised JSON-lines file (first line is neither a Workbench paragraph line nor named "
        "*.responses.jsonl / *.collection.jsonl)", path=path, line=1, expected=RECOGNISED_FORMS,
    )


class _ParagraphReader:
    """Reads paragraphs with fast checks on the hot paths (the DL19 file has ~100k grades);
    anything unusual takes a slower path that explains what is wrong."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.part = FilePart(path=path)
        self.rankings: dict[tuple[str, str], list[RankedPassage]] = {}
        self.seen_pairs: dict[tuple[str, str], tuple[int, str]] = {}
        self.good_methods: set[str] = set()
        self.lineno = 0
        self.where = ""

    def fail(self, message: str, field: str, value: Any = None, expected: str | None = None) -> InputError:
        return InputError(
            message, path=self.path, line=self.lineno, field=f"{self.where}.{field}", value=value, expected=expected
        )

    def finish(self) -> FilePart:
        per_run: dict[str, dict[str, list[RankedPassage]]] = {}
        for (method, qid), ranked in self.rankings.items():
            ranked.sort(key=lambda r: r.rank)
            per_run.setdefault(method, {})[qid] = ranked
        for name, per_query in per_run.items():
            with model_errors(self.path, self.part.run_lines.get(name), "run"):
                self.part.runs[name] = Run(name=name, rankings=per_query, source=str(self.path))
        return self.part

    def paragraph(self, para: Any, qid: str, lineno: int, where: str) -> None:
        self.lineno, self.where = lineno, where
        part = self.part
        if not isinstance(para, dict):
            raise self.fail("a paragraph must be a JSON object", "paragraph_id", expected="{paragraph_id, text, ...}")
        pid: Any = para.get("paragraph_id")
        # an id read before passed the check then (DL19: 9,260 paragraphs of 9,139 passages)
        if (type(pid) is not str or pid not in part.passages) and (why := check_word(pid, "paragraph_id")) is not None:
            raise self.fail(why, "paragraph_id", pid, "a passage id without whitespace")
        text = para.get("text")
        if not isinstance(text, str):
            raise self.fail(f"paragraph {quoted(pid)} has no text", "text", text, "a string")
        if len(text) > limits.MAX_PASSAGE_CHARS:
            raise passage_too_long(self.path, self.lineno, f"{self.where}.text")
        known = part.passages.get(pid)
        if known is None:
            part.passages[pid] = (text, lineno)
        elif known[0] != text:
            raise self.fail(
                f"passage {quoted(pid)} has another text than at line {known[1]}", "text", text,
                "one text per passage id",
            )
        first = self.seen_pairs.setdefault((qid, pid), (lineno, where))
        if first != (lineno, where):
            raise self.fail(
                f"passage {quoted(pid)} is listed twice for query {quoted(qid)} (first at line {first[0]}, {first[1]})",
                "paragraph_id",
                pid,
            )

        pdata = para.get("paragraph_data", {})
        if not isinstance(pdata, dict):  # [] or null included: a paragraph's data is an object or absent
            raise self.fail("must be an object", "paragraph_data", type(pdata).__name__, "{judgments, rankings}")
        # each field a list as a rule; _list says what is wrong otherwise (or reads a missing one as empty)
        judgments = pdata.get("judgments")
        if type(judgments) is not list:
            judgments = self._list(pdata, "judgments", "paragraph_data.", null=False)
        if judgments:
            self._judgments(judgments, qid, pid)
        rankings = pdata.get("rankings")
        if type(rankings) is not list:
            rankings = self._list(pdata, "rankings", "paragraph_data.", null=False)
        if rankings:
            self._rankings(rankings, qid, pid)
        exam_grades = para.get("exam_grades")
        if type(exam_grades) is not list:
            exam_grades = self._list(para, "exam_grades")
        for g, entry in enumerate(exam_grades):
            self._exam_grades(entry, f"exam_grades[{g}]", pid)
        if "grades" in para:
            for g, entry in enumerate(self._list(para, "grades")):
                self._direct_grade(entry, f"grades[{g}]", qid, pid)

    def _list(self, record: dict[str, Any], key: str, prefix: str = "", *, null: bool = True) -> list[Any]:
        """``record[key]``: a list, or nothing (missing, or null where ``null``; ``judgments: null`` is
        not "no judgments" but a file that lost them)."""
        value = record.get(key)
        if isinstance(value, list):
            return value
        if key not in record or (value is None and null):
            return []
        raise self.fail("must be a list", prefix + key, "null" if value is None else type(value).__name__,
                        "a JSON array")

    def _judgments(self, judgments: Any, qid: str, pid: str) -> None:
        levels = self.part.judgments.setdefault(qid, {})
        for j, judgment in enumerate(judgments):
            if not isinstance(judgment, dict):
                raise self.fail("a judgment must be an object", f"paragraph_data.judgments[{j}]")
            rel = judgment.get("relevance")
            if type(rel) is not int:
                raise self.fail(
                    "relevance must be an integer", f"paragraph_data.judgments[{j}].relevance", rel, "an integer level"
                )
            if abs(rel) > limits.MAX_RELEVANCE_LABEL:
                raise relevance_out_of_range(self.path, self.lineno, f"paragraph_data.judgments[{j}].relevance", rel)
            jq = judgment.get("query", qid)
            if jq != qid and _id_text(jq) != qid:
                raise self.fail(
                    f"judgment for another query than the line's ({quoted(qid)})",
                    f"paragraph_data.judgments[{j}].query", jq,
                )
            levels[pid] = max(rel, levels.get(pid, rel))

    def _rankings(self, rankings: Any, qid: str, pid: str) -> None:
        lineno = self.lineno
        for r, ranking in enumerate(rankings):
            where = f"paragraph_data.rankings[{r}]"
            if not isinstance(ranking, dict):
                raise self.fail("a ranking must be an object", where, expected="{method, rank, score}")
            method: Any = ranking.get("method")
            if type(method) is not str or method not in self.good_methods:  # a str first: sets need hashable
                if (why := check_word(method, "method")) is not None:
                    raise self.fail(why, f"{where}.method", method, "a run name without whitespace")
                self.good_methods.add(method)
                self.part.run_lines.setdefault(method, lineno)
            rank = ranking.get("rank")
            if type(rank) is not int or rank < 0:
                raise self.fail("rank must be an integer >= 0", f"{where}.rank", rank, "an integer >= 0")
            score = ranking.get("score", 0.0)
            if (type(score) is not float and type(score) is not int) or score != score:
                raise self.fail("score must be a number", f"{where}.score", score, "a number")
            rq = ranking.get("queryId", qid)
            if rq != qid and _id_text(rq) != qid:
                raise self.fail(f"ranking for another query than the line's ({quoted(qid)})", f"{where}.queryId", rq)
            if ranking.get("paragraphId", pid) != pid:
                raise self.fail(
                    f"ranking of another paragraph than {quoted(pid)}", f"{where}.paragraphId", ranking["paragraphId"]
                )
            ranked = self.rankings.get((method, qid))
            if ranked is None:
                ranked = self.rankings[method, qid] = []
            elif ranked[-1].passage_id == pid:  # a passage is listed once per query, so only here
                raise self.fail(
                    f"run {quoted(method)} ranks passage {quoted(pid)} twice for query {quoted(qid)}",
                    f"{where}.method", method,
                )
            try:
                ranked.append(RankedPassage(passage_id=pid, rank=rank, score=float(score)))
            except OverflowError:  # an integer score too large for a float
                raise self.fail("score must be a number", f"{where}.score", score, "a number") from None

    def _answers(self, entry: dict[str, Any], where: str) -> dict[str, Any]:
        pairs = self._list(entry, "answers", f"{where}.")
        try:
            return dict(pairs)  # fast path: a list of [id, text] pairs
        except (TypeError, ValueError):
            for a, pair in enumerate(pairs):
                if not isinstance(pair, list) or len(pair) != 2 or type(pair[0]) is not str:
                    raise self.fail(
                        "an answer must be [test_point_id, answer text]", f"{where}.answers[{a}]", pair, "[id, text]"
                    ) from None
            raise  # pragma: no cover - dict() of [str, value] pairs cannot fail

    def _record_all(
        self, pid: str, graded: list[tuple[Any, int]], answers: dict[Any, Any], llm: Any, prompt_class: Any, field: str
    ) -> None:
        # Recorded grades are frozen, so equal ones share one object (most self-rating answers are
        # the rating itself): far fewer objects to build for files with ~100k grades.
        shared = self.part.shared_grades.get((llm, prompt_class))
        if shared is None:
            shared = self.part.shared_grades[llm, prompt_class] = {}
        add = self.part.recorded.setdefault
        find = shared.get
        answer_of = answers.get
        for tid, grade in graded:
            if type(tid) is not str:
                raise self.fail("test point id must be a string", field, tid, "a test point id")
            answer = answer_of(tid)
            try:
                rec = find((tid, grade, answer))
            except TypeError:  # an unhashable answer (a list or object)
                rec = None
            if rec is None:
                if answer is not None and type(answer) is not str:
                    raise self.fail(
                        f"answer of {quoted(tid)} must be a string", f"{field}.answers", answer, "a string or null"
                    )
                rec = shared[tid, grade, answer] = RecordedGrade(
                    test_point_id=tid, grade=grade, answer=answer, llm=llm, prompt_class=prompt_class
                )
            add((pid, tid), []).append(rec)

    def _grader(self, entry: dict[str, Any], where: str, info_key: str = "prompt_info") -> tuple[Any, Any]:
        llm = entry.get("llm")
        if llm is not None and type(llm) is not str:
            raise self.fail("must be a string", f"{where}.llm", llm, "the model name")
        prompt_info = entry.get(info_key) or {}
        prompt_class = prompt_info.get("prompt_class") if isinstance(prompt_info, dict) else None
        if prompt_class is not None and type(prompt_class) is not str:
            raise self.fail(
                "must be a string", f"{where}.prompt_info.prompt_class", prompt_class, "a prompt class name"
            )
        return llm, prompt_class

    def _exam_grades(self, entry: Any, where: str, pid: str) -> None:
        if not isinstance(entry, dict):
            raise self.fail(
                "an exam_grades entry must be an object", where, expected="{correctAnswered, wrongAnswered, ...}"
            )
        answers = self._answers(entry, where)
        llm, prompt_class = self._grader(entry, where)
        self_ratings = entry.get("self_ratings")
        graded: list[tuple[Any, int]] = []
        if self_ratings is not None:
            if not isinstance(self_ratings, list):
                raise self.fail("must be a list", f"{where}.self_ratings", type(self_ratings).__name__,
                                "a list of {question_id or nugget_id, self_rating}")
            for s, rating in enumerate(self_ratings):
                try:
                    tid = rating.get("question_id") or rating.get("nugget_id")
                    value = rating["self_rating"]
                except (AttributeError, KeyError):
                    raise self.fail(
                        "a self rating must be {question_id or nugget_id, self_rating}",
                        f"{where}.self_ratings[{s}]",
                        rating,
                    ) from None
                if type(value) is not int or not 0 <= value <= MAX_GRADE:
                    raise self.fail(
                        f"self rating of {quoted(tid)} out of range",
                        f"{where}.self_ratings[{s}].self_rating",
                        value,
                        f"an integer 0..{MAX_GRADE}",
                    )
                graded.append((tid, value))
            self._record_all(pid, graded, answers, llm, prompt_class, f"{where}.self_ratings")
            return
        correct, wrong = entry.get("correctAnswered"), entry.get("wrongAnswered")
        if (type(correct) is list and type(wrong) is list  # the usual entry: two lists of id strings, disjoint
                and set(map(type, correct)) | set(map(type, wrong)) <= {str}):
            right = dict.fromkeys(correct, 1)
            if right.keys().isdisjoint(wrong):
                self._record_all(pid, [*right.items(), *dict.fromkeys(wrong, 0).items()], answers, llm,
                                 prompt_class, f"{where}.correctAnswered")
                return
        grades: dict[Any, int] = {}
        for key, grade in (("correctAnswered", 1), ("wrongAnswered", 0)):
            ids = entry.get(key)
            if ids is None:
                continue
            if not isinstance(ids, list):
                raise self.fail("must be a list of test point ids", f"{where}.{key}", ids, "a list")
            for tid in ids:
                if type(tid) is not str:
                    raise self.fail("test point id must be a string", f"{where}.{key}", tid, "a test point id")
                if grades.setdefault(tid, grade) != grade:
                    raise self.fail("test point is both correctly and wrongly answered", f"{where}.{key}", tid)
        self._record_all(pid, list(grades.items()), answers, llm, prompt_class, f"{where}.correctAnswered")

    def _direct_grade(self, entry: Any, where: str, qid: str, pid: str) -> None:
        if not isinstance(entry, dict):
            raise self.fail(
                "a grades entry must be an object", where, expected="{correctAnswered, self_ratings, answer, ...}"
            )
        rating = entry.get("self_ratings")
        if rating is not None:
            if type(rating) is not int or rating < 0:
                raise self.fail(
                    "self_ratings must be an integer >= 0", f"{where}.self_ratings", rating, "an integer >= 0"
                )
            grade = rating
        else:
            correct = entry.get("correctAnswered")
            if not isinstance(correct, bool):
                raise self.fail(
                    "needs self_ratings or a boolean correctAnswered",
                    f"{where}.correctAnswered",
                    correct,
                    "true or false",
                )
            grade = int(correct)
        llm, prompt_class = self._grader(entry, where)
        tid = direct_grade_id(qid)
        self._record_all(pid, [(tid, grade)], {tid: entry.get("answer")}, llm, prompt_class, where)
