"""Property-based fuzzing of every loader: any input ends in a valid result or an InputError.

Each loader gets structure-aware inputs (a valid file of its format with fields deleted, duplicated,
swapped, retyped or given huge, empty, unicode or control-character values, nested deep, YAML
aliases and tags), the same inputs damaged byte by byte (cut, spliced, a NUL, a byte-order mark or
invalid UTF-8 inserted, gzipped or a gzip stream cut short) and raw bytes. A call must return or
raise InputError whose message names the file and stays short: never another exception (a crash),
never past the deadline (a hang). The limits of exam_harness.io.limits are lowered while fuzzing so
that generated inputs cross every one of them; the tests at the end load inputs past the real
limits and bound the memory that takes.

Profiles (hypothesis settings): "ci", the default (a fixed sample of 100 examples per loader), and
"campaign" (EXAM_FUZZ_PROFILE=campaign, EXAM_FUZZ_EXAMPLES=N random examples per loader), which
benchmarks/fuzz_campaign.py runs. Every crash the fuzzer found is kept as an ``@example``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exam_harness.core.errors import InputError
from exam_harness.io import limits
from exam_harness.io.collection import read_collection_jsonl, read_collection_tsv
from exam_harness.io.generated import read_responses
from exam_harness.io.handbank import load_hand_bank
from exam_harness.io.leaderboard import load_leaderboard
from exam_harness.io.qrels import read_qrels
from exam_harness.io.queries import load_facets, load_queries
from exam_harness.io.textio import json_too_deep
from exam_harness.io.trec import read_trec_run
from exam_harness.io.workbench import load_workbench_bank, read_paragraph_file
from exam_harness.results.read import read_report
from tests.io.support import (
    _json,
    _slots,
    huge_texts,
    json_lines,
    mutated,
    short_texts,
)
from tests.paths import GOLDEN, REPO

# ---------------------------------------------------------------------------- profiles
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much]
# The ci deadline only catches a hang (an example takes milliseconds): generous for a loaded machine.
settings.register_profile(
    "ci", max_examples=100, deadline=timedelta(seconds=60), derandomize=True, database=None,
    suppress_health_check=_QUIET,
)
settings.register_profile(
    "campaign", max_examples=int(os.environ.get("EXAM_FUZZ_EXAMPLES", "100000")), deadline=timedelta(seconds=10),
    database=None, suppress_health_check=_QUIET,
)
PROFILE = os.environ.get("EXAM_FUZZ_PROFILE", "ci")
fuzz_settings = settings(settings.get_profile(PROFILE))

# Limits while fuzzing: small enough that a generated input crosses each of them.
SMALL_LIMITS = {
    "MAX_DOCUMENT_VALUES": 3_000,
    "MAX_FILE_BYTES": 256 * 1024,
    "MAX_LINE_BYTES": 128 * 1024,
    "MAX_FIELDS_LINE_BYTES": 2048,
    "MAX_PASSAGE_CHARS": 20_000,
    "MAX_RESPONSE_CHARS": 20_000,
    "MAX_TEST_POINTS_PER_BANK": 40,
    "MAX_TEST_POINTS_PER_FILE": 100,
    "MAX_QUERIES_PER_FILE": 30,
}


@contextlib.contextmanager
def small_limits() -> Iterator[None]:
    saved = {name: getattr(limits, name) for name in SMALL_LIMITS}
    for name, value in SMALL_LIMITS.items():
        setattr(limits, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(limits, name, value)


# ---------------------------------------------------------------------------- the loaders
LOADERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "hand-yaml": ("bank.yaml", load_hand_bank),
    "hand-json": ("bank.json", load_hand_bank),
    "workbench-bank": ("bank.jsonl", load_workbench_bank),
    "trec-run": ("system.run", read_trec_run),
    "collection-tsv": ("collection.tsv", read_collection_tsv),
    "collection-jsonl": ("collection.jsonl", read_collection_jsonl),
    "responses": ("gen.responses.jsonl", read_responses),
    "paragraphs": ("graded.jsonl", read_paragraph_file),
    "leaderboard": ("official.json", load_leaderboard),
    "qrels": ("judged.qrels", read_qrels),
    "queries": ("queries.tsv", load_queries),
    "facets": ("facets.tsv", lambda path: load_facets(path, {"q1", "q2"})),
    "report": ("report.json", read_report),
}
EXAMPLES: Counter[str] = Counter()  # examples run per loader (read by benchmarks/fuzz_campaign.py)
MAX_MESSAGE = 1200  # a message quotes at most ~80 characters of input, plus what is valid


def check(name: str, data: bytes, gz: bool = False) -> None:
    """Load ``data`` as the file of loader ``name``: a result, or an InputError naming the file."""
    EXAMPLES[name] += 1
    file_name, load = LOADERS[name]
    with tempfile.TemporaryDirectory() as folder, small_limits():
        path = Path(folder) / (file_name + (".gz" if gz else ""))
        path.write_bytes(data)
        try:
            load(path)
        except InputError as err:
            message = str(err)
            assert path.name in message, message
            assert len(message) < MAX_MESSAGE, message[:2000]


# ---------------------------------------------------------------------------- hostile values


# ---------------------------------------------------------------------------- structure-aware mutation


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` cut, spliced, or with hostile bytes inserted."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["cut", "insert", "flip", "repeat", "drop"]))
        if op == "cut":
            data = data[:at]
        elif op == "insert":
            piece = draw(st.sampled_from([b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\xc3", b"\n", b"\r", b"\t", b'"',
                                          b"[" * 80, b"{" * 70, b"1" + b"0" * 5000, b"\\", b"\x1b"]) | st.binary(max_size=8))
            data = data[:at] + piece + data[at:]
        elif op == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
        elif op == "repeat":
            end = draw(st.integers(at, min(len(data), at + 200)))
            data = data[:at] + data[at:end] * draw(st.integers(2, 300)) + data[at:]
        elif op == "drop":
            end = draw(st.integers(at, min(len(data), at + 40)))
            data = data[:at] + data[end:]
    return data


@st.composite
def packed(draw: st.DrawFn, structured: st.SearchStrategy[bytes], *, gz_ok: bool) -> tuple[bytes, bool]:
    """A file's bytes and whether it is gzipped: mostly a structure-aware input, sometimes damaged byte by
    byte, sometimes raw bytes; gzipped ones may be cut short or corrupted."""
    kind = draw(st.integers(0, 7))
    data = draw(st.binary(max_size=3000)) if kind == 0 else draw(structured)
    if kind in (1, 2):
        data = draw(damaged(data))
    gz = gz_ok and draw(st.integers(0, 5)) == 0
    if gz:
        data = gzip.compress(data, mtime=0)
        if draw(st.booleans()):
            data = draw(damaged(data))
    return data, gz


def inputs(structured: st.SearchStrategy[bytes], *, gz_ok: bool = True) -> st.SearchStrategy[tuple[bytes, bool]]:
    return packed(structured, gz_ok=gz_ok)


def json_document(seed: Any) -> st.SearchStrategy[bytes]:
    return mutated(seed).map(_json)


TOKENS = st.one_of(short_texts, st.sampled_from(["-1", "1.5", "nan", "inf", "1" + "0" * 5000, "0x10", "1_0", "١"]),
                   st.integers(0, 5).flatmap(lambda pick: huge_texts if pick == 0 else short_texts))


@st.composite
def mutated_row(draw: st.DrawFn, seed: list[str]) -> list[str]:
    """A row of a column file with a few tokens replaced, added or dropped."""
    row = list(seed)
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["replace", "add", "drop"]))
        at = draw(st.integers(0, max(len(row) - 1, 0)))
        if op == "add":
            row.insert(at, draw(TOKENS))
        elif row and op == "replace":
            row[at] = draw(TOKENS)
        elif row:
            del row[at]
    return row


def rows(seed_rows: list[list[str]]) -> st.SearchStrategy[list[list[str]]]:
    return st.lists(st.sampled_from(seed_rows).flatmap(mutated_row), min_size=1, max_size=8)


def column_file(seed_rows: list[list[str]], separators: list[str]) -> st.SearchStrategy[bytes]:
    def join(parts: tuple[list[list[str]], str, str, bool]) -> bytes:
        table, sep, end, bom = parts
        text = "".join(sep.join(row) + end for row in table)
        return ("\ufeff" if bom else "").encode() + text.encode("utf-8", "surrogatepass")
    return st.tuples(rows(seed_rows), st.sampled_from(separators), st.sampled_from(["\n", "\r\n", "\r"]),
                     st.booleans()).map(join)


# ---------------------------------------------------------------------------- seeds (valid files)
HAND_SEED: dict[str, Any] = {
    "secret": False,
    "queries": [
        {"id": "q1", "text": "what causes ocean tides",
         "questions": ["What pulls the oceans?", {"text": "How often?", "answers": ["twice"], "choices": ["once", "twice"],
                                                  "required": True, "weight": 2, "id": "q1/x"}],
         "nuggets": ["the moon", {"text": "the sun", "weight": 0.5, "required": False, "id": "q1/n"}],
         "facets": [{"id": "f1", "text": "tidal energy", "questions": ["Where?"], "nuggets": ["turbines"]}]},
        {"id": "q2", "text": "second query", "nuggets": ["x"]},
    ],
}
WB_BANK_SEED: list[Any] = [
    {"query_id": "q1", "query_text": "tides", "info": None, "items": [
        {"query_id": "q1", "question_id": "q1/a", "question_text": "What?", "gold_answers": ["moon"],
         "choices": ["a", "b"], "weight": 1.5, "required": True},
        {"nugget_id": "q1/n", "nugget_text": "the moon"}]},
    {"query_id": 2, "facet_id": "f1", "query_text": "title / facet", "facet_text": "facet", "secret": False,
     "questions": [{"question_text": "Why?"}]},
]
_GRADES = {"correctAnswered": ["q1/a"], "wrongAnswered": ["q1/b"], "answers": [["q1/a", "x"], ["q1/b", "y"]],
           "llm": "m", "llm_options": {}, "prompt_info": {"prompt_class": "C"},
           "self_ratings": [{"question_id": "q1/a", "self_rating": 5}, {"nugget_id": "q1/b", "self_rating": 1}]}
_PARAGRAPH = {"paragraph_id": "p1", "text": "answers a", "paragraph": "",
              "paragraph_data": {"judgments": [{"paragraphId": "p1", "query": "q1", "relevance": 2}],
                                 "rankings": [{"method": "good", "paragraphId": "p1", "queryId": "q1", "rank": 1,
                                               "score": 1.0}]},
              "exam_grades": [_GRADES, {"correctAnswered": ["q1/a"], "wrongAnswered": []}],
              "grades": [{"correctAnswered": True, "self_ratings": 3, "answer": "yes", "llm": "m",
                          "prompt_info": {"prompt_class": "D"}}]}
PARAGRAPH_SEED: list[Any] = [
    ["q1", [_PARAGRAPH, {**_PARAGRAPH, "paragraph_id": "p2", "text": "other",
                         "paragraph_data": {"rankings": [{"method": "good", "rank": 2, "score": 0.5}]}}]],
    [2, [{"paragraph_id": "p3", "text": "t", "paragraph_data": {"rankings": [{"method": "weak", "rank": 0}]}}]],
]
RESPONSES_SEED: list[Any] = [
    {"query_id": "q1", "run": "gen", "response": "The moon pulls. The sun too.\n\nA second paragraph."},
    {"query_id": 2, "system": "other", "response": ""},
]
COLLECTION_JSONL_SEED: list[Any] = [{"id": "p1", "text": "a passage"}, {"docid": 7, "contents": "another"}]
LEADERBOARD_SEED: dict[str, Any] = {"good": 1, "weak": 2.5, "third": 3}
REPORT_SEED: Any = json.loads((GOLDEN / "exam-report.json").read_text(encoding="utf-8"))
QUERIES_SEED: dict[str, Any] = {"q1": "ocean tides", "q2": "the moon"}
FACETS_SEED: dict[str, Any] = {"q1": {"f1": "energy", "f2": "causes"}, "q2": {"f1": "phases"}}


# ---------------------------------------------------------------------------- YAML specifics
ALIAS_BOMB = "".join(f"{c}: &{c} [" + ", ".join([f"*{chr(ord(c) - 1)}"] * 9) + "]\n" for c in "bcdefghij")
YAML_SNIPPETS = ["&a [1, 2]", "*a", "!!int abc", "!!int ''", "!!timestamp 2001-13-45", "2001-13-45", "!!binary xx",
                 "!!float x", "!!bool maybe", "!!python/object:os.system ls", "!foo bar", "!!map [1]",
                 "0x" + "F" * 5000, "1" + "0" * 400, "[" * 70 + "]" * 70, "{a: " * 70 + "1" + "}" * 70, "? [a]",
                 "'unterminated", "\t", "!!set {a, b}", "!!omap [a: 1]", "|\n  block", "&x {<<: *x}"]
YAML_DOCUMENTS = ["a: &a [lol, lol]\n" + ALIAS_BOMB + "queries: *j\n", "--- 1\n--- 2\n", "%YAML 1.1\n---\nqueries: []\n",
                  "".join("  " * i + "- \n" for i in range(80)), "".join("  " * i + "k:\n" for i in range(80)),
                  "queries:\n" + "  - id: q\n    text: t\n    nuggets: [x]\n" * 40]


@st.composite
def yaml_document(draw: st.DrawFn) -> bytes:
    """The hand-bank seed mutated and dumped as YAML, with a YAML snippet (alias, tag, deep flow) in place
    of one value, or a hostile document of its own."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(YAML_DOCUMENTS)).encode()
    doc = draw(mutated(HAND_SEED))
    marker = "SNIPPET_MARKER"
    slots = _slots(doc)
    if len(slots) > 0 and draw(st.booleans()):
        container, key = draw(st.sampled_from(slots))
        container[key] = marker
    text = yaml.safe_dump(doc, allow_unicode=True, default_flow_style=draw(st.sampled_from([False, None, True])),
                          sort_keys=False)
    text = text.replace(marker, draw(st.sampled_from(YAML_SNIPPETS)))
    return text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------- one test per loader
@pytest.mark.slow
@fuzz_settings
@given(data=inputs(yaml_document(), gz_ok=False))
@example(data=(b"queries:\n  - id: 2001-13-45\n    text: t\n    nuggets: [x]\n", False))  # ValueError: month
@example(data=(b"queries:\n  - id: q\n    text: t\n    nuggets:\n      - {text: x, weight: 1" + b"0" * 400 + b"}\n",
               False))  # OverflowError: int too large for a float
@example(data=(b"queries:\n  - id: q\n    text: t\n    nuggets: [!!int '']\n", False))  # IndexError in PyYAML
@example(data=(b"queries:\n  - id: q\n    text: !!bool maybe\n    nuggets: [x]\n", False))  # KeyError in PyYAML
@example(data=(("a: &a [lol]\n" + ALIAS_BOMB + "queries: *j\n").encode(), False))  # billion laughs
@example(data=(b"queries: " + b"[" * 50_000 + b"]" * 50_000, False))  # segfault of the C loader's composer
@example(data=(b"queries: 0x" + b"F" * 4000 + b"\n", False))  # ValueError: repr of an int past 4300 digits
def test_hand_bank_yaml(data: tuple[bytes, bool]) -> None:
    check("hand-yaml", *data)


@fuzz_settings
@given(data=inputs(json_document(HAND_SEED), gz_ok=False))
@example(data=(b'{"queries": ' + b"[" * 5000 + b"]" * 5000 + b"}", False))  # RecursionError
@example(data=(b'{"queries": [{"id": "q", "text": "t", "nuggets": [{"text": "x", "weight": 1' + b"0" * 400 + b"}]}]}",
               False))  # OverflowError
@example(data=(b'{"queries": 1' + b"0" * 5000 + b"}", False))  # ValueError: int digits limit
def test_hand_bank_json(data: tuple[bytes, bool]) -> None:
    check("hand-json", *data)


@fuzz_settings
@given(data=inputs(json_lines(WB_BANK_SEED)))
@example(data=(b'{"query_id": "q", "query_text": "t", "items": [{"nugget_text": "x", "weight": 1' + b"0" * 400
               + b"}]}\n", False))  # OverflowError: float(weight)
@example(data=(b"[" * 100_000 + b"]" * 100_000 + b"\n", False))  # RecursionError
def test_workbench_bank(data: tuple[bytes, bool]) -> None:
    check("workbench-bank", *data)


@fuzz_settings
@given(data=inputs(column_file([["q1", "Q0", "p1", "1", "3.5", "bm25"], ["q1", "Q0", "p2", "2", "-1e3", "bm25"],
                                ["2", "Q0", "p1", "0", "1", "other"]], [" ", "\t", "  "])))
@example(data=(gzip.compress(b"q1 Q0 p1 1 1 r\n" * 200)[:30] + b"\xff" * 300, True))  # zlib.error
@example(data=("q1 Q0 p1 1 1 \u202e\n".encode(), False))  # ValidationError: the models refuse format characters
def test_trec_run(data: tuple[bytes, bool]) -> None:
    check("trec-run", *data)


@fuzz_settings
@given(data=inputs(column_file([["id", "text"], ["p1", "a passage"], ["p2", "another passage text"],
                                ["p3", "a\ttab"]], ["\t"])))
def test_collection_tsv(data: tuple[bytes, bool]) -> None:
    check("collection-tsv", *data)


@fuzz_settings
@given(data=inputs(json_lines(COLLECTION_JSONL_SEED)))
def test_collection_jsonl(data: tuple[bytes, bool]) -> None:
    check("collection-jsonl", *data)


@fuzz_settings
@given(data=inputs(json_lines(RESPONSES_SEED)))
def test_responses(data: tuple[bytes, bool]) -> None:
    check("responses", *data)


@fuzz_settings
@given(data=inputs(json_lines(PARAGRAPH_SEED)))
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "paragraph_data": {"rankings": [{"method": "m", '
               b'"rank": 1, "score": 1' + b"0" * 400 + b"}]}}]]\n", False))  # ValidationError: score
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "exam_grades": [{"answers": 5}]}]]\n',
               False))  # TypeError: enumerate(5)
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "exam_grades": [{"correctAnswered": [[1]]}]}]]\n',
               False))  # TypeError: unhashable list
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "exam_grades": [{"answers": [[[1], "a"]]}]}]]\n',
               False))  # TypeError re-raised
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "exam_grades": [{"self_ratings": 3}]}]]\n',
               False))  # TypeError: enumerate(3)
@example(data=(b'["q1", [{"paragraph_id": "p", "text": "t", "paragraph_data": {"rankings": [{"method": {}, "rank": 1}]}}]]\n',
               False))  # TypeError: unhashable method
def test_paragraph_file(data: tuple[bytes, bool]) -> None:
    check("paragraphs", *data)


@fuzz_settings
@given(data=inputs(json_document(LEADERBOARD_SEED), gz_ok=False))
@example(data=(b'{"a": 1' + b"0" * 400 + b"}", False))  # OverflowError: math.isfinite
def test_leaderboard(data: tuple[bytes, bool]) -> None:
    check("leaderboard", *data)


@fuzz_settings
@given(data=inputs(column_file([["q1", "0", "p1", "2"], ["q1", "0", "p2", "0"], ["2", "Q0", "p1", "-1"]],
                               [" ", "\t"])))
def test_qrels(data: tuple[bytes, bool]) -> None:
    check("qrels", *data)


@fuzz_settings
@given(data=inputs(json_document(QUERIES_SEED) | column_file([["q1", "ocean tides"], ["#", "comment"], ["q2", "moon"]],
                                                             ["\t"]), gz_ok=False))
def test_queries(data: tuple[bytes, bool]) -> None:
    check("queries", *data)


@fuzz_settings
@given(data=inputs(json_document(FACETS_SEED) | column_file([["q1", "f1", "energy"], ["q2", "f1", "phases"]], ["\t"]),
                   gz_ok=False))
def test_facets(data: tuple[bytes, bool]) -> None:
    check("facets", *data)


@fuzz_settings
@given(data=inputs(json_document(REPORT_SEED), gz_ok=False))
@example(data=(b"[" * 100_000, False))  # RecursionError
@example(data=(json.dumps({**REPORT_SEED, "n_queries": 10 ** 400}).encode(), False))  # OverflowError: math.isfinite
def test_report(data: tuple[bytes, bool]) -> None:
    check("report", *data)


FUZZ_TESTS: dict[str, Callable[[], None]] = {
    "hand-yaml": test_hand_bank_yaml, "hand-json": test_hand_bank_json, "workbench-bank": test_workbench_bank,
    "trec-run": test_trec_run, "collection-tsv": test_collection_tsv, "collection-jsonl": test_collection_jsonl,
    "responses": test_responses, "paragraphs": test_paragraph_file, "leaderboard": test_leaderboard,
    "qrels": test_qrels, "queries": test_queries, "facets": test_facets, "report": test_report,
}


def test_every_loader_is_fuzzed() -> None:
    assert set(FUZZ_TESTS) == set(LOADERS)


# ---------------------------------------------------------------------------- the depth pre-scan
def _depth(value: Any) -> int:
    return 1 + max(map(_depth, value.values() if isinstance(value, dict) else value), default=0) \
        if isinstance(value, (dict, list)) else 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\/bfnrtu ,:ab\x00é'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ab'), inner, max_size=3),
    max_leaves=40,
)


@fuzz_settings
@given(value=json_values, limit=st.integers(0, 12), ascii_only=st.booleans())
def test_depth_prescan_matches_the_parsed_depth(value: Any, limit: int, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert json_too_deep(data, limit) == (_depth(value) > limit)


# ---------------------------------------------------------------------------- past the real limits
MEMORY_BOUND_MIB = 256  # what refusing a hostile input may add to the peak resident memory (VmHWM)
ROOT = REPO


def _gzip_of(unit: bytes, count: int) -> bytes:
    """``unit * count`` gzipped without holding the whole of it in memory."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = unit * max(1, (1 << 20) // len(unit))
    parts = [packer.compress(block) for _ in range(max(1, len(unit) * count // len(block)))]
    return b"".join([*parts, packer.flush()])


HOSTILE: dict[str, tuple[Callable[[Path], object], str, Callable[[], bytes]]] = {
    # case: (loader, file name, the bytes); each must be refused within the real limits
    "alias-bomb": (load_hand_bank, "bank.yaml",
                   lambda: ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + ALIAS_BOMB + "queries: *j\n").encode()),
    "yaml-flow-1M-deep": (load_hand_bank, "bank.yaml", lambda: b"queries: " + b"[" * 1_000_000 + b"]" * 1_000_000),
    "yaml-block-deep": (load_hand_bank, "bank.yaml", lambda: "".join("  " * i + "- \n" for i in range(3000)).encode()),
    "json-1M-deep": (load_hand_bank, "bank.json", lambda: b'{"queries": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}"),
    "json-too-many-values": (load_hand_bank, "bank.json", lambda: b"[" + b"0," * 1_100_000 + b"0]"),
    "jsonl-1M-deep": (read_paragraph_file, "graded.jsonl", lambda: b'["q1", ' + b"[" * 1_000_000 + b"]" * 1_000_001),
    "file-too-large": (load_leaderboard, "official.json", lambda: b'{"a": "' + b"x" * (33 << 20) + b'"}'),
    "line-too-long": (read_collection_tsv, "collection.tsv", lambda: b"p1\t" + b"x" * (33 << 20) + b"\n"),
    "gzip-bomb-one-line": (read_trec_run, "system.run.gz", lambda: _gzip_of(b"x", 200 << 20)),
    "gzip-bomb-blank-lines": (load_workbench_bank, "bank.jsonl.gz", lambda: _gzip_of(b"\n", 200 << 20)),
    "response-too-long": (read_responses, "gen.responses.jsonl",
                          lambda: b'{"query_id": "q", "run": "r", "response": "' + b"a " * 600_000 + b'"}\n'),
    "report-of-bad-entries": (read_report, "report.json", lambda: b'{"schema_version": "2.0", "per_query": ['
                              + b", ".join([b'{"run": 1}'] * 400_000) + b"]}"),
    "passage-too-long": (read_paragraph_file, "graded.jsonl",
                         lambda: b'["q", [{"paragraph_id": "p", "text": "' + b"a" * (17 << 20) + b'"}]]\n'),
}

# Loads one file in a fresh interpreter: the outcome, and the peak resident memory it added.
_CHILD = """
import importlib, json, sys
from exam_harness.core.errors import InputError
load = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])
def status_kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as refs:  # restart the peak (VmHWM, ru_maxrss) from here
    refs.write("5")
before = status_kib("VmRSS")
try:
    load(__import__("pathlib").Path(sys.argv[3]))
    outcome, message = "ok", ""
except InputError as err:
    outcome, message = "InputError", str(err)
grown = status_kib("VmHWM") - before
print(json.dumps({"outcome": outcome, "message": message, "grown_kib": grown}))
"""


def load_in_child(load: Callable[[Path], object], path: Path) -> dict[str, Any]:
    """Run ``load(path)`` in a fresh interpreter; its outcome and peak memory growth. The timeout only
    catches a hang (a refusal takes well under a second to a few seconds)."""
    module, name = load.__module__, load.__qualname__
    done = subprocess.run([sys.executable, "-c", _CHILD, module, name, str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_input_is_refused_within_bounds(tmp_path: Path, case: str) -> None:
    load, name, make = HOSTILE[case]
    path = tmp_path / name
    path.write_bytes(make())
    result = load_in_child(load, path)
    assert result["outcome"] == "InputError", result
    assert name in result["message"] and len(result["message"]) < MAX_MESSAGE, result["message"][:2000]
    assert result["grown_kib"] < MEMORY_BOUND_MIB * 1024, result
