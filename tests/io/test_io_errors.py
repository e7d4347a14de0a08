"""Bad input must give an InputError naming the file, line, field and bad value."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import InputError
from exam_harness.io import load_bank, load_leaderboard, load_runs
from exam_harness.io.handbank import load_hand_bank

COLLECTION = "D1\tfirst passage\nD2\tsecond passage\nD3\tthird passage\n"
TIDES = "queries:\n  - id: q1\n    text: tides\n"
WB_Q = '"query_id": "q1", "query_text": "tides"'
PARA = (
    '["q1", [{{"paragraph_id": "D1", "text": "t", '
    '"paragraph_data": {{"judgments": [], "rankings": [{rk}]}}, "exam_grades": [{eg}]}}]]\n'
)
EG = '{{"correctAnswered": [], "wrongAnswered": [], "answers": [], "llm": "m", "self_ratings": [{sr}]}}'

# (case id, files {name: content}, loader, file named in the message, line, field, bad value or None)
CASES: list[tuple[str, dict[str, str], str, str, int, str, object]] = [
    ("yaml-unknown-query-key", {"b.yaml": TIDES + "    questoins: [a]\n"}, "bank", "b.yaml", 4, "questoins", None),
    (
        "yaml-query-id-space",
        {"b.yaml": "queries:\n  - id: q 1\n    text: t\n    questions: [a]\n"},
        "bank",
        "b.yaml",
        2,
        "id",
        "q 1",
    ),
    (
        "yaml-negative-weight",
        {"b.yaml": TIDES + "    nuggets:\n      - text: moon\n        weight: -1\n"},
        "bank",
        "b.yaml",
        6,
        "weight",
        -1,
    ),
    (
        "yaml-weight-not-number",
        {"b.yaml": TIDES + "    nuggets:\n      - text: moon\n        weight: heavy\n"},
        "bank",
        "b.yaml",
        6,
        "weight",
        "heavy",
    ),
    (
        "yaml-required-not-bool",
        {"b.yaml": TIDES + "    questions:\n      - text: why?\n        required: maybe\n"},
        "bank",
        "b.yaml",
        6,
        "required",
        "maybe",
    ),
    (
        "yaml-duplicate-query",
        {"b.yaml": TIDES + "    questions: [a]\n  - id: q1\n    text: again\n    questions: [b]\n"},
        "bank",
        "b.yaml",
        5,
        "id",
        "q1",
    ),
    (
        "yaml-duplicate-text",
        {"b.yaml": TIDES + "    questions:\n      - why?\n      - why?\n"},
        "bank",
        "b.yaml",
        6,
        "text",
        "why?",
    ),
    ("yaml-empty-query", {"b.yaml": TIDES + "    questions: []\n"}, "bank", "b.yaml", 2, "questions", None),
    (
        "yaml-unknown-question-key",
        {"b.yaml": TIDES + "    questions:\n      - text: why?\n        answer: x\n"},
        "bank",
        "b.yaml",
        6,
        "answer",
        None,
    ),
    (
        "yaml-nugget-choices",
        {"b.yaml": TIDES + "    nuggets:\n      - text: moon\n        choices: [a]\n"},
        "bank",
        "b.yaml",
        6,
        "choices",
        None,
    ),
    (
        "yaml-facet-without-text",
        {"b.yaml": TIDES + "    facets:\n      - id: f1\n        questions: [a]\n"},
        "bank",
        "b.yaml",
        5,
        "text",
        None,
    ),
    (
        "yaml-query-without-text",
        {"b.yaml": "queries:\n  - id: q1\n    questions: [a]\n"},
        "bank",
        "b.yaml",
        2,
        "text",
        None,
    ),
    (
        "yaml-secret-not-bool",
        {"b.yaml": "secret: sometimes\n" + TIDES + "    questions: [a]\n"},
        "bank",
        "b.yaml",
        1,
        "secret",
        "sometimes",
    ),
    ("yaml-questions-not-list", {"b.yaml": TIDES + "    questions: why?\n"}, "bank", "b.yaml", 4, "questions", "why?"),
    (
        "json-questions-not-list",
        {"b.json": '{\n  "queries": [\n    {"id": "q1",\n     "text": "t",\n     "questions": 3}\n  ]\n}\n'},
        "bank",
        "b.json",
        5,
        "questions",
        3,
    ),
    (
        "json-unknown-top-key",
        {"b.json": '{\n  "queries": [],\n  "secrets": true\n}\n'},
        "bank",
        "b.json",
        3,
        "secrets",
        None,
    ),
    ("json-duplicate-key", {"b.json": '{"queries": [\n {"id": "q1", "id": "q2"}]}\n'}, "bank", "b.json", 2, "id", None),
    (
        "workbench-item-kind",
        {
            "b.jsonl": "{"
            + WB_Q
            + ', "items": [{"question_id": "q1/a", "question_text": "x"}]}\n{'
            + WB_Q.replace("q1", "q2")
            + ', "items": [{"text": "x"}]}\n'
        },
        "bank",
        "b.jsonl",
        2,
        "items[0]",
        None,
    ),
    (
        "workbench-no-query-id",
        {"b.jsonl": '{"query_text": "t", "items": [{"nugget_text": "x"}]}\n'},
        "bank",
        "b.jsonl",
        1,
        "query_id",
        None,
    ),
    ("workbench-empty-items", {"b.jsonl.gz": "{" + WB_Q + ', "items": []}\n'}, "bank", "b.jsonl.gz", 1, "items", None),
    (
        "workbench-id-clash",
        {
            "b.jsonl": "{"
            + WB_Q
            + ', "questions": [{"question_id": "q1/a", "question_text": "x"}, '
            + '{"question_id": "q1/a", "question_text": "y"}]}\n'
        },
        "bank",
        "b.jsonl",
        1,
        "questions[1].question_id",
        "q1/a",
    ),
    (
        "workbench-gold-not-list",
        {"b.jsonl": "{" + WB_Q + ', "items": [{"question_text": "x", "gold_answers": "yes"}]}\n'},
        "bank",
        "b.jsonl",
        1,
        "items[0].gold_answers",
        "yes",
    ),
    (
        "trec-columns",
        {"collection.tsv": COLLECTION, "a.run": "q1 Q0 D1 1 2.0 bm25\nq1 Q0 D2 2 bm25\n"},
        "runs",
        "a.run",
        2,
        "line",
        "q1 Q0 D2 2 bm25",
    ),
    (
        "trec-rank-text",
        {"collection.tsv": COLLECTION, "a.run": "q1 Q0 D1 first 2.0 bm25\n"},
        "runs",
        "a.run",
        1,
        "rank",
        "first",
    ),
    (
        "trec-rank-negative",
        {"collection.tsv": COLLECTION, "a.trec": "q1 Q0 D1 1 2 bm25\nq1 Q0 D2 -2 1 bm25\n"},
        "runs",
        "a.trec",
        2,
        "rank",
        "-2",
    ),
    (
        "trec-score-text",
        {"collection.tsv": COLLECTION, "a.run.gz": "q1 Q0 D1 1 high bm25\n"},
        "runs",
        "a.run.gz",
        1,
        "score",
        "high",
    ),
    (
        "trec-duplicate-docid",
        {"collection.tsv": COLLECTION, "a.run": "q1 Q0 D1 1 2 bm25\nq1 Q0 D2 2 1 bm25\nq1 Q0 D1 3 0 bm25\n"},
        "runs",
        "a.run",
        3,
        "docid",
        "D1",
    ),
    (
        "trec-docid-missing",
        {"collection.tsv": COLLECTION, "a.run": "q1 Q0 D1 1 2 bm25\nq1 Q0 D9 2 1 bm25\n"},
        "runs",
        "a.run",
        2,
        "docid",
        "D9",
    ),
    (
        "tsv-no-tab",
        {"collection.tsv": "D1\tfine\nD2 no tab here\n"},
        "runs",
        "collection.tsv",
        2,
        "passage_id",
        "D2 no tab here",
    ),
    (
        "tsv-id-space",
        {"x.collection.tsv": "D1\tfine\nD 2\tspace in id\n"},
        "runs",
        "x.collection.tsv",
        2,
        "passage_id",
        "D 2",
    ),
    ("tsv-text-conflict", {"collection.tsv": "D1\tfine\nD1\tother\n"}, "runs", "collection.tsv", 2, "passage_id", "D1"),
    (
        "collection-jsonl-no-text",
        {"collection.jsonl": '{"id": "D1", "text": "a"}\n{"id": "D2", "body": "b"}\n'},
        "runs",
        "collection.jsonl",
        2,
        "text/contents",
        None,
    ),
    (
        "responses-run-and-system",
        {"g.responses.jsonl": '{"query_id": "q1", "run": "a", "system": "b", "response": "x"}\n'},
        "runs",
        "g.responses.jsonl",
        1,
        "system",
        "b",
    ),
    (
        "responses-duplicate",
        {
            "g.responses.jsonl": '{"query_id": "q1", "run": "a", "response": "x"}\n'
            + '{"query_id": "q1", "run": "a", "response": "y"}\n'
        },
        "runs",
        "g.responses.jsonl",
        2,
        "query_id",
        "q1",
    ),
    (
        "responses-run-space",
        {"g.responses.jsonl": '{"query_id": "q1", "run": "my run", "response": "x"}\n'},
        "runs",
        "g.responses.jsonl",
        1,
        "run",
        "my run",
    ),
    (
        "responses-not-text",
        {"g.responses.jsonl": '\n{"query_id": "q1", "run": "a", "response": ["x"]}\n'},
        "runs",
        "g.responses.jsonl",
        2,
        "response",
        ["x"],
    ),
    (
        "paragraph-rank-negative",
        {"p.jsonl.gz": PARA.format(rk='{"method": "bm25", "rank": -1, "score": 1.0}', eg="")},
        "runs",
        "p.jsonl.gz",
        1,
        "[1][0].paragraph_data.rankings[0].rank",
        -1,
    ),
    (
        "paragraph-self-rating",
        {"p.jsonl": "\n" + PARA.format(rk="", eg=EG.format(sr='{"question_id": "q1/a", "self_rating": 7}'))},
        "runs",
        "p.jsonl",
        2,
        "[1][0].exam_grades[0].self_ratings[0].self_rating",
        7,
    ),
    (
        "paragraph-relevance",
        {
            "p.jsonl": PARA.replace('"judgments": []', '"judgments": [{{"query": "q1", "relevance": "high"}}]').format(
                rk="", eg=""
            )
        },
        "runs",
        "p.jsonl",
        1,
        "[1][0].paragraph_data.judgments[0].relevance",
        "high",
    ),
    (
        "leaderboard-not-number",
        {"lb.json": '{\n "a": 1,\n "b": "second"\n}\n'},
        "leaderboard",
        "lb.json",
        3,
        "b",
        "second",
    ),
    ("leaderboard-bool", {"lb.json": '{"a": 1, "b": true}'}, "leaderboard", "lb.json", 1, "b", True),
]


def _write(folder: Path, name: str, content: str) -> Path:
    path = folder / name
    data = content.encode("utf-8")
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize(
    ("files", "loader", "target", "line", "field", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_reported_precisely(
    tmp_path: Path, files: dict[str, str], loader: str, target: str, line: int, field: str, value: object
) -> None:
    paths = {name: _write(tmp_path, name, content) for name, content in files.items()}
    loaders = {"bank": lambda: load_bank(paths[target]), "leaderboard": lambda: load_leaderboard(paths[target])}
    with pytest.raises(InputError) as info:
        loaders.get(loader, lambda: load_runs([tmp_path]))()
    err = info.value
    message = str(err)
    assert f"{target}:{line}:" in message, message
    assert Path(err.path or "").name == target
    assert err.line == line
    assert f"field {field!r}" in message, message
    if value is not None:
        assert repr(value) in message, message
    assert err.expected or "expected" in message or "first" in message, message


def test_case_table_is_large_enough() -> None:
    assert len(CASES) >= 20
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        ("b.yaml", "queries:\n  - id: q1\n    text: [unclosed\n", 4),
        ("b.json", '{"queries": [\n  {"id": "q1",\n   "text": }\n]}', 3),
        ("b.jsonl", '{"query_id": "q1", "query_text": "t", "items": [{"nugget_text": "x"}]}\n{"query_id": \n', 2),
    ],
)
def test_syntax_errors_give_the_line(tmp_path: Path, name: str, content: str, line: int) -> None:
    path = _write(tmp_path, name, content)
    with pytest.raises(InputError) as info:
        load_bank(path)
    assert info.value.line == line
    assert f"{name}:{line}:" in str(info.value)


def test_passage_with_two_texts_names_both_files(tmp_path: Path) -> None:
    _write(tmp_path, "a.collection.tsv", "D1\tone text\n")
    _write(tmp_path, "b.collection.tsv", "D1\tanother text\n")
    _write(tmp_path, "r.run", "q1 Q0 D1 1 1 bm25\n")
    with pytest.raises(InputError) as info:
        load_runs([tmp_path])
    message = str(info.value)
    assert "a.collection.tsv:1" in message and "b.collection.tsv:1" in message


def test_run_tag_in_two_files_names_both(tmp_path: Path) -> None:
    _write(tmp_path, "collection.tsv", COLLECTION)
    _write(tmp_path, "a.run", "q1 Q0 D1 1 1 bm25\n")
    _write(tmp_path, "b.run", "q2 Q0 D2 1 1 other\nq2 Q0 D2 1 1 bm25\n")
    with pytest.raises(InputError) as info:
        load_runs([tmp_path])
    message = str(info.value)
    assert "b.run:2" in message and "a.run:1" in message and "'bm25'" in message


def test_generated_run_name_clashing_with_trec_run(tmp_path: Path) -> None:
    _write(tmp_path, "collection.tsv", COLLECTION)
    _write(tmp_path, "a.run", "q1 Q0 D1 1 1 gpt\n")
    _write(tmp_path, "b.responses.jsonl", '{"query_id": "q1", "run": "gpt", "response": "text"}\n')
    with pytest.raises(InputError, match=r"already defined in .*a\.run:1"):
        load_runs([tmp_path])


def test_unrecognised_file_lists_the_recognised_forms(tmp_path: Path) -> None:
    _write(tmp_path, "collection.tsv", COLLECTION)
    _write(tmp_path, "notes.txt", "hello\n")
    with pytest.raises(InputError) as info:
        load_runs([tmp_path])
    message = str(info.value)
    assert (
        "notes.txt" in message and "*.run" in message and "collection.tsv" in message and "*.responses.jsonl" in message
    )


def test_bank_file_in_run_folder_is_explained(tmp_path: Path) -> None:
    _write(tmp_path, "bank.jsonl", '{"query_id": "q1", "query_text": "t", "items": [{"nugget_text": "x"}]}\n')
    with pytest.raises(InputError, match="bank file, not a run file"):
        load_runs([tmp_path])


def test_missing_run_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_runs([tmp_path / "nope"])


def test_missing_docid_counts_the_others(tmp_path: Path) -> None:
    _write(tmp_path, "collection.tsv", COLLECTION)
    _write(tmp_path, "a.run", "q1 Q0 X1 1 3 bm25\nq1 Q0 X2 2 2 bm25\nq1 Q0 D1 3 1 bm25\n")
    with pytest.raises(InputError, match=r"a\.run:1: .*'X1'.*and 1 more missing docids"):
        load_runs([tmp_path])


def test_unknown_bank_suffix(tmp_path: Path) -> None:
    path = _write(tmp_path, "bank.txt", "queries: []\n")
    with pytest.raises(InputError, match="not a bank file name"):
        load_bank(path)


def test_empty_yaml_bank(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty bank file"):
        load_bank(_write(tmp_path, "b.yaml", "# nothing yet\n"))


def test_bad_gzip(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"b\.jsonl\.gz"):
        load_bank(path)


def test_bad_utf8(tmp_path: Path) -> None:
    path = tmp_path / "a.run"
    path.write_bytes(b"q1 Q0 D1 1 1 bm25\nq1 Q0 D\xff 2 1 bm25\n")
    with pytest.raises(InputError, match="UTF-8"):
        load_runs([path])


# --- limits (exam_harness/io/limits.py), lowered so that small files cross them -------------------
def _many_queries(count: int) -> str:
    return "queries:\n" + "".join(f"  - {{id: q{i}, text: t, nuggets: [n{i}]}}\n" for i in range(count))


def _wb_lines(count: int, items: int = 1) -> str:
    return "".join(
        json.dumps({"query_id": f"q{i}", "query_text": "t", "items": [{"nugget_text": f"n{j}"} for j in range(items)]})
        + "\n" for i in range(count)
    )


# (case, file name, content, loader, {limit: lowered value}, line, substrings of the message)
LIMIT_CASES: list[tuple[str, str, str, str, dict[str, int], int | None, tuple[str, ...]]] = [
    ("hand-queries-per-file", "b.yaml", _many_queries(3), "bank", {"MAX_QUERIES_PER_FILE": 2}, 2,
     ("more than 2 queries in one file", "MAX_QUERIES_PER_FILE")),
    ("hand-test-points-per-file", "b.yaml", _many_queries(3), "bank", {"MAX_TEST_POINTS_PER_FILE": 2}, 4,
     ("more than 2 test points in one file", "MAX_TEST_POINTS_PER_FILE")),
    ("hand-test-points-per-bank", "b.yaml", "queries:\n  - {id: q, text: t, nuggets: [a, b], questions: [c]}\n",
     "bank", {"MAX_TEST_POINTS_PER_BANK": 2}, 2, ("more than 2 test points in one bank",)),
    ("hand-values", "b.json", '{"queries": [\n1, 2, 3, 4]}', "bank", {"MAX_DOCUMENT_VALUES": 3}, None,
     ("more than 3 values in one document", "MAX_DOCUMENT_VALUES")),
    ("hand-values-while-parsing", "b.json", '{"queries": [\n[[[1]]]]}', "bank", {"MAX_DOCUMENT_VALUES": 3}, 2,
     ("more than 3 values in one document",)),
    ("yaml-values", "b.yaml", "queries:\n  - 1\n  - 2\n", "bank", {"MAX_DOCUMENT_VALUES": 3}, 2,
     ("more than 3 values",)),
    ("wb-queries-per-file", "b.jsonl", _wb_lines(3), "bank", {"MAX_QUERIES_PER_FILE": 2}, 3,
     ("more than 2 queries in one file",)),
    ("wb-test-points-per-file", "b.jsonl", _wb_lines(3, 2), "bank", {"MAX_TEST_POINTS_PER_FILE": 5}, 3,
     ("more than 5 test points in one file",)),
    ("wb-test-points-per-bank", "b.jsonl", _wb_lines(1, 3), "bank", {"MAX_TEST_POINTS_PER_BANK": 2}, 1,
     ("more than 2 test points in one bank", "'items'")),
    ("file-size", "lb.json", '{"a": 1, "b": 2}', "leaderboard", {"MAX_FILE_BYTES": 8}, None,
     ("file is more than 8 bytes", "MAX_FILE_BYTES")),
    ("gz-file-size", "b.jsonl.gz", _wb_lines(1), "bank", {"MAX_LINE_BYTES": 16}, 1,
     ("line longer than 16 bytes",)),
    ("json-line", "a.responses.jsonl", '{"query_id": "q1", "run": "r", "response": "ok"}\n' * 2, "runs",
     {"MAX_LINE_BYTES": 20}, 1, ("line longer than 20 bytes", "MAX_LINE_BYTES")),
    ("run-line", "a.run", "q1 Q0 D1 1 1 bm25\nq1 Q0 D2 2 1 bm25" + " " * 100 + "\n", "runs",
     {"MAX_FIELDS_LINE_BYTES": 64}, 2, ("line longer than 64 bytes", "MAX_FIELDS_LINE_BYTES")),
    ("passage", "collection.tsv", "D1\t" + "x" * 11 + "\n", "runs", {"MAX_PASSAGE_CHARS": 10}, 1,
     ("passage text longer than 10 characters", "MAX_PASSAGE_CHARS")),
    ("response", "a.responses.jsonl", '{"query_id": "q1", "run": "r", "response": "' + "w " * 6 + '"}\n', "runs",
     {"MAX_RESPONSE_CHARS": 10}, 1, ("response longer than 10 characters", "MAX_RESPONSE_CHARS")),
    ("paragraph-passage", "p.jsonl", PARA.format(rk="", eg="").replace('"text": "t"', '"text": "' + "x" * 11 + '"'),
     "runs", {"MAX_PASSAGE_CHARS": 10}, 1, ("passage text longer than 10 characters", "[1][0].text")),
    ("gzip-ratio", "a.run.gz", "\n" * 3_000_000 + "q1 Q0 D1 1 1 bm25\n", "runs", {"MAX_GZIP_RATIO": 10}, None,
     ("decompresses to more than 10 times its size", "MAX_GZIP_RATIO")),
]


@pytest.mark.parametrize(
    ("name", "content", "loader", "lowered", "line", "parts"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
def test_limits_are_enforced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, content: str, loader: str, lowered: dict[str, int],
    line: int | None, parts: tuple[str, ...],
) -> None:
    from exam_harness.io import limits

    for limit, value in lowered.items():
        monkeypatch.setattr(limits, limit, value)
    path = _write(tmp_path, name, content)
    if name.endswith(".tsv"):
        _write(tmp_path, "a.run", "q1 Q0 D1 1 1 bm25\n")
    loaders = {"bank": lambda: load_bank(path), "leaderboard": lambda: load_leaderboard(path)}
    with pytest.raises(InputError) as info:
        loaders.get(loader, lambda: load_runs([tmp_path]))()
    message = str(info.value)
    assert Path(info.value.path or "").name == name, message
    if line is not None:
        assert info.value.line == line, message
    assert all(part in message for part in parts), message


def test_other_readers_refuse_hostile_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from exam_harness.io import limits
    from exam_harness.io.qrels import read_qrels
    from exam_harness.io.queries import load_facets, load_queries
    from exam_harness.results.read import read_report

    cases: list[tuple[str, str, Any, str]] = [
        ("deep.json", '{"q1": ' + "[" * 70 + "]" * 70 + "}", load_queries, "nesting deeper than 64 levels"),
        ("dup.json", '{"q1": "a", "q1": "b"}', load_queries, "duplicate key 'q1'"),
        ("ctl.tsv", "q\x001\ttext\n", load_queries, "bad query id"),
        ("many.tsv", "q1\ta\nq2\tb\nq3\tc\n", load_queries, "more than 2 queries in one file"),
        ("long.tsv", "q1\t" + "word " * 20_000 + "\n", load_queries, "line longer than 64 KiB"),
        ("digits.json", '{"q1": 1' + "0" * 5000 + "}", load_queries, "more digits than can be read"),
        ("facets.json", '{"q1": {"f1": "x", "f1": "y"}}', lambda p: load_facets(p, {"q1"}), "duplicate key 'f1'"),
        ("facets.tsv", "q1\tf\x1b1\ttext\n", lambda p: load_facets(p, {"q1"}), "bad facet id"),
        ("a.qrels", "q1 0 D1 1\nq1 0 D\x002 0\n", read_qrels, "control character (U+0000)"),
        ("b.qrels", "q1 0 D1 1" + "0" * 5000 + "\n", read_qrels, "relevance label is not an integer"),
        ("c.qrels", "q1 0 D1 1 " + "x" * 70_000 + "\n", read_qrels, "line longer than 64 KiB"),
        ("report.json", "[" * 100_000, read_report, "nesting deeper than 64 levels"),
        ("report2.json", '{"schema_version": 1' + "0" * 5000 + "}", read_report, "more digits than can be read"),
    ]
    monkeypatch.setattr(limits, "MAX_QUERIES_PER_FILE", 2)
    for name, content, load, part in cases:
        path = _write(tmp_path, name, content)
        with pytest.raises(InputError) as info:
            load(path)
        assert part in str(info.value) and name in str(info.value), (name, str(info.value))


HUGE = "x" * 100_000
HUGE_VALUE_FILES = {
    "a.responses.jsonl": json.dumps({"query_id": "q1", "run": HUGE + " y", "response": "r"}) + "\n",
    "b.jsonl": json.dumps({"query_id": "q1", "query_text": "t", "items": [{"nugget_id": HUGE, "nugget_text": "a"},
                                                                           {"nugget_id": HUGE, "nugget_text": "b"}]}),
    "c.yaml": f"queries:\n  - id: {HUGE}\n    text: t\n  - id: {HUGE}\n    text: t\n    nuggets: [x]\n",
    "lb.json": json.dumps({HUGE: "first"}),
}


@pytest.mark.parametrize("name", sorted(HUGE_VALUE_FILES))
def test_messages_quote_at_most_80_characters_of_input(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, name, HUGE_VALUE_FILES[name])
    loaders: dict[str, Callable[[], object]] = {"a": lambda: load_runs([path]), "l": lambda: load_leaderboard(path)}
    with pytest.raises(InputError) as info:
        loaders.get(name[0], lambda: load_bank(path))()
    assert len(str(info.value)) < 600, str(info.value)[:700]


def test_a_misspelt_key_is_named_with_its_near_match(tmp_path: Path) -> None:
    bank = tmp_path / "typo.yaml"
    bank.write_text("queries:\n  - id: tides\n    text: what causes tides\n    questoins:\n      - What pulls?\n")
    with pytest.raises(InputError, match=r"typo\.yaml:4: unknown key in a query \(did you mean 'questions'\?\) "
                                         r"\[field 'questoins'\]"):
        load_hand_bank(bank)
    bank.write_text("queries:\n  - id: tides\n    text: what causes tides\n    zzz: 1\n")
    with pytest.raises(InputError, match=r"unknown key in a query \[field 'zzz'\]"):
        load_hand_bank(bank)
