"""Run-side loaders: TREC runs, collections, generated responses, Workbench paragraph files."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import InputError
from exam_harness.core.models import ExamData, Passage, RankedPassage, RecordedGrade
from exam_harness.io import (
    SEGMENT_TOKENS,
    direct_grade_id,
    load_leaderboard,
    load_runs,
    run_files,
    segment_id,
    segment_response,
)


def _write(path: Path, text: str) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


# --- TREC runs and collections ------------------------------------------------------------------


def test_trec_runs_with_tsv_collection(tmp_path: Path) -> None:
    _write(tmp_path / "collection.tsv", "docid\ttext\nD1\tThe moon pulls the ocean.\nD2\tTides come twice a day.\n\n")
    _write(
        tmp_path / "two.run.gz",
        "q1 Q0 D2 0 3.5 dense\nq1 Q0 D1 1 2 dense\n\nq1\tQ0  D1 1 7.25 bm25\nq2 0 D2 1 -1e-3 bm25\n",
    )
    loaded = load_runs([tmp_path])
    data = loaded.data
    assert isinstance(data, ExamData)
    assert set(data.runs) == {"dense", "bm25"}
    dense, bm25 = data.runs["dense"], data.runs["bm25"]
    assert dense.rankings == {
        "q1": [RankedPassage(passage_id="D2", rank=0, score=3.5), RankedPassage(passage_id="D1", rank=1, score=2.0)]
    }
    assert bm25.rankings["q2"] == [RankedPassage(passage_id="D2", rank=1, score=-0.001)]
    assert not bm25.generated and bm25.source == str(tmp_path / "two.run.gz")
    assert data.passages == {
        "D1": Passage(id="D1", text="The moon pulls the ocean."),
        "D2": Passage(id="D2", text="Tides come twice a day."),
    }
    assert loaded.responses == {}


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("collection.jsonl", ['{"id": "D1", "text": "one"}', '{"id": 2, "text": "two"}']),
        ("msmarco.collection.jsonl.gz", ['{"docid": "D1", "contents": "one"}', '{"passage_id": "2", "text": "two"}']),
    ],
)
def test_jsonl_collections(tmp_path: Path, name: str, lines: list[str]) -> None:
    _write(tmp_path / name, "\n".join(lines) + "\n")
    _write(tmp_path / "r.trec", "q Q0 D1 1 1 r\nq Q0 2 2 0 r\n")
    data = load_runs([tmp_path]).data
    assert {pid: p.text for pid, p in data.passages.items()} == {"D1": "one", "2": "two"}


def test_collections_keep_only_referenced_passages(tmp_path: Path) -> None:
    _write(tmp_path / "collection.tsv", "D1\tone\nD2\ttwo\nD3\tthree\n")
    _write(tmp_path / "r.run", "q Q0 D2 1 1 r\n")
    assert set(load_runs([tmp_path]).data.passages) == {"D2"}
    # with nothing referencing passages, the whole collection is kept
    assert set(load_runs([tmp_path / "collection.tsv"]).data.passages) == {"D1", "D2", "D3"}


def test_same_passage_in_two_files_with_same_text_is_fine(tmp_path: Path) -> None:
    _write(tmp_path / "a.collection.tsv", "D1\tsame\n")
    _write(tmp_path / "b.collection.tsv", "D1\tsame\n")
    _write(tmp_path / "r.run", "q Q0 D1 1 1 r\n")
    assert load_runs([tmp_path]).data.passages["D1"].text == "same"


def test_folder_listing_rules(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "nested").mkdir(parents=True)
    _write(runs / "collection.tsv", "D1\tx\n")
    _write(runs / "b.run", "q Q0 D1 1 1 b\n")
    _write(runs / "a.run", "q Q0 D1 1 1 a\n")
    _write(runs / "nested" / "c.run", "this folder is not read\n")
    for ignored in ("README", "README.txt", "notes.md", ".gitkeep", ".hidden.run"):
        _write(runs / ignored, "not a run\n")
    assert [p.name for p in run_files([runs])] == ["a.run", "b.run", "collection.tsv"]
    loaded = load_runs([runs])
    assert list(loaded.data.runs) == ["a", "b"]
    assert [p.name for p in loaded.files] == ["a.run", "b.run", "collection.tsv"]
    # files and folders mix
    extra = _write(tmp_path / "extra.run", "q Q0 D1 1 1 extra\n")
    assert set(load_runs([runs, extra]).data.runs) == {"a", "b", "extra"}


# --- generated responses ------------------------------------------------------------------------


def _essay(n_sentences: int, seed: int = 0) -> str:
    import random

    rng = random.Random(seed)
    words = ["tide", "moon", "ocean", "gravity", "water", "sun", "orbit", "coast"]
    sentences = []
    for _ in range(n_sentences):
        n = rng.randint(4, 30)
        sentences.append(" ".join(rng.choice(words) for _ in range(n)).capitalize() + rng.choice([".", "!", "?"]))
    return " ".join(sentences)


def test_short_response_is_one_segment() -> None:
    text = "  The moon pulls the ocean.\nTides come twice a day.  "
    assert segment_response(text) == ["The moon pulls the ocean.\nTides come twice a day."]
    words = " ".join(["word"] * SEGMENT_TOKENS)
    assert segment_response(words) == [words]
    assert segment_response("   \n ") == []


def test_long_response_is_cut_at_sentence_ends() -> None:
    text = _essay(300)
    tokens = text.split()
    segments = segment_response(text)
    sizes = [len(s.split()) for s in segments]
    assert len(tokens) > 3 * SEGMENT_TOKENS
    assert max(sizes) <= SEGMENT_TOKENS
    assert len(segments) <= math.ceil(len(tokens) / SEGMENT_TOKENS) + 1
    assert all(size >= SEGMENT_TOKENS // 2 for size in sizes[:-1])  # about 400, not fragments
    assert all(re.search(r"[.!?]$", s) for s in segments)
    assert [t for s in segments for t in s.split()] == tokens
    assert all(s in text for s in segments)
    assert segment_response(text) == segments  # deterministic


def test_overlong_sentence_and_abbreviations() -> None:
    no_stops = " ".join(f"w{i}" for i in range(1001))
    sizes = [len(s.split()) for s in segment_response(no_stops)]
    assert sum(sizes) == 1001 and max(sizes) <= SEGMENT_TOKENS and len(sizes) == 3
    # "e.g. the" does not end a sentence (a cut there would start a segment with "the")
    text = "a " * 90 + "e.g. the " + "b " * 30 + "end. " + "c " * 20 + "stop."
    assert [s.split()[0] for s in segment_response(text, max_tokens=100)] == ["a", "a"]
    assert [s.split()[0] for s in segment_response(text.replace("e.g. the", "e.g. The"), max_tokens=100)] == [
        "a",
        "The",
    ]
    # a blank line ends a paragraph even without punctuation
    text = "a " * 80 + "\n\n" + "b " * 60
    assert [s.split()[0] for s in segment_response(text, max_tokens=100)] == ["a", "b"]


def test_responses_become_generated_runs(tmp_path: Path) -> None:
    long = _essay(120, seed=3)
    lines: list[dict[str, Any]] = [
        {"query_id": "q1", "run": "gpt", "response": "The moon pulls the ocean. Tides come twice a day."},
        {"query_id": 7, "system": "llama", "response": long},
        {"query_id": "q1", "system": "llama", "response": ""},
        {"query_id": "q2", "run": "gpt", "response": "Same paragraph.\n\nSame paragraph."},
    ]
    _write(tmp_path / "gen.responses.jsonl.gz", "".join(json.dumps(x) + "\n" for x in lines))
    loaded = load_runs([tmp_path])
    data = loaded.data
    gpt, llama = data.runs["gpt"], data.runs["llama"]
    assert gpt.generated and llama.generated
    short_id = segment_id("The moon pulls the ocean. Tides come twice a day.")
    assert re.fullmatch(r"gen-[0-9a-f]{16}", short_id)
    assert gpt.rankings["q1"] == [RankedPassage(passage_id=short_id, rank=1, score=0.0)]
    assert data.passages[short_id].text == "The moon pulls the ocean. Tides come twice a day."
    ranked = llama.rankings["7"]
    assert [r.rank for r in ranked] == list(range(1, len(ranked) + 1)) and len(ranked) > 1
    assert [data.passages[r.passage_id].text for r in ranked] == segment_response(long)
    assert llama.rankings["q1"] == []
    assert len(gpt.rankings["q2"]) == 1  # a repeated segment is one passage
    assert loaded.responses == {
        "gpt": {"q1": lines[0]["response"], "q2": lines[3]["response"]},
        "llama": {"7": long, "q1": ""},
    }


# --- Workbench paragraph files ------------------------------------------------------------------


def _paragraph(pid: str, text: str, qid: str, **extra: object) -> dict[str, Any]:
    return {
        "paragraph_id": pid,
        "text": text,
        "paragraph": {},
        "paragraph_data": {"judgments": [], "rankings": []},
        **extra,
    }


def test_workbench_paragraph_file(tmp_path: Path) -> None:
    p1 = _paragraph("P1", "moon text", "q1")
    p1["paragraph_data"] = {
        "judgments": [
            {"paragraphId": "P1", "query": "q1", "relevance": 1, "titleQuery": "q1"},
            {"paragraphId": "P1", "query": "q1", "relevance": 3, "titleQuery": "q1"},
        ],
        "rankings": [
            {"method": "runA", "paragraphId": "P1", "queryId": "q1", "rank": 2, "score": 1.5},
            {"method": "runB", "paragraphId": "P1", "queryId": "q1", "rank": 0, "score": -6.0},
        ],
    }
    p1["exam_grades"] = [
        {
            "correctAnswered": ["q1/a"],
            "wrongAnswered": ["q1/b"],
            "answers": [["q1/a", "4"], ["q1/b", "0"]],
            "llm": "google/flan-t5-large",
            "llm_options": {},
            "exam_ratio": 0.5,
            "prompt_info": {"prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices", "is_self_rated": True},
            "self_ratings": [{"question_id": "q1/a", "self_rating": 4}, {"question_id": "q1/b", "self_rating": 0}],
        },
        {
            "correctAnswered": ["q1/n1"],
            "wrongAnswered": ["q1/n2"],
            "answers": [["q1/n1", "the moon"], ["q1/n2", "unanswerable"]],
            "llm": "google/flan-t5-large",
            "prompt_info": {"prompt_class": "NuggetExtractionPrompt"},
            "self_ratings": None,
        },
    ]
    p1["grades"] = [
        {
            "correctAnswered": True,
            "answer": "",
            "llm": "flan-t5-large",
            "prompt_info": {"prompt_class": "direct"},
            "self_ratings": 2,
        }
    ]
    p2 = _paragraph("P2", "ocean text", "q1")
    p2["paragraph_data"]["rankings"] = [
        {"method": "runA", "paragraphId": "P2", "queryId": "q1", "rank": 1, "score": 2.5}
    ]
    p2["exam_grades"] = [
        {
            "correctAnswered": [],
            "wrongAnswered": ["q1/n1"],
            "answers": [],
            "llm": "m",
            "prompt_info": {"prompt_class": "NuggetSelfRatedPrompt"},
            "self_ratings": [{"nugget_id": "q1/n1", "self_rating": 1}],
        }
    ]
    p2["grades"] = [{"correctAnswered": False, "answer": "no", "llm": "x", "prompt_info": {"prompt_class": "Sun"}}]
    q2 = _paragraph("P1", "moon text", "q2")  # the same passage judged for another query
    q2["paragraph_data"]["judgments"] = [{"paragraphId": "P1", "query": "q2", "relevance": 0, "titleQuery": "q2"}]
    lines = [["q1", [p1, p2]], ["q2", [q2]]]
    _write(tmp_path / "graded.jsonl.gz", "".join(json.dumps(x) + "\n" for x in lines))

    data = load_runs([tmp_path]).data
    assert set(data.passages) == {"P1", "P2"}
    assert data.judgments == {"q1": {"P1": 3}, "q2": {"P1": 0}}
    assert data.runs["runA"].rankings == {
        "q1": [RankedPassage(passage_id="P2", rank=1, score=2.5), RankedPassage(passage_id="P1", rank=2, score=1.5)]
    }
    assert data.runs["runB"].rankings["q1"] == [RankedPassage(passage_id="P1", rank=0, score=-6.0)]
    rec = data.recorded
    assert rec["P1", "q1/a"] == [
        RecordedGrade(
            test_point_id="q1/a",
            grade=4,
            answer="4",
            llm="google/flan-t5-large",
            prompt_class="QuestionSelfRatedUnanswerablePromptWithChoices",
        )
    ]
    assert [(g.grade, g.answer, g.prompt_class) for g in rec["P1", "q1/n2"]] == [
        (0, "unanswerable", "NuggetExtractionPrompt")
    ]
    assert [(g.grade, g.answer) for g in rec["P1", "q1/n1"]] == [(1, "the moon")]
    assert [(g.grade, g.prompt_class) for g in rec["P2", "q1/n1"]] == [(1, "NuggetSelfRatedPrompt")]
    direct = direct_grade_id("q1")
    assert direct == "q1/direct"
    assert [(g.grade, g.answer, g.llm) for g in rec["P1", direct]] == [(2, "", "flan-t5-large")]
    assert [(g.grade, g.prompt_class) for g in rec["P2", direct]] == [(0, "Sun")]
    assert ("P1", direct_grade_id("q2")) not in rec


def test_workbench_passage_listed_twice_for_a_query(tmp_path: Path) -> None:
    para = _paragraph("P1", "text", "q1")
    _write(tmp_path / "g.jsonl", json.dumps(["q1", [para, para]]) + "\n")
    with pytest.raises(InputError, match=r"g.jsonl:1: passage 'P1' is listed twice for query 'q1'"):
        load_runs([tmp_path])


def test_workbench_passage_text_conflict(tmp_path: Path) -> None:
    _write(
        tmp_path / "g.jsonl",
        json.dumps(["q1", [_paragraph("P1", "one", "q1")]])
        + "\n"
        + json.dumps(["q2", [_paragraph("P1", "two", "q2")]])
        + "\n",
    )
    with pytest.raises(InputError, match=r"g.jsonl:2: passage 'P1' has another text than at line 1"):
        load_runs([tmp_path])


def test_workbench_passages_back_trec_runs(tmp_path: Path) -> None:
    _write(tmp_path / "g.jsonl", json.dumps(["q1", [_paragraph("P1", "one", "q1")]]) + "\n")
    _write(tmp_path / "r.run", "q1 Q0 P1 1 1 bm25\n")
    assert load_runs([tmp_path]).data.runs["bm25"].top_k("q1", 5) == ["P1"]


# --- leaderboards -------------------------------------------------------------------------------


def test_leaderboard(tmp_path: Path) -> None:
    path = _write(tmp_path / "lb.json", '{"a": 1, "b": 2.5, "c": 2.5}')
    assert load_leaderboard(path) == {"a": 1.0, "b": 2.5, "c": 2.5}
    with pytest.raises(InputError, match="empty leaderboard"):
        load_leaderboard(_write(tmp_path / "empty.json", "{}"))
    with pytest.raises(InputError, match="must be a JSON object"):
        load_leaderboard(_write(tmp_path / "list.json", "[1, 2]"))


def test_empty_jsonl_in_run_folder(tmp_path: Path) -> None:
    _write(tmp_path / "x.jsonl", "\n")
    with pytest.raises(InputError, match="empty JSON-lines file"):
        load_runs([tmp_path])


def test_empty_run_folder_gives_empty_data(tmp_path: Path) -> None:
    loaded = load_runs([tmp_path])
    assert loaded.data.runs == {} and loaded.data.passages == {} and loaded.files == []


# --- the line reader under every loader ---------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("name", ["lines.txt", "lines.txt.gz"])
def test_lines_are_read_whole_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, name: str
) -> None:
    from exam_harness.io import textio

    monkeypatch.setattr(textio, "_CHUNK", chunk)
    text = "\ufeffq1 first\r\n\n\r\nsecond line\n   \nthird, no line end"
    path = _write(tmp_path / name, text)
    # empty lines (also "\r\n") are skipped, as every line format skips blank lines; the numbers stay true
    assert list(textio.iter_lines(path)) == [(1, "q1 first"), (4, "second line"), (5, "   "), (6, "third, no line end")]


def test_blank_lines_are_skipped_quickly(tmp_path: Path) -> None:
    from exam_harness.io import textio

    path = tmp_path / "blank.run"
    path.write_bytes(b"\n" * 3_000_000 + b"q1 Q0 D1 1 1 bm25\n")
    assert list(textio.iter_lines(path)) == [(3_000_001, "q1 Q0 D1 1 1 bm25")]


def test_json_depth_prescan_ignores_brackets_in_strings() -> None:
    from exam_harness.io.textio import json_too_deep

    deep_in_string = json.dumps({"text": "[" * 500 + '\\"' + "{" * 500}).encode()
    assert not json_too_deep(deep_in_string, 2)
    assert json_too_deep(b"[" * 3 + b"]" * 3, 2)
    assert not json_too_deep(b'[["]]]]]]"], [[]]]', 3)
    assert json_too_deep(b'[["\\\\"], [[[]]]]', 3)  # an escaped backslash ends the string before ']'
