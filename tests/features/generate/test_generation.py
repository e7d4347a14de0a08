"""Bank generation: prompts, robust parsing of the answer, ids, and merging without losing human edits."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import GradingError, InputError
from exam_harness.core.models import Query, QueryBank, TestPoint, md5_hex
from exam_harness.core.models import test_point_id as point_id  # a test_* name would be collected
from exam_harness.features.generate.generation import (
    GenerationParseError,
    generate_banks,
    generate_into_file,
    generation_prompt,
    generation_targets,
    merge_banks,
    parse_generated_items,
    run_generation,
)
from exam_harness.graders.base import GradeFailure
from exam_harness.io.generated_banks import read_generated_ids, sidecar_path
from exam_harness.io.handbank import load_hand_bank
from exam_harness.io.workbench import load_workbench_bank
from exam_harness.llm.backend import Generation, GenerationResult, PromptParts
from tests.paths import SHARED_DATA


class ScriptedBackend:
    """A TextBackend answering each prompt with ``answer(prompt_text)``; records the prompts."""

    model_id: str = "scripted"
    revision: str | None = None

    def __init__(self, answer: Callable[[str], str | GradeFailure]) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def settings(self) -> dict[str, Any]:
        return {}

    def generate(
        self, prompts: Sequence[PromptParts], *, max_new_tokens: int, rating_scale: int | None = None
    ) -> list[GenerationResult]:
        out: list[GenerationResult] = []
        for p in prompts:
            self.prompts.append(p.text)
            a = self.answer(p.text)
            out.append(a if isinstance(a, GradeFailure) else Generation(a))
        return out

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def close(self) -> None:
        pass


def json_answer(kind: str, items: list[str]) -> str:
    return f'Here is the set:\n```json\n{json.dumps({kind: items})}\n```\nLet me know if you need more.'


# --- prompts -------------------------------------------------------------------------------------


def test_prompts_are_the_methods_words() -> None:
    q = generation_prompt("questions", "how do tides work")
    assert q.startswith("Break the query 'how do tides work' into concise questions that must be answered.")
    assert q.endswith('{ "questions" : [question_text_1, question_text_2, ...] }\n```')
    n = generation_prompt("nuggets", "how do tides work")
    assert "Keep nuggets to a maximum of 4 words." in n and '"nuggets"' in n
    f = generation_prompt("questions", "Geology", "Plate tectonics")
    assert f.startswith("Explore the connection between 'Geology' with a specific focus on the subtopic 'Plate tectonics'.")
    fn = generation_prompt("nuggets", "Geology", "Plate tectonics")
    assert "insightful nuggets (key facts)" in fn and "{" in fn
    with pytest.raises(InputError, match="questions"):
        generation_prompt("answers", "x")  # type: ignore[arg-type]


def test_targets_one_per_facet() -> None:
    targets = generation_targets([Query(id="q1", text="Geology", facets={"f1": "Rocks", "f2": "Plates"}), Query(id="q2", text="tides")])
    assert [t.key for t in targets] == ["q1/f1", "q1/f2", "q2"]
    assert targets[0].query.text == "Geology / Rocks" and targets[0].query.facets == {"f1": "Rocks"}
    assert targets[2].query.facets == {} and targets[2].facet_text is None


# --- parsing -------------------------------------------------------------------------------------

PARSE_TABLE: list[tuple[str, str, list[str]]] = [
    ("plain json", '{"questions": ["What is A?", "Why B?"]}', ["What is A?", "Why B?"]),
    ("code fence", 'Sure!\n```json\n{ "questions" : ["What is A?", "Why B?"] }\n```\nHope it helps.', ["What is A?", "Why B?"]),
    ("fence without language", '```\n{"questions": ["a?", "b?"]}\n```', ["a?", "b?"]),
    ("leading and trailing text", 'Questions: {"questions": ["a?", "b?"]} -- end', ["a?", "b?"]),
    ("bare list", '["a?", "b?", "c?"]', ["a?", "b?", "c?"]),
    ("python list", "['a?', 'b?']", ["a?", "b?"]),
    ("python dict single quotes", "{'questions': ['a?', 'b?']}", ["a?", "b?"]),
    ("apostrophes inside single quotes", "{'questions': ['What's new?', 'Who's there?']}", ["What's new?", "Who's there?"]),
    ("other key of one list", '{"question_set": ["a?", "b?"]}', ["a?", "b?"]),
    ("key case", '{"Questions": ["a?"]}', ["a?"]),
    ("object items", '{"questions": [{"question": "a?"}, {"text": "b?"}, {"question_text": "c?"}]}', ["a?", "b?", "c?"]),
    ("blanks, whitespace, repeats", '["  a?  ", "", "a?", "b\\n?"]', ["a?", "b ?"]),
    ("brackets inside strings", '{"questions": ["What does [x] mean?", "Is {y} set?"]}', ["What does [x] mean?", "Is {y} set?"]),
    ("numbered lines", "1. What is A?\n2. Why B?\n3) How C?", ["What is A?", "Why B?", "How C?"]),
    ("bullets", "- a?\n* b?\n", ["a?", "b?"]),
    ("prose before a fence with a broken first block", '```json\n{"questions": [\n```\n["x?"]', ["x?"]),
]


@pytest.mark.parametrize(("answer", "expected"), [(a, e) for _, a, e in PARSE_TABLE], ids=[n for n, _, _ in PARSE_TABLE])
def test_parse_table(answer: str, expected: list[str]) -> None:
    assert parse_generated_items(answer, "questions") == expected


def test_parse_prefers_the_requested_key() -> None:
    answer = '{"questions": ["q?"], "nuggets": ["n"]}'
    assert parse_generated_items(answer, "nuggets") == ["n"]
    assert parse_generated_items(answer, "questions") == ["q?"]


@pytest.mark.parametrize(
    "answer",
    ["", "I cannot help with that.", '{"questions": ["a?", "b?"', '{"count": 3}', "1. only one item", "[1, 2]"],
    ids=["empty", "refusal", "truncated json", "no list", "one line", "numbers"],
)
def test_unparseable_answers(answer: str) -> None:
    with pytest.raises(GenerationParseError, match="no list of questions"):
        parse_generated_items(answer, "questions")


# --- generating ------------------------------------------------------------------------------------


def test_generate_banks_ids_kinds_and_facets() -> None:
    backend = ScriptedBackend(lambda p: json_answer("nuggets", ["moon gravity", "two tides daily"]))
    banks = generate_banks(
        [Query(id="q1", text="tides"), Query(id="q2", text="Geology", facets={"f1": "Rocks"})], kind="nuggets", backend=backend
    )
    assert [b.key for b in banks] == ["q1", "q2/f1"]
    tp = banks[0].test_points[0]
    assert tp.id == f"q1/{md5_hex('moon gravity')}" and tp.kind == "nugget" and tp.query_id == "q1"
    facet_tp = banks[1].test_points[1]
    assert facet_tp.id == point_id("q2", "two tides daily", "f1") and facet_tp.facet_id == "f1"
    assert banks[1].query.text == "Geology / Rocks"
    assert "'Rocks'" in backend.prompts[1] and "'tides'" in backend.prompts[0]


def test_failures_are_reported_never_banks() -> None:
    def answer(prompt: str) -> str | GradeFailure:
        if "'bad'" in prompt:
            return GradeFailure("HTTP 500: boom (retries exhausted after 6 attempts)")
        if "'odd'" in prompt:
            return "I'd rather not."
        return json_answer("questions", ["a?"])

    queries = [Query(id="ok", text="good"), Query(id="b", text="bad"), Query(id="o", text="odd")]
    outcome = run_generation(queries, backend=ScriptedBackend(answer))
    assert [b.key for b in outcome.banks] == ["ok"]
    assert {f.key: f.message for f in outcome.failures}.keys() == {"b", "o"}
    assert "HTTP 500" in outcome.failures[0].message and "no list" in outcome.failures[1].message
    with pytest.raises(GradingError, match="failed for 2 of 3 banks"):
        generate_banks(queries, backend=ScriptedBackend(answer))


# --- merging ---------------------------------------------------------------------------------------


def _bank(qid: str, texts: list[str], kind: str = "question") -> QueryBank:
    points = tuple(TestPoint(id=point_id(qid, t), query_id=qid, kind=kind, text=t) for t in texts)  # type: ignore[arg-type]
    return QueryBank(query=Query(id=qid, text=f"query {qid}"), test_points=points)


def test_merge_keeps_existing_items_and_respects_deletions() -> None:
    edited = TestPoint(id=point_id("q1", "a?"), query_id="q1", kind="question", text="a, edited by a person?", weight=2.0)
    existing = [QueryBank(query=Query(id="q1", text="my own query text"), test_points=(edited,))]
    generated = [_bank("q1", ["a?", "b?", "c?"]), _bank("q2", ["x?"])]
    deleted = {point_id("q1", "b?")}
    result = merge_banks(existing, generated, deleted | {point_id("q1", "a?")})
    q1, q2 = result.banks
    assert q1.query.text == "my own query text"
    assert q1.test_points[0] == edited  # untouched, same id, same weight
    assert [tp.text for tp in q1.test_points] == ["a, edited by a person?", "c?"]  # b deleted, c new
    assert [tp.text for tp in q2.test_points] == ["x?"]
    assert result.added == {"q1": 1, "q2": 1} and result.withheld == {"q1": 1}
    assert result.new_ids == {point_id("q1", "c?"), point_id("q2", "x?")}


def test_merge_into_yaml_file_keeps_human_edits(tmp_path: Path) -> None:
    out = tmp_path / "banks" / "gen.yaml"
    first = ScriptedBackend(lambda p: json_answer("questions", ["What is A?", "What is B?", "What is C?"]))
    update = generate_into_file(out, [Query(id="q1", text="letters")], backend=first)
    assert sum(update.merge.added.values()) == 3 and out.exists() and sidecar_path(out).exists()
    assert len(read_generated_ids(out)) == 3

    # A person edits one question, deletes another, and adds their own.
    text = out.read_text()
    assert "What is A?" in text and "What is B?" in text
    text = text.replace("What is A?", "What exactly is A?").replace("  - What is B?\n", "")
    text = text.replace("  - What is C?\n", "  - What is C?\n  - A question a person wrote?\n")
    out.write_text(text)
    human = load_hand_bank(out)
    assert [tp.text for tp in human[0].test_points] == ["What exactly is A?", "What is C?", "A question a person wrote?"]

    # Regenerating (same answers plus one new) adds only the new item.
    second = ScriptedBackend(lambda p: json_answer("questions", ["What is A?", "What is B?", "What is C?", "What is D?"]))
    update = generate_into_file(out, [Query(id="q1", text="letters")], backend=second, refresh=True)
    assert update.merge.added == {"q1": 1} and update.merge.withheld == {"q1": 2}
    after = load_hand_bank(out)
    assert [tp.text for tp in after[0].test_points] == [
        "What exactly is A?",
        "What is C?",
        "A question a person wrote?",
        "What is D?",
    ]
    assert point_id("q1", "What is D?") in read_generated_ids(out)


def test_existing_banks_are_not_regenerated_without_refresh(tmp_path: Path) -> None:
    out = tmp_path / "gen.yaml"
    backend = ScriptedBackend(lambda p: json_answer("questions", ["a?"]))
    generate_into_file(out, [Query(id="q1", text="one")], backend=backend)
    before = out.read_text()
    update = generate_into_file(out, [Query(id="q1", text="one"), Query(id="q2", text="two")], backend=backend)
    assert update.skipped == ["q1"] and len(backend.prompts) == 2  # q1 once, q2 once
    assert out.read_text().startswith(before.split("- id: q2")[0])
    # Nuggets for a query that has only questions are generated into the same bank.
    nuggets = ScriptedBackend(lambda p: json_answer("nuggets", ["one fact"]))
    update = generate_into_file(out, [Query(id="q1", text="one")], kind="nuggets", backend=nuggets)
    kinds = [tp.kind for tp in load_hand_bank(out)[0].test_points]
    assert kinds == ["question", "nugget"]


def test_workbench_output_keeps_edited_text_with_its_id(tmp_path: Path) -> None:
    out = tmp_path / "gen.jsonl.gz"
    backend = ScriptedBackend(lambda p: json_answer("questions", ["What is A?", "What is B?"]))
    generate_into_file(out, [Query(id="q1", text="letters")], backend=backend)
    [bank] = load_workbench_bank(out)
    a_id = point_id("q1", "What is A?")
    assert [tp.id for tp in bank.test_points] == [a_id, point_id("q1", "What is B?")]

    # Edit A's text in place (its id stays, as Workbench items carry explicit ids).
    import gzip

    record = json.loads(gzip.decompress(out.read_bytes()))
    record["items"][0]["question_text"] = "What precisely is A?"
    out.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    generate_into_file(out, [Query(id="q1", text="letters")], backend=backend, refresh=True)
    [bank] = load_workbench_bank(out)
    assert [(tp.id, tp.text) for tp in bank.test_points] == [(a_id, "What precisely is A?"), (point_id("q1", "What is B?"), "What is B?")]


def test_nothing_written_when_nothing_added(tmp_path: Path) -> None:
    out = tmp_path / "gen.yaml"
    failing = ScriptedBackend(lambda p: GradeFailure("HTTP 503: down"))
    update = generate_into_file(out, [Query(id="q1", text="x")], backend=failing)
    assert not out.exists() and not sidecar_path(out).exists()
    assert update.outcome.failures[0].message == "HTTP 503: down"


def test_sidecar_is_not_a_bank_file_and_rejects_garbage(tmp_path: Path) -> None:
    from exam_harness.io.banks import is_bank_file

    out = tmp_path / "gen.yaml"
    sidecar_path(out).write_text("# comment\nq1/abc\nnot an id\n")
    assert not is_bank_file(sidecar_path(out))  # bank folders do not collect it
    with pytest.raises(InputError) as info:
        read_generated_ids(out)
    assert info.value.line == 3


def test_unknown_bank_suffix_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown bank file type"):
        generate_into_file(tmp_path / "gen.txt", [Query(id="q", text="t")], backend=ScriptedBackend(lambda p: "[]"))


DATA = SHARED_DATA


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "kind"), [("dl19/dl19-nuggets.jsonl.gz", "nuggets"), ("car/car-questions.jsonl.gz", "questions")])
def test_generation_reproduces_published_ids(name: str, kind: str) -> None:
    """Feeding the published generated texts back as model answers gives the published ids."""
    path = DATA / name
    if not path.exists():
        pytest.skip("../shared/data is absent")
    published = load_workbench_bank(path)[:40]
    texts = {b.key: [tp.text for tp in b.test_points] for b in published}
    queries: dict[str, Query] = {}
    for b in published:
        base = b.query.text.split(" / ", 1)[0] if b.facet_id else b.query.text
        facets = dict(queries[b.query.id].facets) if b.query.id in queries else {}
        if b.facet_id:
            facets[b.facet_id] = b.query.facets[b.facet_id]
        queries[b.query.id] = Query(id=b.query.id, text=base, facets=facets)
    order = iter(b.key for b in generation_targets(list(queries.values())))
    backend = ScriptedBackend(lambda prompt: json_answer(kind, texts[next(order)]))
    banks = generate_banks(list(queries.values()), kind=kind, backend=backend)  # type: ignore[arg-type]
    assert {b.key: [tp.id for tp in b.test_points] for b in banks} == {
        b.key: [tp.id for tp in b.test_points] for b in published
    }
