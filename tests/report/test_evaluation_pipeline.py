"""The evaluation pipeline on the small hand-made Workbench file of tests/helpers.py, whose numbers
are computed by hand (see that module's docstring for the exam)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.exam.plan import make_plan
from exam_harness.features.agreement.section import Agreement
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import grade_banks, replay
from exam_harness.io import load_bank, load_runs
from exam_harness.measures.significance import (
    baseline_gate,
    bootstrap_ci,
    bootstrap_cis,
    compare_to_baseline,
    paired_bootstrap,
    paired_permutation_test,
    paired_t_test,
)
from exam_harness.report.evaluation import evaluate_exam, score_evaluation
from exam_harness.results.evaluation import EvaluationReport, correlation_of
from tests.helpers import (
    GRADES,
    KEYWORD_BANK,
    LLM,
    OFFICIAL,
    PROMPT,
    KeywordGrader,
    evaluation_boards,
    paragraph_lines,
    write_bank,
    write_exam,
)


@pytest.fixture
def exam(tmp_path: Path) -> tuple[Path, Path]:
    return write_exam(tmp_path)


def evaluate(exam: tuple[Path, Path], official: dict[str, float] | None = None, **settings: Any) -> EvaluationReport:
    """Replay the exam's recorded grades and compute every leaderboard (k = 2, tau 3 and 4 by default)."""
    view, outcome, spec = replay(load_runs([exam[0]]).data)
    values: dict[str, Any] = {"k": 2, "min_grade": (3, 4), "measures": ("P@2", "mrr"), "bootstrap": 200}
    values.update(settings)
    options = ExamOptions(**values)
    plan = make_plan(options, spec, several=True)
    scored = score_evaluation(view, outcome, plan, spec)
    return evaluate_exam(scored, spec, options, official=OFFICIAL if official is None else official)


def test_replay_finds_queries_test_points_and_pool(exam: tuple[Path, Path]) -> None:
    view, outcome, spec = replay(load_runs([exam[0]]).data)
    assert view.test_points == {"q1": ["q1/a", "q1/b"], "q2": ["q2/a", "q2/b", "q2/c"]}
    assert view.pooled == {"q1": ["p1", "p2", "p3", "p4"], "q2": ["p5", "p6", "p7", "p8"]}
    assert outcome.grades[("p7", "q2/b")] == 5 and len(outcome.grades) == 4 * 2 + 4 * 3
    assert outcome.answers[("p1", "q1/a")] == "answer p1 q1/a"
    assert (spec.name, spec.model, spec.prompt_class) == ("recorded", LLM, PROMPT)
    assert not outcome.failures


def test_exam_cover_and_n_exam_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate(exam)
    cover4 = result.find("exam-cover@2", 4)
    assert cover4.systems == pytest.approx({"A": (1 + 2 / 3) / 2, "B": (0 + 1 / 3) / 2, "C": (0.5 + 0) / 2})
    assert cover4.stderr["B"] == pytest.approx(math.sqrt(2 * (1 / 6) ** 2) / math.sqrt(2))  # stdev([0, 1/3]) / sqrt(2)
    n4 = result.find("n-exam-cover@2", 4)  # q2/c is covered by nobody: q2 normalises by 2
    assert n4.systems == pytest.approx({"A": 1.0, "B": 0.25, "C": 0.25})
    cover3 = result.find("exam-cover@2", 3)
    assert cover3.systems == pytest.approx({"A": (1 + 2 / 3) / 2, "B": (1 + 1 / 3) / 2, "C": (0.5 + 0) / 2})
    assert cover4.queries == 2 and cover4.label is None


def test_correlations_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate(exam)
    cover = correlation_of(result.sections, result.find("exam-cover@2", 4).name)  # A 1, C 2, B 3 vs A 1, B 2, C 3
    assert cover is not None and cover.n == 3
    assert cover.spearman == pytest.approx(0.5) and cover.kendall == pytest.approx(1 / 3)
    n_exam = correlation_of(result.sections, result.find("n-exam-cover@2", 4).name)  # B and C tied: average ranks
    assert n_exam is not None
    assert n_exam.spearman == pytest.approx(1.5 / math.sqrt(3)) and n_exam.kendall == pytest.approx(2 / math.sqrt(6))


def test_qrels_leaderboards_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate(exam)
    p2 = result.find("P@2", 4, "max-grade")  # labels: max grade, relevant from 4
    assert p2.relevance_level == 4
    assert p2.systems == pytest.approx({"A": 1.0, "B": 0.25, "C": 0.25})
    mrr = result.find("mrr", 4, "max-grade")
    assert mrr.systems == pytest.approx({"A": 1.0, "B": 0.5, "C": 0.25})
    assert result.find("P@2", 3, "max-grade").systems["B"] == pytest.approx((0.5 + 0.5) / 2)  # p3 (3) now counts
    count = result.find("P@2", 4, "count")  # count of test points >= 4, relevance level 1
    assert count.relevance_level == 1 and count.systems["A"] == pytest.approx(1.0)
    at_least = result.find("P@2", 4, "at-least-m")  # at least 2 test points >= 4: only p5
    assert at_least.systems == pytest.approx({"A": 0.25, "B": 0.0, "C": 0.0})


def test_agreement_tables_by_hand(exam: tuple[Path, Path]) -> None:
    section = evaluate(exam).sections["agreement"]
    assert isinstance(section, Agreement)
    agreement = section.tables
    assert agreement.passages == 8 and agreement.relevance_level == 2
    assert agreement.table == {
        0: {0: 2, 1: 0, 2: 0, 3: 0}, 1: {0: 1, 1: 0, 2: 0, 3: 0}, 3: {0: 1, 1: 0, 2: 0, 3: 0},
        4: {0: 0, 1: 1, 2: 0, 3: 1}, 5: {0: 0, 1: 0, 2: 2, 3: 0},
    }
    by_name = {b.name: b for b in agreement.binarised}
    assert by_name["strict"].counts == {1: {1: 3, 0: 1}, 0: {1: 0, 0: 4}}
    assert by_name["strict"].kappa == pytest.approx(0.75)
    assert by_name["lenient"].counts == {1: {1: 3, 0: 3}, 0: {1: 0, 0: 2}}
    assert by_name["lenient"].kappa == pytest.approx(1 / 3)
    assert by_name["min-grade-3"].min_grade == 3  # one extra binarisation per asked minimum grade


def test_json_has_the_issue_shape(exam: tuple[Path, Path], tmp_path: Path) -> None:
    result = evaluate(exam, baseline="A", resamples=500)
    path = result.write_json(tmp_path / "out" / "lb.json")
    doc = json.loads(path.read_text())
    first = evaluation_boards(doc)[0]
    assert first["measure"] == "exam-cover@2" and first["min_grade"] == 3 and "label" not in first
    assert set(first["systems"]) == {"A", "B", "C"} and set(first["stderr"]) == {"A", "B", "C"}
    assert set(first["correlation"]) >= {"spearman", "kendall"}
    assert len(first["ci"]["A"]) == 2 and first["ci"]["B"][0] <= first["systems"]["B"] <= first["ci"]["B"][1]
    qrels = next(b for b in evaluation_boards(doc) if b["measure"] == "P@2")
    assert qrels["label"] == "max-grade" and qrels["min_grade"] == 3
    assert set(first["significance"]["runs"]) == {"B", "C"}
    assert doc["sections"]["agreement"]["tables"]["binarised"][1]["counts"] == {"1": {"1": 3, "0": 1}, "0": {"1": 0, "0": 4}}
    assert EvaluationReport.model_validate(doc).find("mrr", 4, "max-grade").systems["C"] == pytest.approx(0.25)
    measures = {b["measure"] for b in evaluation_boards(doc)}
    assert measures == {"exam-cover@2", "n-exam-cover@2", "P@2", "mrr", "alpha-ndcg@2"}


def test_undefined_correlation_is_null_not_nan(tmp_path: Path) -> None:
    exam = write_exam(tmp_path)
    result = evaluate(exam, official={"A": 1, "B": 1, "C": 1}, min_grade=(5,), measures=("P@2",), bootstrap=0)
    doc = json.loads(result.write_json(tmp_path / "x.json").read_text())
    assert evaluation_boards(doc)[0]["correlation"]["spearman"] is None
    assert "ci" not in evaluation_boards(doc)[0] or evaluation_boards(doc)[0]["ci"] == {}


def test_nugget_f_and_alpha_ndcg_boards(exam: tuple[Path, Path]) -> None:
    result = evaluate(exam, nugget_f=True, min_grade=(4,))
    alpha = result.find("alpha-ndcg@2", 4)
    assert alpha.systems["A"] == pytest.approx(1.0)  # A's top 2 cover everything coverable, without redundancy
    assert alpha.systems["A"] > alpha.systems["B"]
    nugget = result.find("nugget-f", 4)
    # A on q1: both nuggets matched (recall 1), response "alpha is the first letter beta comes second"
    # is 35 non-blank chars < allowance 200: F = 1. On q2: recall 2/3, precision 1: F = 10 * 2/3 / (9 + 2/3).
    assert nugget.systems["A"] == pytest.approx((1.0 + (10 * 2 / 3) / (9 + 2 / 3)) / 2)


def test_several_recorded_grading_runs_must_be_chosen(tmp_path: Path) -> None:
    path, _ = write_exam(tmp_path, extra_run={"llm": "other-model"})
    data = load_runs([path]).data
    with pytest.raises(ConfigError, match=r"several recorded grading runs.*other-model"):
        replay(data)
    _, outcome, spec = replay(data, llm="other-model")
    assert spec.model == "other-model" and len(outcome.grades) == 20
    with pytest.raises(ConfigError, match="no recorded grading run matches"):
        replay(data, prompt_class="Nope")


def test_replay_takes_each_pair_s_grade_and_answer_of_the_chosen_run(tmp_path: Path) -> None:
    """With one grading run in the file (each pair's first grade taken) and with two (the chosen
    run's grades picked out of each pair's), the grades are the file's."""
    expected = {(pid, f"{qid}/{t}"): g for qid, by_passage in GRADES.items()
                for pid, ratings in by_passage.items() for t, g in ratings.items()}
    one, _ = write_exam(tmp_path / "one")
    _, outcome, spec = replay(load_runs([one]).data)
    assert outcome.grades == expected and spec.model == LLM
    assert outcome.answers == {pair: f"answer {pair[0]} {pair[1]}" for pair in expected}
    # the other run rates every test point 0 on every passage (the same entry is added to each paragraph)
    other = [{"question_id": tid, "self_rating": 0} for tid in sorted({tid for _, tid in expected})]
    two, _ = write_exam(tmp_path / "two", extra_run={"llm": "other-model", "self_ratings": other})
    data = load_runs([two]).data
    assert replay(data, llm=LLM)[1].grades == expected
    zeros = replay(data, llm="other-model")[1].grades
    assert set(zeros) >= set(expected) and set(zeros.values()) == {0}


def test_replay_names_each_pair_without_a_recorded_grade(tmp_path: Path) -> None:
    """A pooled passage lacking a grade on one of its query's test points: that pair is a failure."""
    lines = paragraph_lines()
    para = lines[0][1][0]
    dropped = para["exam_grades"][0]["self_ratings"].pop(0)["question_id"]
    path = tmp_path / "gap.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    view, outcome, _ = replay(load_runs([path]).data)
    assert outcome.failures == {(para["paragraph_id"], dropped): "no recorded grade"}
    assert outcome.pairs == len(outcome.grades) + 1 == sum(len(view.pooled[q]) * len(view.test_points[q])
                                                           for q in view.queries)


def test_bootstrap_cis_equal_the_per_run_function() -> None:
    rng = random.Random(3)
    runs = {f"r{i}": {f"q{j}": rng.random() for j in range(17)} for i in range(5)}
    cis = bootstrap_cis(runs, n_resamples=700, seed=4, confidence=0.9)
    for run, scores in runs.items():
        _, low, high = bootstrap_ci(scores, n_resamples=700, seed=4, confidence=0.9)
        assert cis[run] == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("method", ["permutation", "bootstrap", "t-test"])
def test_a_leaderboard_comparison_equals_each_pair_s_test(method: str) -> None:
    """Every run against the baseline at once gives each pair's own test (the same resamples)."""
    rng = random.Random(7)
    runs = {f"r{i}": {f"q{j}": rng.random() + 0.05 * i for j in range(30)} for i in range(4)}
    queries = sorted(runs["r0"])
    comparisons = compare_to_baseline(runs, "r1", method=method, n_resamples=3000, seed=2, queries=queries)
    assert [c.run for c in comparisons] == ["r0", "r2", "r3"]
    base = [runs["r1"][q] for q in queries]
    for c in comparisons:
        scores = [runs[c.run][q] for q in queries]
        if method == "t-test":
            pair = paired_t_test(scores, base, confidence=0.95)
            p = pair.p
        else:
            pair = paired_bootstrap(scores, base, n_resamples=3000, seed=2, confidence=0.95)
            p = pair.p if method == "bootstrap" else paired_permutation_test(scores, base, n_resamples=3000, seed=2)
        assert (c.diff, c.p, c.ci_low, c.ci_high) == pytest.approx((pair.mean_diff, p, pair.ci_low, pair.ci_high), abs=1e-12)
        assert c.significantly_worse == (pair.mean_diff < 0 and p < 0.05)


def test_baseline_gate_names_run_difference_and_p() -> None:
    queries = [f"q{i}" for i in range(20)]
    runs = {
        "base": dict.fromkeys(queries, 0.8),
        "worse": {q: 0.8 - 0.3 - 0.01 * (i % 3) for i, q in enumerate(queries)},
        "same": {q: 0.8 + (0.01 if i % 2 else -0.01) for i, q in enumerate(queries)},
        "better": dict.fromkeys(queries, 0.95),
    }
    messages = baseline_gate(runs, "base", 0.05, "permutation", n_resamples=2000)
    assert len(messages) == 1
    message = messages[0]
    assert "'worse'" in message and "'base'" in message and "difference -0.3095" in message and "p = " in message
    by_bootstrap = baseline_gate(runs, "base", 0.05, "bootstrap", n_resamples=2000)
    assert len(by_bootstrap) == 1 and "bootstrap test over 20 queries" in by_bootstrap[0]
    assert baseline_gate(runs, "base", 1e-4, "permutation", n_resamples=2000) == []  # p >= 1/2001 always
    with pytest.raises(InputError, match="Did you mean 'base'"):
        baseline_gate(runs, "bse", 0.05, "permutation")


def test_unknown_baseline_and_too_high_grade_are_errors(exam: tuple[Path, Path]) -> None:
    with pytest.raises(InputError, match="baseline run not found"):
        evaluate(exam, baseline="Z")
    with pytest.raises(ConfigError, match=r"outside grader 'recorded'.s scale"):
        evaluate(exam, min_grade=(6,))


def test_qrels_files_are_named_by_the_one_scheme(exam: tuple[Path, Path]) -> None:
    view, outcome, spec = replay(load_runs([exam[0]]).data)
    plan = make_plan(ExamOptions(k=2, min_grade=(3, 4)), spec, several=True)
    qrels = score_evaluation(view, outcome, plan, spec, qrels=True).result.qrels
    assert sorted(qrels) == ["exam-at-least-2-min3.qrels", "exam-at-least-2-min4.qrels", "exam-count-min3.qrels",
                             "exam-count-min4.qrels", "exam-max-grade.qrels"]
    assert qrels["exam-max-grade.qrels"]["q2"] == {"p5": 4, "p6": 0, "p7": 5, "p8": 1}
    assert qrels["exam-count-min3.qrels"]["q1"] == {"p1": 1, "p2": 1, "p3": 2, "p4": 0}


def test_regrade_goes_through_the_cache(exam: tuple[Path, Path], tmp_path: Path) -> None:
    data = load_runs([exam[0]]).data
    banks = load_bank(write_bank(tmp_path / "kw.jsonl", KEYWORD_BANK))
    cache = GradeCache(tmp_path / "cache.sqlite")
    grader = KeywordGrader()
    view, outcome = grade_banks(data, banks, grader, cache, k=2, pool="judged")
    assert len(grader.graded) == 16 and outcome.graded == 16 and outcome.cache_hits == 0
    assert outcome.grades[("p3", "q1/k-beta")] == 5 and outcome.grades[("p4", "q1/k-beta")] == 0
    again = KeywordGrader()
    _, outcome2 = grade_banks(data, banks, again, cache, k=2, pool="judged")
    assert again.graded == [] and outcome2.cache_hits == 16 and outcome2.grades == outcome.grades
    options = ExamOptions(k=2, min_grade=(4,), measures=("P@2",), bootstrap=0)
    plan = make_plan(options, grader.spec(), several=True)
    result = evaluate_exam(score_evaluation(view, outcome2, plan, grader.spec()), grader.spec(), options)
    # A covers alpha, beta (q1) and delta, gamma (q2): 1.0; B: alpha, beta via p3; delta via p7: 0.75
    assert result.find("exam-cover@2", 4).systems == pytest.approx({"A": 1.0, "B": 0.75, "C": 0.25})
    cache.close()


def test_replay_with_a_bank_reports_pairs_without_grades(exam: tuple[Path, Path], tmp_path: Path) -> None:
    data = load_runs([exam[0]]).data
    bank = {"q1": {"q1/a": "What is a?", "q1/new": "A new question?"}}
    view, outcome, _ = replay(data, banks=load_bank(write_bank(tmp_path / "b.jsonl", bank)))
    assert view.test_points == {"q1": ["q1/a", "q1/new"]}
    assert set(outcome.failures) == {(p, "q1/new") for p in ("p1", "p2", "p3", "p4")}
    assert all(tid == "q1/a" for _, tid in outcome.grades)


def test_a_score_resting_on_a_pair_without_a_grade_is_incomplete_in_evaluate(exam: tuple[Path, Path],
                                                                            tmp_path: Path) -> None:
    """As in the pytest report (one scoring input for both front ends): a pair that could not be graded
    counts as uncovered, the queries whose values rest on it are incomplete, and no qrels label rests on it."""
    data = load_runs([exam[0]]).data
    bank = {"q1": {"q1/a": "What is a?", "q1/new": "A new question?"}}
    view, outcome, spec = replay(data, banks=load_bank(write_bank(tmp_path / "b.jsonl", bank)))
    options = ExamOptions(k=2, min_grade=(3,), bootstrap=0, per_query=True)
    plan = make_plan(options, spec, several=True)
    scored = score_evaluation(view, outcome, plan, spec, qrels=True)
    result = evaluate_exam(scored, spec, options)
    assert {s.run: s.incomplete_queries for s in result.systems} == {"A": ["q1"], "B": ["q1"], "C": ["q1"]}
    assert all(row.incomplete for row in result.per_query)
    assert scored.result.qrels["exam-count-min3.qrels"] == {"q1": {}}  # every pooled passage has a failed pair
