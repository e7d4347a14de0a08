"""Bank edit impact on a hand-made case whose changes are known.

Keyword grader (grade 5 when the question's last word is in the passage), k = 2, tau = 4.
Old bank q1: alpha?, beta?   New bank q1: alpha?, useful? (an edit of beta?), the letter? (added).
q2 is the same in both banks and must not be graded.

    q1 passage  alpha beta useful letter   old label -> new label
    p1 (A)      5     0    0      5        5 -> 5
    p2 (A, C)   0     5    0      0        5 -> 0   (loses relevance)
    p3 (B)      5     5    0      0        5 -> 5
    p4 (B, C)   0     0    5      0        0 -> 5   (gains relevance)

EXAM-Cover@2 on q1, old -> new: A 1 -> 2/3, B 1 -> 2/3, C 1/2 -> 1/3; over two queries the means move
by -1/6, -1/6, -1/12. P@2 on q1: A 1 -> 1/2, B 1/2 -> 1, C 1/2 -> 1/2: the means move -1/4, +1/4, 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.analysis.edit_impact import bank_diff, bank_edit_impact
from exam_harness.cli import main
from exam_harness.config.options import ExamOptions
from exam_harness.exam.plan import ExamPlan, make_plan
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import grade_banks
from exam_harness.grading.setup import GradingSetup
from exam_harness.io import load_bank, load_runs
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, KeywordGrader, write_bank, write_exam


def plan(*measures: str) -> ExamPlan:
    """k = 2, tau = 4 (the keyword grader's default), the max-grade label."""
    return make_plan(ExamOptions(k=2, measures=measures or ("P@2",)), KeywordGrader().spec())

NEW_BANK = {
    "q1": {"q1/k-alpha": "What is alpha?", "q1/k-useful": "What is useful?", "q1/k-letter": "What is the letter?"},
    "q2": KEYWORD_BANK["q2"],
}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    exam, _ = write_exam(tmp_path / "data")
    old = write_bank(tmp_path / "old.jsonl", KEYWORD_BANK)
    new = write_bank(tmp_path / "new.jsonl", NEW_BANK)
    return exam, old, new


def test_bank_diff_finds_edits_additions_removals_and_changes(tmp_path: Path) -> None:
    old = load_bank(write_bank(tmp_path / "o.jsonl", {"q1": {"q1/x": "What is beta?", "q1/y": "Where is it?",
                                                             "q1/z": "Who wrote it?"}, "q3": {"q3/a": "Gone?"}}))
    new = load_bank(write_bank(tmp_path / "n.jsonl", {"q1": {"q1/w": "What is useful?", "q1/y": "Where is it now?",
                                                             "q1/v": "Completely different wording"}}))
    changes = [(c.query_id, c.change, c.old_id, c.test_point_id) for c in bank_diff(old, new)]
    assert changes == [
        ("q1", "changed", "q1/y", "q1/y"),
        ("q1", "edited", "q1/x", "q1/w"),
        ("q1", "removed", "q1/z", "q1/z"),
        ("q1", "added", None, "q1/v"),
        ("q3", "removed", "q3/a", "q3/a"),
    ]
    assert bank_diff(old, old) == []


def test_edit_impact_grades_only_the_changed_test_points(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    exam, old_path, new_path = setup
    data = load_runs([exam]).data
    old_banks, new_banks = load_bank(old_path), load_bank(new_path)
    cache = GradeCache(tmp_path / "cache.sqlite")
    grade_banks(data, old_banks, KeywordGrader(), cache, k=2, pool="judged")  # the old bank was graded before the edit
    grader = KeywordGrader()
    impact = bank_edit_impact(data, old_banks, new_banks, GradingSetup(grader, plan("P@2"), 256), cache)
    assert sorted(grader.graded) == sorted((p, t) for p in ("p1", "p2", "p3", "p4") for t in ("q1/k-useful", "q1/k-letter"))
    assert impact.old_grading is not None and impact.old_grading.cache_hits == 8 and impact.old_grading.graded == 0
    assert impact.new_grading is not None and impact.new_grading.cache_hits == 4 and impact.new_grading.graded == 8
    assert impact.affected_queries == ["q1"] and impact.queries == 2
    assert [(c.change, c.old_id, c.test_point_id) for c in impact.changes] == [
        ("edited", "q1/k-beta", "q1/k-useful"), ("added", None, "q1/k-letter")]
    flips = {(c.passage_id, c.old_label, c.new_label, c.old_relevant, c.new_relevant, c.judgment) for c in impact.label_changes}
    assert flips == {("p2", 5, 0, True, False, 1), ("p4", 0, 5, False, True, 0)}
    cover = {m.run: m for m in impact.moves["exam-cover@2"]}
    assert {r: m.delta for r, m in cover.items()} == pytest.approx({"A": -1 / 6, "B": -1 / 6, "C": -1 / 12})
    assert cover["C"].per_query == {"q1": pytest.approx((0.5, 1 / 3))}
    assert [m.run for m in impact.moves["exam-cover@2"]] == ["A", "B", "C"]  # largest move first
    p2 = {m.run: m.delta for m in impact.moves["P@2"]}
    assert p2 == pytest.approx({"A": -0.25, "B": 0.25, "C": 0.0})
    cache.close()


def test_edit_impact_without_old_grades_grades_the_old_side_of_the_changed_queries_only(
    setup: tuple[Path, Path, Path],
) -> None:
    exam, old_path, new_path = setup
    data = load_runs([exam]).data
    grader = KeywordGrader()
    impact = bank_edit_impact(data, load_bank(old_path), load_bank(new_path), GradingSetup(grader, plan(), 256),
                              GradeCache(None))
    assert all(tid.startswith("q1/") for _, tid in grader.graded) and len(grader.graded) == 8 + 8
    assert {m.run: m.delta for m in impact.moves["exam-cover@2"]} == pytest.approx({"A": -1 / 6, "B": -1 / 6, "C": -1 / 12})


def test_edit_impact_with_a_removed_query_scores_every_query(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    exam, old_path, _ = setup
    data = load_runs([exam]).data
    only_q1 = load_bank(write_bank(tmp_path / "q1.jsonl", {"q1": KEYWORD_BANK["q1"]}))
    impact = bank_edit_impact(data, load_bank(old_path), only_q1, GradingSetup(KeywordGrader(), plan(), 256),
                              GradeCache(None))
    # old: A (1 + 1)/2, B (1 + 1/2)/2, C (1/2 + 0)/2; new over q1 alone: A 1, B 1, C 1/2
    assert {m.run: m.delta for m in impact.moves["exam-cover@2"]} == pytest.approx({"A": 0.0, "B": 0.25, "C": 0.25})
    assert [c.change for c in impact.changes] == ["removed", "removed"]


def test_edit_impact_cli(
    setup: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)  # the CLI loads ./conftest.py, as pytest does
    monkeypatch.chdir(tmp_path)
    exam, old_path, new_path = setup
    out = tmp_path / "impact.json"
    code = main(["analyze", "edit-impact", str(exam), "--old", str(old_path), "--new", str(new_path), "--grader", "keyword",
                 "--cache", str(tmp_path / "c.sqlite"), "--k", "2", "--measures", "P@2", "--json", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "edited" in printed and "q1/k-useful" in printed and "lost" in printed and "gained" in printed
    assert "-0.1667" in printed and "new bank: 12 pairs, 4 from the cache, 8 graded" in printed
    doc = json.loads(out.read_text())
    assert doc["affected_queries"] == ["q1"] and len(doc["label_changes"]) == 2
    assert main(["analyze", "edit-impact", str(exam), "--old", str(old_path), "--new", str(new_path), "--grader",
                 "keyword", "--min-grade", "0"]) == 4
    assert "--min-grade must be an integer in 1..5, got '0'" in capsys.readouterr().err


def test_edit_impact_shows_no_trec_measure_move_for_a_run_of_generated_answers(
    setup: tuple[Path, Path, Path], tmp_path: Path,
) -> None:
    """Issue 27: a trec measure gives generated answers no value, so the edit moves them on EXAM-Cover only."""
    exam, old_path, new_path = setup
    answers = tmp_path / "gen.responses.jsonl"
    answers.write_text(json.dumps({"query_id": "q1", "run": "G", "response": "It is alpha and beta here"}) + "\n")
    data = load_runs([exam, answers]).data
    impact = bank_edit_impact(data, load_bank(old_path), load_bank(new_path),
                              GradingSetup(KeywordGrader(), plan("P@2"), 256), GradeCache(None))
    assert {m.run for m in impact.moves["P@2"]} == {"A", "B", "C"}
    cover = {m.run: m.delta for m in impact.moves["exam-cover@2"]}
    assert cover["G"] == pytest.approx(-1 / 3)  # q1: 2 of 2 covered -> alpha, 1 of 3; the mean over 2 queries
