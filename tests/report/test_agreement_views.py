"""The agreement views of issue 11: "min answers = m", per-row kappa, the merged 3-way table and the
agreement of recorded direct grades, by hand on the hand-made exam (tests/helpers.py) and on the
published data (DL19, LLMJudge dev).

The hand-made exam, with the direct grades these tests add (a 0..3 labelling prompt and a yes/no one):

    passage  test point grades   judged   2nd highest   labelling   yes/no
    q1 p1    5 0                 2        0             2           1
    q1 p2    0 4                 1        0             0           1
    q1 p3    3 3                 0        3             1           0
    q1 p4    0 0                 0        0             0           0
    q2 p5    4 4 0               3        4             3           1
    q2 p6    0 0 0               0        0             0           0
    q2 p7    2 5 0               2        2             1           1
    q2 p8    1 0 0               0        0             0           0

Relevant = judged >= 2: p1, p5, p7 (3 of 8). Cohen's kappa = (p_o - p_e) / (1 - p_e), p_e from the
margins; every expected value below is worked out in its comment.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.core.models import RecordedGrade
from exam_harness.features.agreement.compute import direct_agreement, min_answers_agreement
from exam_harness.measures.kappa import (
    cohen_kappa,
    merged,
    merged_judgment_levels,
    mth_highest,
    one_vs_rest,
    reference_row_pairing,
    row_kappas,
)
from tests.helpers import GRADES, JUDGED, paragraph_lines

LABELLING = {"p1": 2, "p2": 0, "p3": 1, "p4": 0, "p5": 3, "p6": 0, "p7": 1, "p8": 0}
YES_NO = {"p1": True, "p2": True, "p3": False, "p4": False, "p5": True, "p6": False, "p7": True, "p8": False}
TEST_POINTS = {q: [f"{q}/{t}" for t in next(iter(by_p.values()))] for q, by_p in GRADES.items()}
FLAT_GRADES = {(p, f"{q}/{t}"): g for q, by_p in GRADES.items() for p, ts in by_p.items() for t, g in ts.items()}


def write_direct_exam(folder: Path) -> Path:
    """The hand-made exam with two recorded direct grading runs in each paragraph's ``grades``."""
    lines: list[list[Any]] = paragraph_lines()
    for _qid, paras in lines:
        for para in paras:
            pid = para["paragraph_id"]
            para["grades"] = [
                {"correctAnswered": LABELLING[pid] > 0, "self_ratings": LABELLING[pid], "answer": "",
                 "llm": "flan-t5-large", "prompt_info": {"prompt_class": "labelling", "is_self_rated": True}},
                {"correctAnswered": YES_NO[pid], "answer": "yes" if YES_NO[pid] else "no",
                 "llm": "flan-t5-large", "prompt_info": {"prompt_class": "Sun", "is_self_rated": False}},
            ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "direct.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
    return path


# --- measures: pure functions over tables -------------------------------------------------------


def test_mth_highest_is_the_mth_grade_from_the_top_or_0() -> None:
    assert [mth_highest([5, 0, 3, 3], m) for m in (1, 2, 3, 4, 5)] == [5, 3, 3, 0, 0]  # m = 5: only 4 grades
    assert mth_highest([], 1) == 0
    for bad in (0, -1, True):
        with pytest.raises(InputError, match="positive integer"):
            mth_highest([1], bad)


def test_one_vs_rest_merged_and_row_kappas_by_hand() -> None:
    table = {5: {0: 1, 3: 2}, 2: {2: 3, 1: 1}, 0: {0: 4, 1: 1}}
    # label 5 vs level 3: TP 2, FP 1, FN 0, TN 9
    assert one_vs_rest(table, {5}, {3}) == {1: {1: 2, 0: 1}, 0: {1: 0, 0: 9}}
    # p_o = 11/12, p_e = (3*2 + 9*10)/144 = 96/144: kappa = (132 - 96)/(144 - 96) = 0.75
    assert row_kappas(table, {5: {3}})[5] == pytest.approx(0.75)
    levels = merged_judgment_levels(2, {0, 1, 2, 3})
    assert levels == (frozenset({3}), frozenset({2}), frozenset({0, 1}))
    assert merged_judgment_levels(1, {0, 1, 2, 3}) == (frozenset({2, 3}), frozenset({1}), frozenset({0}))
    three = merged(table, [{4, 5}, {1, 2, 3}, {0}], levels)
    # keys: 2 = best group; grade 5 judged 3 -> [2][2], judged 0 -> [2][0]
    assert three == {2: {2: 2, 1: 0, 0: 1}, 1: {2: 0, 1: 3, 0: 1}, 0: {2: 0, 1: 0, 0: 5}}
    # p_o = 10/12; margins rows 3, 4, 5, columns 2, 3, 7: p_e = (6 + 12 + 35)/144 = 53/144
    assert cohen_kappa(three) == pytest.approx((120 - 53) / (144 - 53))
    with pytest.raises(InputError, match="one to one"):
        merged(table, [{5}], levels)


def test_reference_pairing_of_grade_rows() -> None:
    assert reference_row_pairing(2, range(6)) == {5: {3}, 4: {3}, 3: {2}, 2: {2}, 1: {2}, 0: {0}}  # TREC DL
    assert reference_row_pairing(1, range(6)) == {5: {2}, 4: {2}, 3: {1}, 2: {1}, 1: {1}, 0: {0}}  # CAR


# --- analysis: the views ------------------------------------------------------------------------


def test_min_answers_2_by_hand() -> None:
    (view,) = min_answers_agreement(FLAT_GRADES, TEST_POINTS, JUDGED, [2])
    # 2nd highest grades: p3 3 (judged 0), p5 4 (3), p7 2 (2), every other passage 0
    assert view.label == "min-answers-2" and view.min_answers == 2 and view.passages == 8
    assert view.table == {0: {0: 3, 1: 1, 2: 1, 3: 0}, 2: {0: 0, 1: 0, 2: 1, 3: 0}, 3: {0: 1, 1: 0, 2: 0, 3: 0},
                          4: {0: 0, 1: 0, 2: 0, 3: 1}}
    by_name = {b.name: b for b in view.binarised}
    # lenient (>= 1): predicted p3 p5 p7; TP 2, FP 1, FN 1 (p1), TN 4: p_o = 6/8,
    # p_e = (3*3 + 5*5)/64 = 34/64: kappa = (48 - 34)/(64 - 34) = 7/15
    assert by_name["lenient"].counts == {1: {1: 2, 0: 1}, 0: {1: 1, 0: 4}}
    assert by_name["lenient"].kappa == pytest.approx(7 / 15)
    # strict (>= 4): predicted p5; TP 1, FP 0, FN 2, TN 5: p_o = 6/8, p_e = (1*3 + 7*5)/64 = 38/64: 10/26
    assert by_name["strict"].kappa == pytest.approx(5 / 13)


def test_min_answers_1_row_kappas_and_merged_table_by_hand() -> None:
    (view,) = min_answers_agreement(FLAT_GRADES, TEST_POINTS, JUDGED, [1], min_grades=[3])
    # max grades: p1 5 (j2), p2 4 (j1), p3 3 (j0), p4 0, p5 4 (j3), p6 0, p7 5 (j2), p8 1 (j0)
    assert [b.name for b in view.binarised] == ["lenient", "strict", "min-grade-3"]
    rows = {r.label: r for r in view.row_kappas}
    assert [r.label for r in view.row_kappas] == [5, 4, 3, 1, 0]  # highest first, observed grades only
    # 5 vs judged 3: predicted p1 p7, truth p5: TP 0 FP 2 FN 1 TN 5, p_o 5/8, p_e (2*1 + 6*7)/64 = 44/64: -0.2
    assert rows[5].judgments == [3] and rows[5].counts == {1: {1: 0, 0: 2}, 0: {1: 1, 0: 5}}
    assert rows[5].kappa == pytest.approx(-0.2)
    # 4 vs judged 3: predicted p2 p5: TP 1 FP 1 FN 0 TN 6, p_o 7/8, p_e 44/64: (56 - 44)/20 = 0.6
    assert rows[4].kappa == pytest.approx(0.6)
    # 3 vs judged 2: predicted p3, truth p1 p7: TP 0 FP 1 FN 2 TN 5, p_e (1*2 + 7*6)/64 = 44/64: -0.2
    assert rows[3].judgments == [2] and rows[3].kappa == pytest.approx(-0.2)
    assert rows[1].kappa == pytest.approx(-0.2)  # p8, the same margins as p3
    # 0 vs judged 0: predicted p4 p6, truth p3 p4 p6 p8: TP 2 FN 2 TN 4, p_o 6/8, p_e (2*4 + 6*4)/64 = 0.5: 0.5
    assert rows[0].judgments == [0] and rows[0].kappa == pytest.approx(0.5)
    three = view.merged
    assert three is not None
    assert three.grades == [[5, 4], [3, 2, 1], [0]] and three.judgments == [[3], [2], [1, 0]]
    # 4-5: p1 (j2), p2 (j1), p5 (j3), p7 (j2); 1-3: p3, p8 (j0); 0: p4, p6 (j0)
    assert three.counts == {2: {2: 1, 1: 2, 0: 1}, 1: {2: 0, 1: 0, 0: 2}, 0: {2: 0, 1: 0, 0: 2}}
    # p_o = 3/8; rows 4, 2, 2, columns 1, 2, 5: p_e = (4 + 4 + 10)/64 = 18/64: (24 - 18)/(64 - 18) = 3/23
    assert three.kappa == pytest.approx(3 / 23)
    # 4-5 vs {3}: TP 1 FP 3 TN 4, p_e (4*1 + 4*7)/64 = 1/2, p_o 5/8: 0.25
    # 1-3 vs {2}: TP 0 FP 2 FN 2 TN 4, p_e (2*2 + 6*6)/64 = 40/64, p_o 4/8: -1/3
    # 0 vs {0,1}: TP 2 FN 3 TN 3, p_e (2*5 + 6*3)/64 = 28/64, p_o 5/8: 1/3
    assert three.row_kappas == pytest.approx([0.25, -1 / 3, 1 / 3])


def test_direct_grades_by_hand(tmp_path: Path) -> None:
    from exam_harness.io import load_runs

    data = load_runs([write_direct_exam(tmp_path)]).data
    views = {v.prompt_class: v for v in direct_agreement(data.recorded, data.judgments)}
    assert set(views) == {"labelling", "Sun"}
    labelling = views["labelling"]
    assert labelling.llm == "flan-t5-large" and labelling.passages == 8
    assert labelling.table == {0: {0: 3, 1: 1, 2: 0, 3: 0}, 1: {0: 1, 1: 0, 2: 1, 3: 0},
                               2: {0: 0, 1: 0, 2: 1, 3: 0}, 3: {0: 0, 1: 0, 2: 0, 3: 1}}
    kappas = {b.min_grade: b.kappa for b in labelling.binarised}
    assert [b.name for b in labelling.binarised] == ["lenient", "min-grade-2", "min-grade-3"]  # cuts 1..3
    # >= 1: predicted p1 p3 p5 p7: TP 3 FP 1 TN 4, p_o 7/8, p_e (4*3 + 4*5)/64 = 1/2: 0.75
    # >= 2: predicted p1 p5: TP 2 FN 1 TN 5, p_o 7/8, p_e (2*3 + 6*5)/64 = 36/64: 20/28
    # >= 3: predicted p5: TP 1 FN 2 TN 5, p_o 6/8, p_e (1*3 + 7*5)/64 = 38/64: 10/26
    assert kappas == pytest.approx({1: 0.75, 2: 5 / 7, 3: 5 / 13})
    # yes/no: predicted p1 p2 p5 p7: TP 3 FP 1 TN 4, as the labelling prompt at >= 1
    (yes_no,) = views["Sun"].binarised
    assert yes_no.name == "lenient" and yes_no.kappa == pytest.approx(0.75)


def test_direct_grades_first_of_a_run_counts_and_unjudged_are_left_out() -> None:
    rec = RecordedGrade(test_point_id="q/direct", grade=1, llm="m", prompt_class="p")
    again = RecordedGrade(test_point_id="q/direct", grade=0, llm="m", prompt_class="p")
    recorded = {("a", "q/direct"): [rec, again], ("b", "q/direct"): [again], ("c", "q/direct"): [rec]}
    (view,) = direct_agreement(recorded, {"q": {"a": 2, "b": 0}})  # c is not judged
    assert view.table == {0: {0: 1, 2: 0}, 1: {0: 0, 2: 1}} and view.binarised[0].kappa == pytest.approx(1.0)


# --- the command line ---------------------------------------------------------------------------


def test_evaluate_min_answers_and_direct_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_direct_exam(tmp_path)
    out = tmp_path / "ev.json"
    code = main(["evaluate", str(path), "--k", "2", "--bootstrap", "0", "--min-answers", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "Min answers = m" in printed and "Min answers = 2, merged 3-way" in printed
    assert "Direct grades flan-t5-large / labelling" in printed and "≥ 2: 0.714" in printed
    doc = json.loads(out.read_text())
    agreement = doc["sections"]["agreement"]
    (view,) = agreement["min_answers"]
    assert view["min_answers"] == 2
    assert {b["name"]: b["kappa"] for b in view["binarised"]} == pytest.approx({"lenient": 7 / 15, "strict": 5 / 13})
    assert {v["prompt_class"] for v in agreement["direct"]} == {"labelling", "Sun"}
    assert "external-qrels" not in doc["sections"]


def test_evaluate_adds_no_keys_unless_asked(tmp_path: Path) -> None:
    from tests.helpers import write_exam

    exam, _ = write_exam(tmp_path / "data")  # no direct grades, no --min-answers, no --qrels
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(exam), "--k", "2", "--bootstrap", "0", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc) == {"kind", "schema_version", "tool_version", "created", "measures", "systems",
                        "leaderboards", "settings", "grading", "collection", "sections"}
    # schema 4.1: the optional parts are sections; the judgments of the files give the agreement tables alone
    assert set(doc["sections"]) == {"agreement"}
    assert doc["sections"]["agreement"]["min_answers"] == [] and doc["sections"]["agreement"]["direct"] == []


def test_evaluate_bare_min_answers_means_1_2_5(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import write_exam

    exam, _ = write_exam(tmp_path / "data")
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(exam), "--k", "2", "--bootstrap", "0", "--min-answers", "--json", str(out)]) == 0
    assert [v["min_answers"] for v in json.loads(out.read_text())["sections"]["agreement"]["min_answers"]] == [1, 2, 5]
    capsys.readouterr()
    assert main(["evaluate", str(exam), "--k", "2", "--bootstrap", "0", "--min-answers", "0"]) == 4
    assert "--min-answers takes positive integers" in capsys.readouterr().err


def test_analyze_agreement_has_every_view_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_direct_exam(tmp_path)
    out = tmp_path / "agreement.json"
    assert main(["analyze", "agreement", str(path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Cohen's κ = 0.750" in printed  # today's strict table is still first
    assert "Min answers = 5, merged 3-way" in printed and "Direct grades flan-t5-large / Sun" in printed
    doc = json.loads(out.read_text())
    assert doc["label"] == "max-grade" and [v["min_answers"] for v in doc["min_answers"]] == [1, 2, 5]
    one = doc["min_answers"][0]
    assert one["table"] == doc["table"]  # m = 1 is the max-grade label
    assert one["merged"]["kappa"] == pytest.approx(3 / 23)
    assert len(doc["direct_agreement"]) == 2
    assert main(["analyze", "agreement", str(path), "--min-answers", "3", "--json", str(out)]) == 0
    assert [v["min_answers"] for v in json.loads(out.read_text())["min_answers"]] == [3]


# --- published data -----------------------------------------------------------------------------


@pytest.mark.realdata
def test_dl19_min_answers_2_agrees_best(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "dl19.json"
    code = main(["evaluate", str(shared_data / "dl19" / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"),
                 "--min-answers", "1", "2", "5", "--brief", "--bootstrap", "0", "--no-progress", "--json", str(out)])
    assert code == 0
    agreement = json.loads(out.read_text())["sections"]["agreement"]
    kappa = {v["min_answers"]: {b["name"]: b["kappa"] for b in v["binarised"]} for v in agreement["min_answers"]}
    assert kappa[2]["lenient"] == pytest.approx(0.343, abs=0.001)
    assert kappa[2]["strict"] == pytest.approx(0.361, abs=0.001)
    # m = 1 is today's max-grade table; m = 2 beats it and m = 5 on both cuts
    assert kappa[1] == pytest.approx({b["name"]: b["kappa"] for b in agreement["tables"]["binarised"]})
    assert kappa[2]["lenient"] > max(kappa[1]["lenient"], kappa[5]["lenient"])
    assert kappa[2]["strict"] > max(kappa[1]["strict"], kappa[5]["strict"])
    assert all(v["passages"] == 9260 for v in agreement["min_answers"])
    assert agreement["direct"] == []  # DL19's file records no direct grades


@pytest.mark.realdata
def test_llmjudge_dev_direct_labelling_agreement(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "llmjudge.json"
    code = main(["analyze", "agreement", str(shared_data / "llmjudge" / "llmjudge-dev-graded.jsonl.gz"),
                 "--prompt-class", "QuestionSelfRatedUnanswerablePromptWithChoices", "--min-answers", "2",
                 "--json", str(out)])
    assert code == 0
    (direct,) = json.loads(out.read_text())["direct_agreement"]
    assert direct["prompt_class"] == "exampp-llmjudge-labelling" and direct["passages"] == 7263
    kappa = {b["min_grade"]: b["kappa"] for b in direct["binarised"]}
    assert kappa[1] == pytest.approx(0.278, abs=0.001)  # lenient
    assert kappa[2] == pytest.approx(0.364, abs=0.001)  # at >= 2
