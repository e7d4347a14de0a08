"""TREC RAG answer files and nuggetizer nugget files: read by content, the track's validator rules as input
errors naming file, line and rule, and written back (answers in both formats, nugget banks as nugget files)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import InputError
from exam_harness.features.trec_rag.answers import rag_answer_files, write_rag_answers
from exam_harness.features.trec_rag.nuggets import write_nuggetizer_nuggets
from exam_harness.io.banks import load_bank
from exam_harness.io.runs import load_runs
from tests.trec_rag_data import ANSWERS_2024, ANSWERS_2025, NUGGETS, write_lines

pytest_plugins = ["pytester"]


def load_error(tmp_path: Path, rows: list[Any]) -> InputError:
    path = write_lines(tmp_path / "answers.jsonl", rows)
    with pytest.raises(InputError) as caught:
        load_runs([path])
    assert caught.value.path == str(path)
    return caught.value


def test_both_formats_read_as_generated_runs(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "a.jsonl", ANSWERS_2024)
    b = write_lines(tmp_path / "b.jsonl", ANSWERS_2025)
    loaded = load_runs([a, b])
    assert sorted(loaded.data.runs) == ["rag24", "rag25"]
    assert set(loaded.data.runs["rag24"].rankings) == {"t1", "2"}  # the int topic id read as a string
    answer = loaded.answers["rag25"]["t1"]
    assert answer.references == ("d2", "d4")
    assert answer.sentences[0].citations == (1, 0)  # a segment-id citation resolved to its index
    assert answer.metadata["type"] == "automatic" and answer.metadata["team_id"] == "team"
    (ranked,) = loaded.data.runs["rag24"].rankings["t1"]
    assert loaded.data.passages[ranked.passage_id].text == "Tides come from moon gravity. The sun matters too."
    assert loaded.responses["rag24"]["t1"] == "Tides come from moon gravity. The sun matters too."
    assert loaded.data.runs["rag24"].generated


def test_an_answer_over_400_words_is_read_whole_with_one_warning(tmp_path: Path) -> None:
    rows = copy.deepcopy(ANSWERS_2024)
    # 401 words once NFKC-normalised: the ideographic space (U+3000) is whitespace, the ligature "ﬁ" one word
    rows[1]["answer"] = [{"text": "\u3000".join(["ﬁne"] * 200), "citations": []},
                         {"text": " ".join(["word"] * 201), "citations": [0]}]
    rows[1]["response_length"] = 401
    said: list[str] = []
    loaded = load_runs([write_lines(tmp_path / "answers.jsonl", rows)], notify=said.append)
    assert loaded.answers["rag24"]["2"].words == 401  # a warning never refuses nor changes the answer
    assert len(said) == 2 and all(line.startswith("warning: ") and line.endswith(": line 2") for line in said)
    assert any("1 line(s) hold an answer over 400 words" in line for line in said)
    assert any("response_length over 400" in line for line in said)
    rows[1]["answer"][1]["text"] = " ".join(["word"] * 200)  # exactly 400: nothing to say about the words
    rows[1]["response_length"] = 400
    said.clear()
    assert load_runs([write_lines(tmp_path / "ok.jsonl", rows)], notify=said.append).answers["rag24"]["2"].words == 400
    assert said == []


def test_2024_allows_20_references_and_2025_any_number(tmp_path: Path) -> None:
    rows = copy.deepcopy(ANSWERS_2024)
    rows[0]["references"] = [f"d{i}" for i in range(21)]
    error = load_error(tmp_path, rows)
    assert error.line == 1 and error.field == "references" and "21 references, more than 20" in str(error)
    rows25 = copy.deepcopy(ANSWERS_2025)
    rows25[0]["references"] = [*rows25[0]["references"], *(f"x{i}" for i in range(120))]
    loaded = load_runs([write_lines(tmp_path / "r25.jsonl", rows25)], notify=lambda _: None)
    assert len(loaded.answers["rag25"]["t1"].references) == 122


@pytest.mark.parametrize(("cite", "message"), [
    (2, "citation index 2 is out of range"),
    (-1, "citation index -1 is out of range"),
    ("d1", "a 2024 citation is an index into references"),  # 2024 cites by index only
    (True, "citation is no reference of this answer"),
])
def test_a_citation_that_does_not_resolve_is_an_input_error(tmp_path: Path, cite: Any, message: str) -> None:
    rows = copy.deepcopy(ANSWERS_2024)
    rows[0]["answer"][1]["citations"] = [0, cite]
    error = load_error(tmp_path, rows)
    assert error.line == 1 and error.field == "answer[1].citations[1]" and message in str(error)


def test_a_2025_file_with_an_unknown_type_is_an_input_error(tmp_path: Path) -> None:
    rows = copy.deepcopy(ANSWERS_2025)
    rows[1]["metadata"]["type"] = "automatc"
    error = load_error(tmp_path, rows)
    assert error.line == 2 and error.field == "metadata.type"
    assert "unknown run type" in str(error) and "'automatic' or 'manual'" in str(error)


def test_a_flat_2025_line_says_where_the_metadata_belongs(tmp_path: Path) -> None:
    """ragnarok's quickstart shows 2025 lines with team_id, run_id, narrative_id at the top level; its
    converter and validator (rag25_validation.py:validate_entry) keep them under "metadata"."""
    rows = copy.deepcopy(ANSWERS_2025)
    for row in rows:
        row.update(row.pop("metadata"))
    error = load_error(tmp_path, rows)
    assert error.line == 1 and error.field == "metadata"
    assert 'under "metadata"' in str(error) and "top level" in str(error)
    assert "2024 line lacks" not in str(error)


def test_a_second_answer_for_a_topic_is_an_input_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, [*ANSWERS_2024, ANSWERS_2024[0]])
    assert error.line == 3 and "second answer for topic 't1' (first at line 1)" in str(error)


def test_the_input_error_reaches_the_pytest_user(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\nexam_grader = keyword\n")
    write_lines(pytester.path / "banks" / "nuggets.jsonl", NUGGETS)
    rows = copy.deepcopy(ANSWERS_2025)
    rows[0]["metadata"]["type"] = "other"
    write_lines(pytester.path / "runs" / "rag25.jsonl", rows)
    result = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*rag25.jsonl:1*unknown run type*"])


@pytest.mark.parametrize(("fmt", "segment_ids"), [("2024", False), ("2025", False), ("2025", True)])
def test_answers_written_in_either_format_read_back_equal(tmp_path: Path, fmt: str, segment_ids: bool) -> None:
    loaded = load_runs([write_lines(tmp_path / "a.jsonl", ANSWERS_2024), write_lines(tmp_path / "b.jsonl", ANSWERS_2025)],
                       notify=lambda _: None)
    answers = [a for by_query in loaded.answers.values() for a in by_query.values()]
    files = rag_answer_files(answers, fmt, segment_ids)
    assert sorted(files) == ["rag24.jsonl", "rag25.jsonl"]  # one file per run, as the 2024 checker wants
    out = tmp_path / "out"
    for name, text in files.items():
        write_lines(out / name, [json.loads(line) for line in text.splitlines()])
    first = json.loads(files["rag25.jsonl"].splitlines()[0])
    assert ("metadata" in first) == (fmt == "2025")
    if fmt == "2025":
        assert first["answer"][0]["citations"] == (["d4", "d2"] if segment_ids else [1, 0])
    again = load_runs([out], notify=lambda _: None).answers
    for answer in answers:
        back = again[answer.run][answer.query_id]
        assert (back.references, back.sentences, back.query) == (answer.references, answer.sentences, answer.query)
    if fmt == "2025":
        assert again["rag25"]["2"].metadata["type"] == "manual"
    with pytest.raises(ValueError, match="a 2024 TREC RAG file holds one run"):
        write_rag_answers(tmp_path / "both.jsonl", answers, "2024")


def test_nugget_files_are_nugget_banks_and_export_back(tmp_path: Path) -> None:
    banks = load_bank(write_lines(tmp_path / "nuggets.jsonl", NUGGETS))
    assert [b.query.id for b in banks] == ["t1", "2"]
    points = banks[0].test_points
    assert [(p.kind, p.importance, p.weight) for p in points] == [
        ("nugget", "vital", 1.0), ("nugget", "vital", 1.0), ("nugget", "okay", 0.0)]
    out = tmp_path / "export" / "nuggets.jsonl"
    write_nuggetizer_nuggets(out, banks)
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {**row, "qid": str(row["qid"])} for row in NUGGETS]


def test_a_nuggets_other_fields_are_its_metadata_and_export_back(tmp_path: Path) -> None:
    """nuggetizer's nugget fields beside text and importance (``reasoning``, ``trace``) come back as they were; a
    test point whose metadata names a field the nugget's own is written in is refused, never overwritten."""
    rows = [{"query": "what causes tides", "qid": "t1", "nuggets": [
        {"text": "moon gravity", "importance": "vital", "reasoning": "the cause", "trace": {"model": "m", "n": [1, None]}},
        {"text": "sun gravity", "importance": "okay"}]}]
    banks = load_bank(write_lines(tmp_path / "nuggets.jsonl", rows))
    assert dict(banks[0].test_points[0].metadata) == {"reasoning": "the cause", "trace": {"model": "m", "n": (1, None)}}
    out = tmp_path / "export" / "nuggets.jsonl"
    write_nuggetizer_nuggets(out, banks)
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    clash = banks[0].test_points[1].model_copy(update={"metadata": {"text": "another"}})
    with pytest.raises(InputError, match="its metadata holds 'text'"):
        write_nuggetizer_nuggets(out, [banks[0].model_copy(update={"test_points": (clash,)})])
    with pytest.raises(InputError, match=r"nan is no JSON number") as caught:
        load_bank(write_lines(tmp_path / "nan.jsonl", [{"qid": "t1", "query": "q", "nuggets": [
            {"text": "x", "trace": float("nan")}]}]))
    assert (caught.value.line, caught.value.field) == (1, "nuggets[0].trace")


def test_a_lines_other_fields_are_its_banks_metadata_and_export_back(tmp_path: Path) -> None:
    """A nugget line's fields beside qid, query and nuggets (autojudge-base's NuggetizerNuggetBank.full_query, ...)
    are its bank's metadata and come back as they were; a bank whose metadata names a line's own field, or facets of
    a query with different metadata (one line), are refused, never overwritten or dropped."""
    rows = [{"query": "what causes tides", "qid": "t1", "nuggets": [{"text": "moon gravity", "importance": "vital"}],
             "full_query": {"title": "tides", "narrative": ["why", None]}, "run": "r1"}]
    banks = load_bank(write_lines(tmp_path / "nuggets.jsonl", rows))
    assert banks[0].metadata == {"full_query": {"title": "tides", "narrative": ["why", None]}, "run": "r1"}
    out = tmp_path / "export" / "nuggets.jsonl"
    write_nuggetizer_nuggets(out, banks)
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    with pytest.raises(InputError, match="its metadata holds 'qid'"):
        write_nuggetizer_nuggets(out, [banks[0].model_copy(update={"metadata": {"qid": "t2"}})])
    facet = banks[0].model_copy(update={"facet_id": "f", "metadata": {}})
    with pytest.raises(InputError, match="carries other metadata than the first bank of its query"):
        write_nuggetizer_nuggets(out, [banks[0], facet])
    with pytest.raises(InputError, match=r"inf is no JSON number") as caught:
        load_bank(write_lines(tmp_path / "inf.jsonl", [{"qid": "t1", "query": "q", "nuggets": [{"text": "x"}],
                                                        "full_query": [float("inf")]}]))
    assert (caught.value.line, caught.value.field) == (1, "full_query[0]")


@pytest.mark.parametrize(("nugget", "field", "message"), [
    ({"text": "x", "importance": 3}, "nuggets[1].importance", "a nugget importance must be a string"),
    ({"text": "  "}, "nuggets[1]", "non-empty text"),
])
def test_bad_nugget_files_name_line_and_field(tmp_path: Path, nugget: dict[str, Any], field: str, message: str) -> None:
    rows = [NUGGETS[1], {"qid": "t1", "query": "q", "nuggets": [{"text": "moon gravity"}, nugget]}]
    path = write_lines(tmp_path / "nuggets.jsonl", rows)
    with pytest.raises(InputError) as caught:
        load_bank(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert message in str(caught.value)


def test_a_live_systems_cited_answer_is_read_as_a_cited_answer(tmp_path: Path) -> None:
    """A declared system's Answer with cited sentences, as its recording writes the responses line, is read
    back as the same cited answer (support evaluation scores its citations), and a bad citation in it is an
    input error naming file, line and field."""
    from exam_harness.features.live_systems.declare import Answer, Sentence
    from exam_harness.features.live_systems.recording import response_record

    answer = Answer(references=("d1", "d2"),
                    sentences=(Sentence("The moon pulls the water.", (0,)), Sentence("The sun adds to it.", ("d2", 0))))
    path = write_lines(tmp_path / "live.responses.jsonl", [response_record("live", "t1", answer)])
    loaded = load_runs([path])
    assert loaded.responses["live"]["t1"] == "The moon pulls the water. The sun adds to it."
    cited = loaded.answers["live"]["t1"]
    assert cited.text == answer.text and cited.references == ("d1", "d2")
    assert [cited.cited(s) for s in cited.sentences] == [["d1"], ["d2", "d1"]]

    record = response_record("live", "t1", answer)
    record["answer"][1]["citations"] = [5]
    bad = write_lines(tmp_path / "bad.responses.jsonl", [response_record("live", "t0", Answer("plain")), record])
    with pytest.raises(InputError) as caught:
        load_runs([bad])
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(bad), 2, "answer[1].citations[0]")
    assert "citation index 5 is out of range" in str(caught.value)
