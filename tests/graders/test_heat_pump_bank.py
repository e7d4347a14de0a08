"""The heat pump bank (tests/data/heat_pump_bank.json, issue 35) is what its loader says it is: the shape the
judges' tests and benchmarks/judges.py rely on, checked against the file rather than trusted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from exam_harness.graders.answer_key import closest_gold
from exam_harness.graders.matching import numbers_of
from exam_harness.io import load_bank, load_runs
from tests.heat_pump_bank import ANSWERING, KINDS, HeatPumpBank, load


@pytest.fixture(scope="module")
def bank() -> HeatPumpBank:
    return load()


def test_the_bank_has_the_issues_shape(bank: HeatPumpBank) -> None:
    assert (len(bank.queries), len(bank.test_points), len(bank.passages)) == (7, 40, 77)
    assert len(bank.labels) == len(bank.requests) == 40 * 77
    kinds = Counter(bank.pair_kinds.values())
    assert set(kinds) == set(KINDS)
    answering = kinds["word-for-word"] + kinds["other-words"]
    assert answering >= 60 and abs(kinds["other-words"] - answering / 2) <= 0.1 * answering
    assert kinds["distractor-number"] >= 10 and kinds["distractor-sense"] >= 5
    assert sum(bank.labels.values()) == answering
    assert sum(tp.required for tp in bank.test_points) >= 5
    # every question is answered by some passage, and in other words by some other
    for tp in bank.test_points:
        said = {bank.pair_kinds[(p.id, tp.id)] for p in bank.passages}
        assert {"word-for-word", "other-words"} <= said, tp.id


def test_an_answer_in_other_words_holds_no_gold_answer_and_a_word_for_word_one_does(bank: HeatPumpBank) -> None:
    texts = {p.id: p.text for p in bank.passages}
    for (pid, tpid), kind in bank.pair_kinds.items():
        tp = next(t for t in bank.test_points if t.id == tpid)
        if not tp.gold_answers or kind not in ANSWERING:
            continue
        found = closest_gold(texts[pid], tp.gold_answers)
        assert (found is not None) == (kind == "word-for-word"), (pid, tpid, kind)


def test_a_number_distractor_states_another_number_than_the_gold_answer(bank: HeatPumpBank) -> None:
    texts = {p.id: p.text for p in bank.passages}
    points = {tp.id: tp for tp in bank.test_points}
    numbered = [(pid, tpid) for (pid, tpid), kind in bank.pair_kinds.items() if kind == "distractor-number"]
    for pid, tpid in numbered:
        gold = points[tpid].gold_answers[0]
        assert numbers_of(gold) and numbers_of(texts[pid]) and not set(numbers_of(gold)) <= set(numbers_of(
            texts[pid])), (pid, tpid)


def test_the_systems_rank_apart_by_the_labels(bank: HeatPumpBank) -> None:
    covers = {system: bank.cover(bank.labels, system) for system in bank.runs}
    assert len(covers) >= 6 and len(set(covers.values())) == len(covers)  # no tie: a ranking exists
    ranked = sorted(covers, key=covers.__getitem__, reverse=True)
    assert ranked[:2] == ["verbatim", "paraphrased"] and ranked[-1] == "numbers"
    assert covers["random"] > covers["numbers"]


def test_the_responder_answers_each_pair_by_its_label(bank: HeatPumpBank) -> None:
    for request in bank.requests[::97]:
        prompt = f"Question: {request.test_point.text}\nPassage: {request.passage.text}\nRate 0-5."
        assert bank.responder(prompt) == ("5" if bank.labels[(request.passage.id, request.test_point.id)] else "0")


def test_the_written_project_loads_as_the_bank_and_its_runs(bank: HeatPumpBank, tmp_path: Path) -> None:
    banks, runs = bank.write_project(tmp_path)
    loaded = load_bank(banks / "heat_pumps.yaml")
    assert [b.query.id for b in loaded] == [q.id for q in bank.queries]
    points = {tp.id: tp for b in loaded for tp in b.test_points}
    assert {tp.id for tp in bank.test_points} == set(points)
    assert all(points[tp.id].gold_answers == tp.gold_answers and points[tp.id].required == tp.required
               for tp in bank.test_points)
    data = load_runs(sorted(runs.iterdir())).data
    assert set(data.runs) == set(bank.runs)
    ranked = {pid for by_query in bank.runs.values() for pids in by_query.values() for pid in pids}
    texts = {p.id: p.text for p in bank.passages}
    assert {pid: texts[pid] for pid in ranked} == {pid: p.text for pid, p in data.passages.items()}
