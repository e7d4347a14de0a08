"""The loaders on the published Workbench data in ../shared/data (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.core.models import md5_hex
from exam_harness.io import load_bank, load_leaderboard, load_runs, write_bank_yaml
from tests.paths import SHARED_DATA

DATA = SHARED_DATA

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data is absent"),
]


def test_dl19_banks_both_forms() -> None:
    old = load_bank(DATA / "dl19" / "dl19-genq-questions-v1.jsonl.gz")
    questions = load_bank(DATA / "dl19" / "dl19-questions.jsonl.gz")
    nuggets = load_bank(DATA / "dl19" / "dl19-nuggets.jsonl.gz")
    for banks in (old, questions, nuggets):
        assert len(banks) == 43 and len({b.query.id for b in banks}) == 43
        assert all(b.facet_id is None and b.test_points for b in banks)
    assert {b.query.id for b in old} == {b.query.id for b in questions} == {b.query.id for b in nuggets}
    assert sum(len(b.test_points) for b in old) == 430
    assert sum(len(b.test_points) for b in questions) == 430
    assert all(tp.kind == "question" for b in questions for tp in b.test_points)
    assert all(tp.kind == "nugget" for b in nuggets for tp in b.test_points)
    # given ids are kept (the generated ids hash the text exactly, trailing spaces included)
    tp = old[0].test_points[0]
    assert tp.id == f"{tp.query_id}/{md5_hex(tp.text)}"
    # two nuggets repeated verbatim in the published file are one test point each
    assert sum(len(b.test_points) for b in nuggets) == 464 - 3


def test_dl19_bank_converts_to_hand_format(tmp_path: Path) -> None:
    banks = load_bank(DATA / "dl19" / "dl19-genq-questions-v1.jsonl.gz")
    out = tmp_path / "dl19.yaml"
    write_bank_yaml(out, banks)
    again = load_bank(out)
    assert [b.model_copy(update={"source": ""}) for b in again] == [b.model_copy(update={"source": ""}) for b in banks]
    # every id follows the default rule, so no test point id is written out
    assert not [line for line in out.read_text().splitlines() if line.strip().startswith("id:") and "/" in line]


def test_car_banks_with_facets() -> None:
    questions = load_bank(DATA / "car" / "car-questions.jsonl.gz")
    nuggets = load_bank(DATA / "car" / "car-nuggets.jsonl.gz")
    for banks in (questions, nuggets):
        assert len(banks) == 726
        assert all(b.facet_id is not None for b in banks)
        assert len({b.key for b in banks}) == 726
    bank = questions[0]
    assert bank.key == "tqa2:L_0002/T_0016"
    assert bank.query.text == "Earth Science and its branches / Geology"
    assert bank.query.facets == {"T_0016": "Geology"}
    assert all(tp.facet_id == "T_0016" and tp.id.startswith("tqa2:L_0002/T_0016/") for tp in bank.test_points)
    assert sum(len(b.test_points) for b in questions) == 8551


def test_dl19_graded_paragraphs() -> None:
    path = DATA / "dl19" / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
    data = load_runs([path]).data
    # 9,260 paragraph entries; 121 passages are judged for two queries, so 9,139 distinct passages
    assert len(data.passages) == 9139
    assert sum(len(levels) for levels in data.judgments.values()) == 9260
    assert len(data.runs) == 37
    assert len(data.judgments) == 43
    assert {level for levels in data.judgments.values() for level in levels.values()} == {0, 1, 2, 3}
    question_ids = {tid for _pid, tid in data.recorded}
    assert len(question_ids) == 430
    bank_ids = {tp.id for b in load_bank(DATA / "dl19" / "dl19-genq-questions-v1.jsonl.gz") for tp in b.test_points}
    assert question_ids == bank_ids
    assert len(data.recorded) == 92600
    grades = data.recorded["1017759", "19335/96a7ab9df44af3a8885da895043a1228"]
    assert [(g.grade, g.answer, g.llm) for g in grades] == [(4, "4", "google/flan-t5-large")]
    assert grades[0].prompt_class == "QuestionSelfRatedUnanswerablePromptWithChoices"
    # Workbench ranks are kept as given: the TUW19 runs start at 0
    tuw = data.runs["TUW19-p1-f"]
    assert min(r.rank for ranked in tuw.rankings.values() for r in ranked) == 0
    assert all(r.passage_id in data.passages for run in data.runs.values() for rs in run.rankings.values() for r in rs)
    leaderboard = load_leaderboard(DATA / "dl19" / "official-leaderboard.json")
    assert len(set(leaderboard) & set(data.runs)) >= 30


@pytest.mark.slow
def test_llmjudge_dev() -> None:
    loaded = load_runs([DATA / "llmjudge" / "llmjudge-dev-graded.jsonl.gz"])
    data = loaded.data
    assert len(data.judgments) == 25
    assert sum(len(levels) for levels in data.judgments.values()) == 7263
    assert len(data.passages) == 7224
    assert data.runs == {}
    classes = {g.prompt_class for grades in data.recorded.values() for g in grades}
    assert {
        "QuestionSelfRatedUnanswerablePromptWithChoices",
        "QuestionCompleteConciseUnanswerablePromptWithChoices",
        "NuggetSelfRatedPrompt",
        "NuggetExtractionPrompt",
    } <= classes
    direct = [g for (_pid, tid), grades in data.recorded.items() if tid.endswith("/direct") for g in grades]
    assert len(direct) == 7263
    assert {g.grade for g in direct} <= {0, 1, 2, 3}


def test_leaderboards() -> None:
    car = load_leaderboard(DATA / "car" / "official-leaderboard.json")
    assert len(car) == 16 and car["IRIT1"] == car["IRIT2"] == 5.0 and car["ECNU_BM25_1"] == 7.5
    dl19 = load_leaderboard(DATA / "dl19" / "official-leaderboard.json")
    assert dl19["idst_bert_p1"] == 1.0
