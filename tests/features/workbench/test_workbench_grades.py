"""Workbench interoperability: export our grades as a paragraph file, import graded files into the cache."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import InputError
from exam_harness.core.models import ExamData
from exam_harness.features.workbench.grades import export_view, export_workbench, import_workbench_grades
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.recorded import RecordedGrader
from exam_harness.grading.cache import GradeCache, cache_key
from exam_harness.grading.passes import grade_banks, pool_pairs, run_grading_pass
from exam_harness.io import load_bank, load_runs
from tests.helpers import KEYWORD_BANK, KeywordGrader, paragraph_lines, write_bank, write_exam


def _rich_file(path: Path) -> Path:
    """The hand-made exam plus what the loaders also read: a binary grading run (correct/wrong
    lists only), direct grades, a passage listed for two queries, ranks from 0, answers missing."""
    lines = paragraph_lines()
    q1 = lines[0][1]
    q1[0]["exam_grades"].append({
        "correctAnswered": ["q1/a"], "wrongAnswered": ["q1/b"], "answers": [["q1/a", "alpha"]],
        "llm": "gpt-x", "prompt_info": {"prompt_class": "QuestionCompleteConciseUnanswerablePromptWithChoices"},
    })
    q1[1]["grades"] = [{"correctAnswered": True, "self_ratings": None, "answer": "yes", "llm": "gpt-x",
                        "prompt_info": {"prompt_class": "Sun"}},
                       {"correctAnswered": False, "self_ratings": 2, "answer": "2", "llm": "t5",
                        "prompt_info": {"prompt_class": "Thomas"}}]
    q1[2]["exam_grades"][0]["answers"] = []  # no extracted answers for p3
    shared = json.loads(json.dumps(q1[0]))  # p1 is also judged for q2, with its own grades there
    shared["paragraph_data"] = {"judgments": [{"paragraphId": "p1", "query": "q2", "relevance": 1, "titleQuery": "q2"}],
                                "rankings": [{"method": "Z", "paragraphId": "p1", "queryId": "q2", "rank": 0, "score": 0.5}]}
    shared["exam_grades"] = [{"self_ratings": [{"nugget_id": "q2/a", "self_rating": 3}], "llm": "google/flan-t5-large",
                              "prompt_info": {"prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices"}}]
    lines[1][1].append(shared)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
    return path


def _same_data(a: ExamData, b: ExamData) -> None:
    assert a.passages == b.passages
    assert a.judgments == b.judgments
    assert set(a.runs) == set(b.runs)
    for name in a.runs:
        assert a.runs[name].rankings == b.runs[name].rankings
    assert set(a.recorded) == set(b.recorded)
    for pair, grades in a.recorded.items():
        key = lambda g: (str(g.llm), str(g.prompt_class), g.grade, str(g.answer))  # noqa: E731
        assert sorted(grades, key=key) == sorted(b.recorded[pair], key=key), pair


@pytest.mark.parametrize("name", ["again.jsonl", "again.jsonl.gz"])
def test_load_export_load_keeps_every_field_we_read(tmp_path: Path, name: str) -> None:
    original = load_runs([_rich_file(tmp_path / "rich.jsonl.gz")]).data
    summary = export_workbench(tmp_path / name, original)
    assert summary.queries == 2 and summary.paragraphs == 9 and summary.our_grades == 0
    again = load_runs([tmp_path / name]).data
    _same_data(original, again)
    assert again.recorded[("p2", "q1/direct")][0].prompt_class in {"Sun", "Thomas"}
    # and once more: the export of an export is byte-identical
    export_workbench(tmp_path / ("b-" + name), again)
    assert (tmp_path / name).read_bytes() == (tmp_path / ("b-" + name)).read_bytes()


def test_export_writes_the_workbench_fields(tmp_path: Path) -> None:
    data = load_runs([write_exam(tmp_path)[0]]).data
    export_workbench(tmp_path / "out.jsonl", data)
    qid, paras = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    para = paras[0]
    assert qid == "q1" and para["paragraph_id"] == "p1" and para["text"] == "alpha is the first letter"
    assert para["paragraph_data"]["judgments"] == [{"paragraphId": "p1", "query": "q1", "relevance": 2, "titleQuery": "q1"}]
    assert {r["method"] for r in para["paragraph_data"]["rankings"]} == {"A"}
    entry = para["exam_grades"][0]
    assert entry["self_ratings"] == [{"question_id": "q1/a", "self_rating": 5}, {"question_id": "q1/b", "self_rating": 0}]
    assert entry["correctAnswered"] == ["q1/a"] and entry["wrongAnswered"] == ["q1/b"] and entry["exam_ratio"] == 0.5
    assert entry["llm"] == "google/flan-t5-large" and entry["prompt_info"]["prompt_class"].startswith("QuestionSelfRated")


def test_export_of_our_grades_reads_back_as_recorded(tmp_path: Path) -> None:
    exam, _ = write_exam(tmp_path)
    data = load_runs([exam]).data
    banks = load_bank(write_bank(tmp_path / "kw.jsonl", KEYWORD_BANK))
    grader = KeywordGrader()
    view, outcome = grade_banks(data, banks, grader, GradeCache(None), k=2, pool="judged")
    summary = export_view(tmp_path / "ours.jsonl.gz", view, outcome, grader.spec())
    assert summary.our_grades == 16 and summary.recorded_grades == 20
    back = load_runs([tmp_path / "ours.jsonl.gz"]).data
    ours = {pair: g for pair, recs in back.recorded.items() for g in recs if g.llm == "kw-model"}
    assert {pair: g.grade for pair, g in ours.items()} == outcome.grades
    assert all(g.prompt_class == "KeywordPrompt" for g in ours.values())
    assert ours[("p1", "q1/k-alpha")].answer == "alpha" and ours[("p4", "q1/k-alpha")].answer == "no"
    with gzip.open(tmp_path / "ours.jsonl.gz", "rt") as src:
        line = json.loads(src.readline())
    entry = line[1][0]["exam_grades"][-1]
    assert entry["llm_options"] == {"grader": "keyword", "version": "1"}


def test_export_refuses_a_wrong_name_and_grades_without_spec(tmp_path: Path) -> None:
    data = load_runs([write_exam(tmp_path)[0]]).data
    with pytest.raises(InputError, match=r"\.jsonl or \.jsonl\.gz"):
        export_workbench(tmp_path / "out.json", data)
    with pytest.raises(InputError, match="grader's spec"):
        export_workbench(tmp_path / "out.jsonl", data, grades={("p1", "q1/a"): 3})


def _bank_of_the_exam(tmp_path: Path) -> Any:
    questions = {"q1": {"q1/a": "Question a of q1?", "q1/b": "Question b of q1?"},
                 "q2": {"q2/a": "Question a of q2?", "q2/b": "Question b of q2?"}}  # q2/c left out
    return load_bank(write_bank(tmp_path / "bank.jsonl", questions))


def test_import_stores_grades_under_the_recorded_graders_identity(tmp_path: Path) -> None:
    exam, _ = write_exam(tmp_path)
    banks = _bank_of_the_exam(tmp_path)
    cache = GradeCache(tmp_path / "cache.sqlite")
    imported = import_workbench_grades(exam, cache, banks)
    assert len(imported) == 1
    run = imported[0]
    assert (run.llm, run.prompt_class, run.stored, run.skipped) == (
        "google/flan-t5-large", "QuestionSelfRatedUnanswerablePromptWithChoices", 16, 4)  # q2/c not in the bank
    data = load_runs([exam]).data
    grader = RecordedGrader(GraderConfig(options={"llm": run.llm, "prompt_class": run.prompt_class}, data=data))
    assert grader.spec().fingerprint() == run.fingerprint
    bank_q1 = banks[0]
    request = GradingRequest(bank_q1.query, bank_q1.test_points[0], data.passages["p1"])
    stored = cache.get_many([cache_key(run.fingerprint, grader.cache_payload(request))])
    (grade,) = stored.values()
    assert grade.grade == 5 and grade.extracted_answer == "answer p1 q1/a" and grade.grader == "recorded"
    cache.close()


def test_a_cache_reading_recorded_grader_finds_every_imported_grade(tmp_path: Path) -> None:
    """What the recorded grader gains once it reads the cache: grades without the paragraph file."""
    exam, _ = write_exam(tmp_path)
    banks = _bank_of_the_exam(tmp_path)
    cache = GradeCache(tmp_path / "cache.sqlite")
    import_workbench_grades(exam, cache, banks)
    data = load_runs([exam]).data
    options = {"llm": "google/flan-t5-large", "prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices"}

    class CachedRecorded(RecordedGrader):
        def uses_cache(self) -> bool:
            return True

    grader = CachedRecorded(GraderConfig(options=options, data=data))
    grader.recorded = {}  # nothing to replay: every grade must come from the cache
    requests = pool_pairs(banks, data.runs.values(), data.passages, k=2)
    outcome = run_grading_pass(grader, requests, cache)
    assert outcome.cache_hits == outcome.unique == len(requests) and not outcome.failures
    assert outcome.grades[("p7", "q2/b")] == 5
    cache.close()
