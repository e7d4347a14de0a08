"""The evaluation pipeline on a small hand-made Workbench file whose numbers are computed by hand.

The exam (grades are recorded self-ratings; k = 2; judgments 0..3):

    q1 (test points q1/a, q1/b)          q2 (test points q2/a, q2/b, q2/c)
    passage  a  b  judged                passage  a  b  c  judged
    p1       5  0  2                     p5       4  4  0  3
    p2       0  4  1                     p6       0  0  0  0
    p3       3  3  0                     p7       2  5  0  2
    p4       0  0  0                     p8       1  0  0  0

    runs (top 2):  A: q1 [p1 p2], q2 [p5 p7]   B: q1 [p3 p4], q2 [p7 p6]   C: q1 [p4 p2], q2 [p6 p8]
    official leaderboard: A 1, B 2, C 3

Shared by the other test_evaluation_* / test_analysis_* modules through :func:`write_exam`.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.errors import ConfigError, InputError
from exam_harness.evaluation import (
    EvaluationSettings,
    baseline_gate,
    bootstrap_cis,
    compare_runs,
    compute_leaderboards,
    replay,
    write_qrels_files,
)
from exam_harness.evaluation.results import EvaluationResult
from exam_harness.graders.base import GradeResult, Grader, GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry
from exam_harness.io import load_runs
from exam_harness.metrics import bootstrap_ci, compare_to_baseline, read_qrels
from exam_harness.models import Grade, GraderSpec

GRADES: dict[str, dict[str, dict[str, int]]] = {
    "q1": {"p1": {"a": 5, "b": 0}, "p2": {"a": 0, "b": 4}, "p3": {"a": 3, "b": 3}, "p4": {"a": 0, "b": 0}},
    "q2": {
        "p5": {"a": 4, "b": 4, "c": 0}, "p6": {"a": 0, "b": 0, "c": 0},
        "p7": {"a": 2, "b": 5, "c": 0}, "p8": {"a": 1, "b": 0, "c": 0},
    },
}
JUDGED = {"q1": {"p1": 2, "p2": 1, "p3": 0, "p4": 0}, "q2": {"p5": 3, "p6": 0, "p7": 2, "p8": 0}}
RUNS = {
    "A": {"q1": ["p1", "p2"], "q2": ["p5", "p7"]},
    "B": {"q1": ["p3", "p4"], "q2": ["p7", "p6"]},
    "C": {"q1": ["p4", "p2"], "q2": ["p6", "p8"]},
}
OFFICIAL = {"A": 1, "B": 2, "C": 3}
# passage texts carry the keywords the keyword grader of the edit-impact tests looks for
TEXTS = {
    "p1": "alpha is the first letter", "p2": "beta comes second", "p3": "alpha and beta together",
    "p4": "nothing useful here", "p5": "gamma and delta facts", "p6": "unrelated words",
    "p7": "delta rays", "p8": "epsilon small",
}
LLM = "google/flan-t5-large"
PROMPT = "QuestionSelfRatedUnanswerablePromptWithChoices"


def paragraph_lines(
    extra_run: dict[str, Any] | None = None, answers: bool = True
) -> list[list[Any]]:
    lines = []
    for qid, by_passage in GRADES.items():
        paras = []
        for pid, ratings in by_passage.items():
            rankings = [
                {"method": run, "paragraphId": pid, "queryId": qid, "rank": ranked[qid].index(pid) + 1,
                 "score": 10.0 - ranked[qid].index(pid)}
                for run, ranked in RUNS.items() if pid in ranked[qid]
            ]
            tids = [f"{qid}/{t}" for t in ratings]
            entry = {
                "correctAnswered": [f"{qid}/{t}" for t, g in ratings.items() if g >= 1],
                "wrongAnswered": [f"{qid}/{t}" for t, g in ratings.items() if g < 1],
                "self_ratings": [{"question_id": f"{qid}/{t}", "self_rating": g} for t, g in ratings.items()],
                "answers": [[tid, f"answer {pid} {tid}"] for tid in tids] if answers else [],
                "llm": LLM, "llm_options": {}, "exam_ratio": 0.5,
                "prompt_info": {"prompt_class": PROMPT, "is_self_rated": True},
            }
            exam_grades = [entry]
            if extra_run is not None:
                exam_grades.append({**entry, **extra_run})
            paras.append({
                "paragraph_id": pid, "text": TEXTS[pid], "paragraph": {},
                "paragraph_data": {
                    "judgments": [{"paragraphId": pid, "query": qid, "relevance": JUDGED[qid][pid], "titleQuery": qid}],
                    "rankings": rankings,
                },
                "exam_grades": exam_grades,
            })
        lines.append([qid, paras])
    return lines


def write_exam(folder: Path, **kwargs: Any) -> tuple[Path, Path]:
    """The hand-made paragraph file (gzipped) and the official leaderboard, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exam.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for line in paragraph_lines(**kwargs):
            out.write(json.dumps(line) + "\n")
    official = folder / "official.json"
    official.write_text(json.dumps(OFFICIAL))
    return path, official


def write_bank(path: Path, questions: dict[str, dict[str, str]]) -> Path:
    """A Workbench bank: query -> {test point id: text}."""
    lines = []
    for qid, items in questions.items():
        lines.append({"query_id": qid, "query_text": f"query {qid}",
                      "items": [{"question_id": tid, "question_text": text} for tid, text in items.items()]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def exam(tmp_path: Path) -> tuple[Path, Path]:
    return write_exam(tmp_path)


def evaluate_exam(exam: tuple[Path, Path], **settings: Any) -> EvaluationResult:
    data = load_runs([exam[0]]).data
    view, table = replay(data)
    base: dict[str, Any] = {"k": 2, "min_grades": [3, 4], "measures": ["P@2", "mrr"], "bootstrap": 200}
    base.update(settings)
    return compute_leaderboards(view, table, EvaluationSettings(**base), official=OFFICIAL)


def test_replay_finds_queries_test_points_and_pool(exam: tuple[Path, Path]) -> None:
    view, table = replay(load_runs([exam[0]]).data)
    assert view.test_points == {"q1": ["q1/a", "q1/b"], "q2": ["q2/a", "q2/b", "q2/c"]}
    assert view.pool == {"q1": ["p1", "p2", "p3", "p4"], "q2": ["p5", "p6", "p7", "p8"]}
    assert table.grades[("p7", "q2/b")] == 5 and len(table.grades) == 4 * 2 + 4 * 3
    assert table.answers[("p1", "q1/a")] == "answer p1 q1/a"
    assert table.summary.grader == {"name": "recorded", "model": LLM, "prompt_class": PROMPT}
    assert not table.failures


def test_exam_cover_and_n_exam_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate_exam(exam)
    cover4 = result.find("exam-cover@2", 4)
    assert cover4.systems == pytest.approx({"A": (1 + 2 / 3) / 2, "B": (0 + 1 / 3) / 2, "C": (0.5 + 0) / 2})
    assert cover4.stderr["B"] == pytest.approx(math.sqrt(2 * (1 / 6) ** 2) / math.sqrt(2))  # stdev([0, 1/3]) / sqrt(2)
    n4 = result.find("n-exam-cover@2", 4)  # q2/c is covered by nobody: q2 normalises by 2
    assert n4.systems == pytest.approx({"A": 1.0, "B": 0.25, "C": 0.25})
    cover3 = result.find("exam-cover@2", 3)
    assert cover3.systems == pytest.approx({"A": (1 + 2 / 3) / 2, "B": (1 + 1 / 3) / 2, "C": (0.5 + 0) / 2})
    assert cover4.queries == 2 and cover4.label is None


def test_correlations_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate_exam(exam)
    cover = result.find("exam-cover@2", 4).correlation  # ranks A 1, C 2, B 3 against A 1, B 2, C 3
    assert cover is not None and cover.n == 3
    assert cover.spearman == pytest.approx(0.5) and cover.kendall == pytest.approx(1 / 3)
    n_exam = result.find("n-exam-cover@2", 4).correlation  # B and C tied: average ranks
    assert n_exam is not None
    assert n_exam.spearman == pytest.approx(1.5 / math.sqrt(3)) and n_exam.kendall == pytest.approx(2 / math.sqrt(6))


def test_qrels_leaderboards_by_hand(exam: tuple[Path, Path]) -> None:
    result = evaluate_exam(exam)
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
    agreement = evaluate_exam(exam).agreement
    assert agreement is not None and agreement.passages == 8 and agreement.relevance_level == 2
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
    result = evaluate_exam(exam, baseline="A", resamples=500)
    path = result.write_json(tmp_path / "out" / "lb.json")
    doc = json.loads(path.read_text())
    first = doc["leaderboards"][0]
    assert first["measure"] == "exam-cover@2" and first["min_grade"] == 3 and "label" not in first
    assert set(first["systems"]) == {"A", "B", "C"} and set(first["stderr"]) == {"A", "B", "C"}
    assert set(first["correlation"]) >= {"spearman", "kendall"}
    assert len(first["ci"]["A"]) == 2 and first["ci"]["B"][0] <= first["systems"]["B"] <= first["ci"]["B"][1]
    qrels = next(b for b in doc["leaderboards"] if b["measure"] == "P@2")
    assert qrels["label"] == "max-grade" and qrels["min_grade"] == 3
    assert set(first["significance"]["runs"]) == {"B", "C"}
    assert doc["agreement"]["binarised"][1]["counts"] == {"1": {"1": 3, "0": 1}, "0": {"1": 0, "0": 4}}
    assert EvaluationResult.model_validate(doc).find("mrr", 4, "max-grade").systems["C"] == pytest.approx(0.25)
    measures = {b["measure"] for b in doc["leaderboards"]}
    assert measures == {"exam-cover@2", "n-exam-cover@2", "P@2", "mrr", "alpha-ndcg@2"}


def test_undefined_correlation_is_null_not_nan(tmp_path: Path) -> None:
    exam = write_exam(tmp_path)
    data = load_runs([exam[0]]).data
    view, table = replay(data)
    result = compute_leaderboards(view, table, EvaluationSettings(k=2, min_grades=[5], measures=["P@2"], bootstrap=0),
                                  official={"A": 1, "B": 1, "C": 1})
    doc = json.loads(result.write_json(tmp_path / "x.json").read_text())
    assert doc["leaderboards"][0]["correlation"]["spearman"] is None
    assert "ci" not in doc["leaderboards"][0] or doc["leaderboards"][0]["ci"] == {}


def test_nugget_f_and_alpha_ndcg_boards(exam: tuple[Path, Path]) -> None:
    result = evaluate_exam(exam, nugget_f=True, min_grades=[4])
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
    with pytest.raises(ConfigError, match="several recorded grading runs.*other-model"):
        replay(data)
    view, table = replay(data, llm="other-model")
    assert table.summary.grader["model"] == "other-model" and len(table.grades) == 20
    with pytest.raises(ConfigError, match="no recorded grading run matches"):
        replay(data, prompt_class="Nope")


def test_bootstrap_cis_equal_the_per_run_function() -> None:
    rng = random.Random(3)
    runs = {f"r{i}": {f"q{j}": rng.random() for j in range(17)} for i in range(5)}
    cis = bootstrap_cis(runs, n_resamples=700, seed=4, confidence=0.9)
    for run, scores in runs.items():
        _, low, high = bootstrap_ci(scores, n_resamples=700, seed=4, confidence=0.9)
        assert cis[run] == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("method", ["permutation", "bootstrap", "t-test"])
def test_compare_runs_equals_compare_to_baseline(method: str) -> None:
    rng = random.Random(7)
    runs = {f"r{i}": {f"q{j}": rng.random() + 0.05 * i for j in range(30)} for i in range(4)}
    queries = sorted(runs["r0"])
    ours = compare_runs(runs, "r1", queries=queries, method=method, n_resamples=3000, seed=2)
    theirs = compare_to_baseline(runs, "r1", method=method, n_resamples=3000, seed=2, queries=queries)  # type: ignore[arg-type]
    assert [c.run for c in ours] == [c.run for c in theirs]
    for a, b in zip(ours, theirs):
        assert (a.diff, a.p, a.ci_low, a.ci_high) == pytest.approx((b.diff, b.p, b.ci_low, b.ci_high), abs=1e-12)
        assert (a.significantly_worse, a.significantly_better) == (b.significantly_worse, b.significantly_better)


def test_baseline_gate_names_run_difference_and_p() -> None:
    queries = [f"q{i}" for i in range(20)]
    runs = {
        "base": {q: 0.8 for q in queries},
        "worse": {q: 0.8 - 0.3 - 0.01 * (i % 3) for i, q in enumerate(queries)},
        "same": {q: 0.8 + (0.01 if i % 2 else -0.01) for i, q in enumerate(queries)},
        "better": {q: 0.95 for q in queries},
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
        evaluate_exam(exam, baseline="Z")
    with pytest.raises(ConfigError, match="above the grades' scale"):
        evaluate_exam(exam, min_grades=[6])


def test_qrels_files_are_readable(exam: tuple[Path, Path], tmp_path: Path) -> None:
    data = load_runs([exam[0]]).data
    view, table = replay(data)
    settings = EvaluationSettings(k=2, min_grades=[3, 4])
    paths = write_qrels_files(view, table, settings, tmp_path / "qrels")
    names = sorted(p.name for p in paths)
    assert names == ["exam-at-least-2-min3.qrels", "exam-at-least-2-min4.qrels", "exam-count-min3.qrels",
                     "exam-count-min4.qrels", "exam-max-grade.qrels"]
    assert read_qrels(tmp_path / "qrels" / "exam-max-grade.qrels")["q2"] == {"p5": 4, "p6": 0, "p7": 5, "p8": 1}
    assert read_qrels(tmp_path / "qrels" / "exam-count-min3.qrels")["q1"] == {"p1": 1, "p2": 1, "p3": 2, "p4": 0}


class KeywordGrader(Grader):
    """Grade 5 when the test point's last word occurs in the passage, else 0; counts what it grades."""

    name = "keyword"

    def __init__(self, config: GraderConfig | None = None) -> None:
        self.graded: list[tuple[str, str]] = []

    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version="1", model="kw-model", prompt_class="KeywordPrompt", default_min_grade=4)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        out: list[GradeResult] = []
        for r in requests:
            self.graded.append((r.passage.id, r.test_point.id))
            word = r.test_point.text.rstrip("?").split()[-1].lower()
            hit = word in r.passage.text.lower().split()
            out.append(Grade(grade=5 if hit else 0, grader=self.name, raw_response="yes" if hit else "no",
                             extracted_answer=word if hit else None))
        return out


def keyword_registry() -> GraderRegistry:
    registry = GraderRegistry()
    registry.register("keyword", KeywordGrader)
    return registry


KEYWORD_BANK = {"q1": {"q1/k-alpha": "What is alpha?", "q1/k-beta": "What is beta?"},
                "q2": {"q2/k-delta": "What is delta?", "q2/k-gamma": "What is gamma?"}}


def test_regrade_goes_through_the_cache(exam: tuple[Path, Path], tmp_path: Path) -> None:
    from exam_harness.cache import GradeCache
    from exam_harness.evaluation import regrade
    from exam_harness.io import load_bank

    data = load_runs([exam[0]]).data
    banks = load_bank(write_bank(tmp_path / "kw.jsonl", KEYWORD_BANK))
    cache = GradeCache(tmp_path / "cache.sqlite")
    grader = KeywordGrader()
    view, table = regrade(data, banks, grader, cache, k=2)
    assert len(grader.graded) == 16 and table.summary.graded == 16 and table.summary.cache_hits == 0
    assert table.grades[("p3", "q1/k-beta")] == 5 and table.grades[("p4", "q1/k-beta")] == 0
    again = KeywordGrader()
    _, table2 = regrade(data, banks, again, cache, k=2)
    assert again.graded == [] and table2.summary.cache_hits == 16 and table2.grades == table.grades
    result = compute_leaderboards(view, table2, EvaluationSettings(k=2, min_grades=[4], measures=["P@2"], bootstrap=0))
    # A covers alpha, beta (q1) and delta, gamma (q2): 1.0; B: alpha, beta via p3; delta via p7: 0.75
    assert result.find("exam-cover@2", 4).systems == pytest.approx({"A": 1.0, "B": 0.75, "C": 0.25})
    cache.close()


def test_replay_with_a_bank_reports_pairs_without_grades(exam: tuple[Path, Path], tmp_path: Path) -> None:
    from exam_harness.io import load_bank

    data = load_runs([exam[0]]).data
    bank = {"q1": {"q1/a": "What is a?", "q1/new": "A new question?"}}
    view, table = replay(data, banks=load_bank(write_bank(tmp_path / "b.jsonl", bank)))
    assert view.test_points == {"q1": ["q1/a", "q1/new"]}
    assert set(table.failures) == {(p, "q1/new") for p in ("p1", "p2", "p3", "p4")}
    assert all(tid == "q1/a" for _, tid in table.grades)


@pytest.mark.parametrize("tau", [1, 3, 4, 5])
def test_fast_cover_equals_the_metrics_library(exam: tuple[Path, Path], tau: int) -> None:
    from exam_harness.evaluation.leaderboards import cover_per_query
    from exam_harness.metrics import cover_scores

    view, table = replay(load_runs([exam[0]]).data)
    rankings = view.rankings(2)
    exam_pq, n_exam_pq = cover_per_query(rankings, view.test_points, table.grades, view.pool, min_grade=tau)
    library = cover_scores(rankings, view.test_points, table.grades, k=2, min_grade=tau, extra_passages=view.pool,
                           missing="zero")
    assert exam_pq == {r: c.exam_per_query for r, c in library.items()}
    assert n_exam_pq == {r: c.n_exam_per_query for r, c in library.items()}
