"""The hand-editable bank format (YAML or JSON) that people write and review.

```yaml
secret: false            # optional: redact test point text from developer-facing reports
queries:
  - id: q1
    text: what causes ocean tides
    metadata: {creator: NIST}                        # optional: the bank's own free-form JSON (of the query's
                                                     # own test points; a facet has its own)
    questions:
      - What pulls the oceans toward the moon?       # plain string, or a mapping with
      - text: How often do high tides occur each day? # text, answers, choices, required, weight, id,
                                                      # importance, metadata
        answers: [twice, two times]
    nuggets:
      - gravitational pull of the moon               # or a mapping: text, weight, required, id, importance,
                                                     # metadata (free-form JSON the exam does not read)
    facets:                                          # optional subtopics, each its own bank
      - id: f1
        text: tidal energy
        metadata: {...}                              # optional: the facet bank's own
        questions: [...]
        nuggets: [...]
```

Conventions (shared with the Workbench loader):
* a query's own test points form one :class:`QueryBank`; each facet forms another, whose
  ``query.text`` is ``"<query text> / <facet text>"`` (the TREC CAR "title / heading" convention the
  Workbench banks use, so a grader prompts with ``query.text`` alone) and whose ``query.facets`` is
  ``{facet_id: facet text}``. A query's own bank has ``query.facets == {}``.
* default ids follow the method (:func:`~exam_harness.core.models.test_point_id` of the text exactly as
  written; YAML itself strips plain scalars, quoted ones keep their spaces).
* within a bank, questions come first, then nuggets (the order the file lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.core.json_values import thaw_json
from exam_harness.core.models import Query, QueryBank, TestPoint, TestPointKind, test_point_id
from exam_harness.core.redaction import secret_input_errors
from exam_harness.io.limits import quoted
from exam_harness.io.located import (
    MAP,
    SCALAR,
    SEQ,
    Node,
    expect_bool,
    expect_json_object,
    expect_list,
    expect_mapping,
    expect_number,
    expect_text,
    load_located,
)
from exam_harness.io.parts import model_errors
from exam_harness.io.textio import atomic_write_text

TOP_KEYS = ("secret", "queries")
QUERY_KEYS = ("id", "text", "metadata", "questions", "nuggets", "facets")
FACET_KEYS = ("id", "text", "metadata", "questions", "nuggets")
QUESTION_KEYS = ("text", "answers", "choices", "required", "weight", "id", "importance", "metadata")
NUGGET_KEYS = ("text", "weight", "required", "id", "importance", "metadata")
FACET_SEPARATOR = " / "
POINT_LISTS: tuple[tuple[str, TestPointKind], ...] = (("questions", "question"), ("nuggets", "nugget"))


def facet_query_text(query_text: str, facet_text: str) -> str:
    """The text a facet bank's test points were written for: ``"query / facet"``."""
    return f"{query_text}{FACET_SEPARATOR}{facet_text}"


def load_hand_bank(path: Path) -> list[QueryBank]:
    """Read a hand-written ``.yaml``/``.yml``/``.json`` bank file (see the module docstring)."""
    root = load_located(path)
    if root is None:
        raise InputError("empty bank file", path=path, line=1, expected="a mapping with a 'queries' list")
    top = expect_mapping(root, path, "the bank file", TOP_KEYS)
    secret = expect_bool(top["secret"], path, "secret") if "secret" in top else False
    if "queries" not in top:
        raise InputError(
            "missing key", path=path, line=root.line, field="queries", expected="a list of queries (id, text, ...)"
        )
    queries = expect_list(top["queries"], path, "queries", "a list of queries (id, text, questions, nuggets, facets)")
    if not queries:
        raise InputError(
            "no queries", path=path, line=top["queries"].line, field="queries", expected="at least one query"
        )
    if len(queries) > limits.MAX_QUERIES_PER_FILE:
        count = limits.count_text(limits.MAX_QUERIES_PER_FILE)
        raise limits.over_limit(f"more than {count} queries in one file", "MAX_QUERIES_PER_FILE",
                                f"at most {count} queries per file", path=path, line=top["queries"].line,
                                field="queries")

    reader = _Reader(path, secret)
    banks: list[QueryBank] = []
    with secret_input_errors(_texts(top["queries"]) if secret else ()):
        for qnode in queries:
            with model_errors(path, qnode.line, "query"):
                banks.extend(reader.query(qnode))
    return banks


def _texts(node: Node) -> list[str]:
    """The texts of a located tree (its scalars as written), ids left out: what a secret bank's
    error message must not quote."""
    texts: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if item.kind == MAP:
            stack.extend(child for key, child in item.value.items() if key != "id")
        elif item.kind == SEQ:
            stack.extend(item.value)
        elif item.raw is not None or isinstance(item.value, str):
            texts.append(item.raw if item.raw is not None else item.value)
    return texts


class _Reader:
    def __init__(self, path: Path, secret: bool) -> None:
        self.path = path
        self.secret = secret
        self.query_lines: dict[str, int] = {}
        self.test_point_lines: dict[str, int] = {}
        self.test_point_count = 0

    def _required(self, node: Node, values: dict[str, Node], key: str, what: str, expected: str) -> Node:
        if key not in values:
            raise InputError(f"{what} has no {quoted(key)}", path=self.path, line=node.line, field=key,
                             expected=expected)
        return values[key]

    def query(self, qnode: Node) -> list[QueryBank]:
        values = expect_mapping(qnode, self.path, "a query", QUERY_KEYS)
        qid = self._unique_id(qnode, values, "query", self.query_lines, "each query once per file")
        qtext = expect_text(
            self._required(qnode, values, "text", f"query {quoted(qid)}", "the query text"), self.path, "text"
        )

        banks: list[QueryBank] = []
        own = self.test_points(qnode, values, qid, None)
        if own:
            banks.append(self._bank(Query(id=qid, text=qtext), None, own, self._metadata(values)))
        elif "metadata" in values:  # it is the query's own bank's, and there is none: never dropped
            raise InputError(f"query {quoted(qid)} has metadata but no questions or nuggets of its own",
                             path=self.path, line=values["metadata"].line, field="metadata",
                             expected="the metadata on each facet (a facet is its own bank), or questions or "
                             "nuggets of the query's own")
        if "facets" in values:
            fnodes = expect_list(
                values["facets"], self.path, "facets", "a list of facets (id, text, questions, nuggets)"
            )
            facet_lines: dict[str, int] = {}
            for fnode in fnodes:
                fvalues = expect_mapping(fnode, self.path, f"a facet of query {quoted(qid)}", FACET_KEYS)
                fid = self._unique_id(fnode, fvalues, "facet", facet_lines, "each facet once per query",
                                      within=f" in query {quoted(qid)}")
                ftext = expect_text(
                    self._required(fnode, fvalues, "text", f"facet {quoted(fid)}", "the facet text"), self.path, "text"
                )
                points = self.test_points(fnode, fvalues, qid, fid)
                if not points:
                    raise InputError(
                        f"facet {quoted(fid)} of query {quoted(qid)} has no test points",
                        path=self.path,
                        line=fnode.line,
                        field="questions",
                        expected="at least one question or nugget",
                    )
                query = Query(id=qid, text=facet_query_text(qtext, ftext), facets={fid: ftext})
                banks.append(self._bank(query, fid, points, self._metadata(fvalues)))
        if not banks:
            raise InputError(
                f"query {quoted(qid)} has no test points",
                path=self.path,
                line=qnode.line,
                field="questions",
                expected="at least one question or nugget (or facets with some)",
            )
        return banks

    def _unique_id(
        self, node: Node, values: dict[str, Node], kind: str, seen: dict[str, int], expected: str, within: str = ""
    ) -> str:
        """The ``id`` of a query or facet, which must not repeat (``seen``: id -> its first line)."""
        value = expect_text(self._required(node, values, "id", kind, f"a {kind} id without spaces"), self.path, "id",
                            word=True)
        line = values["id"].line
        if value in seen:
            raise InputError(f"duplicate {kind} id{within} (first at line {seen[value]})", path=self.path, line=line,
                             field="id", value=value, expected=expected)
        seen[value] = line
        return value

    def _metadata(self, values: dict[str, Node]) -> dict[str, Any]:
        """A query's or facet's ``metadata`` (the bank's own free-form JSON), empty where not given."""
        return expect_json_object(values["metadata"], self.path, "metadata") if "metadata" in values else {}

    def _bank(self, query: Query, facet_id: str | None, points: list[TestPoint], metadata: dict[str, Any]) -> QueryBank:
        return QueryBank(query=query, facet_id=facet_id, test_points=tuple(points), source=str(self.path),
                         secret=self.secret, metadata=metadata)

    def test_points(self, node: Node, values: dict[str, Node], qid: str, fid: str | None) -> list[TestPoint]:
        """The questions, then the nuggets, of a query or facet (``node``), counted before they are built."""
        lists: list[tuple[list[Node], TestPointKind]] = []
        for key, kind in POINT_LISTS:
            if key in values:
                lists.append((expect_list(values[key], self.path, key, f"a list of {key} (text or mappings)"), kind))
        self._count(node, sum(len(items) for items, _kind in lists))
        return [self.test_point(item, kind, qid, fid) for items, kind in lists for item in items]

    def _count(self, node: Node, count: int) -> None:
        """Test points within :data:`~exam_harness.io.limits.MAX_TEST_POINTS_PER_BANK` per bank and
        ``MAX_TEST_POINTS_PER_FILE`` per file."""
        self.test_point_count += count
        for total, limit in ((count, "MAX_TEST_POINTS_PER_BANK"), (self.test_point_count, "MAX_TEST_POINTS_PER_FILE")):
            most: int = getattr(limits, limit)
            if total > most:
                where = "bank" if limit.endswith("BANK") else "file"
                raise limits.over_limit(
                    f"more than {limits.count_text(most)} test points in one {where}", limit,
                    f"at most {limits.count_text(most)} test points per {where}", path=self.path, line=node.line,
                    field="questions",
                )

    def test_point(self, node: Node, kind: TestPointKind, qid: str, fid: str | None) -> TestPoint:
        path = self.path
        fields: dict[str, Any] = {}
        if node.kind == MAP:
            valid = QUESTION_KEYS if kind == "question" else NUGGET_KEYS
            values = expect_mapping(node, path, f"a {kind}", valid)
            text = expect_text(self._required(node, values, "text", f"the {kind}", f"the {kind} text"), path, "text")
            if "answers" in values:
                fields["gold_answers"] = self._texts(values["answers"], "answers")
            if "choices" in values:
                fields["choices"] = self._texts(values["choices"], "choices")
            if "required" in values:
                required = values["required"]
                if required.kind == SEQ:  # required of these runs only (names or patterns)
                    fields["required"], fields["required_runs"] = True, self._texts(required, "required")
                else:
                    fields["required"] = expect_bool(required, path, "required")
            if "weight" in values:
                fields["weight"] = expect_number(values["weight"], path, "weight", minimum=0.0)
            if "importance" in values:  # a TREC RAG nugget's importance, any string as nuggetizer keeps it
                node_value = values["importance"]
                if node_value.kind != SCALAR or not isinstance(node_value.value, str):
                    raise InputError("a nugget importance must be a string", path=path, line=node_value.line,
                                     field="importance", expected="'vital', 'okay' or another word")
                fields["importance"] = node_value.value
            if "metadata" in values:  # free-form, kept and written back; JSON values only
                fields["metadata"] = expect_json_object(values["metadata"], path, "metadata")
            given_id = expect_text(values["id"], path, "id", word=True) if "id" in values else None
            id_line = values["id"].line if "id" in values else node.line
        elif node.kind == SCALAR:
            text = expect_text(node, path, "text")
            given_id, id_line = None, node.line
        else:
            raise InputError(
                f"a {kind} must be a text or a mapping, got a list",
                path=path,
                line=node.line,
                field=kind + "s",
                expected="a text, or a mapping with keys "
                + ", ".join(QUESTION_KEYS if kind == "question" else NUGGET_KEYS),
            )
        tp_id = given_id or test_point_id(qid, text, fid)
        if tp_id in self.test_point_lines:
            why = "" if given_id else " (the same text twice gives the same default id)"
            raise InputError(
                f"duplicate test point id{why}; first at line {self.test_point_lines[tp_id]}",
                path=path,
                line=id_line,
                field="id" if given_id else "text",
                value=given_id or text,
                expected="unique test point ids within a file",
            )
        self.test_point_lines[tp_id] = id_line
        try:
            return TestPoint(id=tp_id, query_id=qid, kind=kind, text=text, facet_id=fid, **fields)
        except ValidationError as exc:  # pragma: no cover - every field is checked above
            raise InputError(f"invalid {kind}: {exc.errors()[0]['msg']}", path=path, line=node.line) from None

    def _texts(self, node: Node, field_name: str) -> tuple[str, ...]:
        if node.kind == SCALAR:  # a single answer written without brackets
            return (expect_text(node, self.path, field_name),)
        items = expect_list(node, self.path, field_name, "a list of texts")
        return tuple(expect_text(item, self.path, field_name) for item in items)


# --- writing ----------------------------------------------------------------------------------


def _base_texts(bank: QueryBank) -> tuple[str, str | None]:
    """(query text, facet text) of a bank as the hand format writes them."""
    if bank.facet_id is None:
        return bank.query.text, None
    facet = bank.query.facets.get(bank.facet_id)
    suffix = FACET_SEPARATOR + facet if facet is not None else None
    if suffix is None or not bank.query.text.endswith(suffix) or len(bank.query.text) == len(suffix):
        raise InputError(
            f"facet bank {bank.key!r} cannot be written in the hand format: its query text "
            f"{bank.query.text!r} is not '<query text>{FACET_SEPARATOR}<facet text>' for facet text {facet!r}",
            path=bank.source or None,
            field="query_text",
            value=bank.query.text,
            expected="facet banks as loaded from hand-written or TREC CAR style banks",
        )
    return bank.query.text[: -len(suffix)], facet


def _point_entry(tp: TestPoint) -> Any:
    entry: dict[str, Any] = {"text": tp.text}
    if tp.kind == "question":
        if tp.gold_answers:
            entry["answers"] = list(tp.gold_answers)
        if tp.choices:
            entry["choices"] = list(tp.choices)
    elif tp.gold_answers or tp.choices:
        raise InputError(
            "a nugget with answers or choices cannot be written in the hand format",
            field="id",
            value=tp.id,
            expected="answers and choices on questions only",
        )
    if tp.required:
        entry["required"] = list(tp.required_runs) if tp.required_runs else True
    if tp.weight != 1.0:
        entry["weight"] = tp.weight
    if tp.importance is not None:
        entry["importance"] = tp.importance
    if tp.id != test_point_id(tp.query_id, tp.text, tp.facet_id):
        entry["id"] = tp.id
    if tp.metadata:
        entry["metadata"] = thaw_json(tp.metadata)
    return tp.text if list(entry) == ["text"] else entry


def _points_dict(points: Sequence[TestPoint]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    questions = [_point_entry(tp) for tp in points if tp.kind == "question"]
    nuggets = [_point_entry(tp) for tp in points if tp.kind == "nugget"]
    if questions:
        out["questions"] = questions
    if nuggets:
        out["nuggets"] = nuggets
    return out


def hand_bank_document(banks: Sequence[QueryBank], *, secret: bool = False) -> dict[str, Any]:
    """The hand-format document (plain dicts and lists) describing ``banks``."""
    queries: dict[str, dict[str, Any]] = {}
    for bank in banks:
        qtext, ftext = _base_texts(bank)
        entry = queries.get(bank.query.id)
        if entry is None:
            entry = queries[bank.query.id] = {"id": bank.query.id, "text": qtext}
        elif entry["text"] != qtext:
            raise InputError(
                f"banks of query {bank.query.id!r} disagree on the query text: {entry['text']!r} vs {qtext!r}",
                path=bank.source or None,
                field="text",
                value=qtext,
                expected="one text per query",
            )
        if bank.facet_id is None:
            if "questions" in entry or "nuggets" in entry:
                raise InputError(
                    f"query {bank.query.id!r} has two banks without facet", field="id", value=bank.query.id
                )
            # keep id/text first, then the query's own points, then facets
            facets = entry.pop("facets", None)
            if bank.metadata:
                entry["metadata"] = thaw_json(bank.metadata)
            entry.update(_points_dict(bank.test_points))
            if facets is not None:
                entry["facets"] = facets
        else:
            facets = entry.setdefault("facets", [])
            if any(f["id"] == bank.facet_id for f in facets):
                raise InputError(f"facet {bank.key!r} appears twice", field="facet_id", value=bank.facet_id)
            facets.append({"id": bank.facet_id, "text": ftext,
                           **({"metadata": thaw_json(bank.metadata)} if bank.metadata else {}),
                           **_points_dict(bank.test_points)})
    doc: dict[str, Any] = {}
    if secret or any(b.secret for b in banks):  # never drop secrecy silently
        doc["secret"] = True
    doc["queries"] = list(queries.values())
    return doc


def write_bank_yaml(path: Path, banks: Sequence[QueryBank], *, secret: bool = False) -> None:
    """Write ``banks`` in the hand-editable format (YAML, or JSON for a ``.json`` path), atomically.

    Explicit ids are written only where they differ from the default id rule. ``secret`` (or any
    secret bank) marks the whole file secret.
    """
    path = Path(path)
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise InputError(
            "a hand-format bank must be written to .yaml, .yml or .json",
            path=path,
            expected="write_workbench_bank for .jsonl",
        )
    doc = hand_bank_document(banks, secret=secret)
    if path.suffix.lower() == ".json":
        import json

        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    else:
        import yaml  # here: reading a run or leaderboard needs no YAML

        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
        if yaml.safe_load(text) != doc:  # PyYAML writes a NEL (U+0085) in a quoted text as a line break: escape it
            text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=False, default_flow_style=False, width=100)
    atomic_write_text(path, text)
