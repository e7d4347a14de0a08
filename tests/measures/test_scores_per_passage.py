"""Nugget F, coverage, qrels labels, the report's outcomes and grade counts from per-passage values give
exactly the scores of the per-response (per-pair) definitions they replace.

The length nugget F charges is counted once per passage (:class:`ResponseLengths`) and in C
(:func:`response_length`); coverage is a union of per-passage sets (:func:`covered_by`). Each is
compared here with the plain definition it replaces, bit for bit.
"""

from __future__ import annotations

import gc
import math
import random
import sys
from collections import Counter
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from exam_harness.config.options import ExamOptions
from exam_harness.core.case_verdicts import verdict
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import (
    ExamData,
    GraderSpec,
    Passage,
    Query,
    QueryBank,
    RankedPassage,
    Run,
    TestPoint,
)
from exam_harness.exam.inputs import ExamInputs, view_from_banks
from exam_harness.exam.plan import make_plan
from exam_harness.grading.passes import GradingOutcome
from exam_harness.io.formats import builtin_bank_formats, builtin_run_formats
from exam_harness.io.runs import collector_paused
from exam_harness.measures import NuggetF, ScoringContext, ScoringInput, score
from exam_harness.measures.cover import covered_by, passage_coverage
from exam_harness.measures.nuggets import (
    WHITESPACE,
    QueryNuggets,
    ResponseLengths,
    nugget_f,
    nugget_f_of_length,
    response_length,
)
from exam_harness.measures.qrels import VARIANTS, QrelsCut, relevance_level
from exam_harness.measures.stats import mean_stderr
from exam_harness.measures.trec import TrecMeasure, run_dicts, trec_eval, trec_eval_scored
from exam_harness.report.build import (
    SessionOutcome,
    TopGrades,
    build_report,
    grade_counts,
)
from exam_harness.report.build import (
    test_point_outcomes as point_outcomes,  # not a test of this module
)
from exam_harness.results.schema import TestPointOutcome

# Text with every kind of whitespace str.split() knows, ASCII letters and other code points.
TEXTS = st.text(alphabet=st.one_of(st.sampled_from(WHITESPACE), st.sampled_from("ab .,"), st.characters()))


def test_the_whitespace_list_is_every_character_str_isspace_knows() -> None:
    everything = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(WHITESPACE) == everything and len(WHITESPACE) == len(everything)


@given(TEXTS)
def test_response_length_counts_what_split_leaves(text: str) -> None:
    assert response_length(text) == len("".join(text.split()))


@given(st.lists(st.one_of(st.none(), TEXTS), max_size=8), st.one_of(st.none(), TEXTS))
def test_a_runs_charged_length_is_its_joined_texts_length(texts: list[str | None], response: str | None) -> None:
    ids = [f"p{i}" for i in range(len(texts))]
    by_id = dict(zip(ids, texts))
    responses = {"gen": {"q": response}} if response is not None else {}
    lengths = ResponseLengths(responses, by_id.get)
    joined = " ".join(t for t in texts if t is not None)  # what the text of a ranked run's response is
    assert lengths.charged("ranked", "q", ids) == response_length(joined)
    assert lengths.charged("ranked", "q", ids[::-1]) == response_length(joined)  # counted once, read twice
    assert lengths.charged("gen", "q", ids) == response_length(response if response is not None else joined)


@given(TEXTS, st.sets(st.sampled_from("abcd")), st.sampled_from([1.0, 3.0, 5.0]))
def test_nugget_f_of_the_length_is_nugget_f_of_the_text(text: str, matched: set[str], beta: float) -> None:
    weights = {"a": 1.0, "b": 0.5, "c": 1 / 3, "d": 0.0}
    assert nugget_f_of_length(response_length(text), weights, matched, beta=beta) == nugget_f(
        text, weights, matched, beta=beta)


def random_exam(seed: int, *, responses: bool) -> ScoringInput:
    """Queries with nuggets, runs ranking passages of a shared pool (a passage in many runs), random
    grades, a few passages without text and, optionally, generated answers for one run."""
    rng = random.Random(seed)
    words = ["tide", "moon", "  ", "\t", "gravity", "é", "\u3000", "x" * 40]
    queries = [f"q{i}" for i in range(6)]
    pools = {q: [f"{q}-p{i}" for i in range(15)] for q in queries}
    texts = {p: "".join(rng.choices(words, k=rng.randint(0, 60))) for ps in pools.values() for p in ps}
    for q in queries:
        texts.pop(pools[q][0])  # ranked, but no text loaded
    test_points = {q: [f"{q}/n{i}" for i in range(rng.randint(1, 5))] for q in queries}
    grades = {(p, t): rng.randrange(6) for q in queries for p in pools[q] for t in test_points[q] if rng.random() < 0.8}
    rankings = {f"run{r}": {q: rng.sample(pools[q], rng.randint(0, 12)) for q in queries} for r in range(5)}
    return ScoringInput(
        queries=queries, test_points=test_points, rankings=rankings, grades=grades,
        nuggets={q: {t: rng.choice([1.0, 0.5, 0.25]) for t in tps} for q, tps in test_points.items() if q != "q5"},
        responses={"run0": {"q1": "a generated answer  about tides"}} if responses else {},
        passage_text=texts.get,
    )


def per_response_nugget_f(ctx: ScoringContext, k: int, tau: int, beta: float) -> dict[str, dict[str, float]]:
    """Nugget F as defined per response: the joined text of the run's top-k, its length counted whole."""
    out: dict[str, dict[str, float]] = {}
    for run in ctx.runs:
        out[run] = {}
        for q in ctx.queries:
            weights = ctx.exam.nuggets.get(q)
            if weights:
                matched = ctx.covered(run, q, k, tau) & weights.keys()
                out[run][q] = nugget_f(ctx.response_text(run, q, k), weights, matched, beta=beta).f
    return out


def per_passage_nugget_f(ctx: ScoringContext, k: int, tau: int, beta: float) -> dict[str, dict[str, float]]:
    """Nugget F from per-passage lengths, each counted once for every run (ResponseLengths)."""
    lengths = ResponseLengths(ctx.exam.responses, ctx.exam.passage_text)
    out: dict[str, dict[str, float]] = {}
    for run in ctx.runs:
        out[run] = {}
        for q in ctx.queries:
            weights = ctx.exam.nuggets.get(q)
            if weights:
                matched = ctx.covered(run, q, k, tau) & weights.keys()
                length = lengths.charged(run, q, ctx.top_k(k)[run][q])
                out[run][q] = nugget_f_of_length(length, weights, matched, beta=beta).f
    return out


def test_nugget_f_of_an_exam_is_the_per_response_definition_exactly() -> None:
    for seed in range(20):
        ctx = ScoringContext(random_exam(seed, responses=seed % 2 == 0))
        for k, tau, beta in [(3, 4, 3.0), (10, 2, 5.0), (1, 5, 1.0)]:
            expected = per_response_nugget_f(ctx, k, tau, beta)
            assert per_passage_nugget_f(ctx, k, tau, beta) == expected
            assert NuggetF(k=k, min_grade=tau, beta=beta).compute(ctx) == expected  # the measure, however computed


@given(st.dictionaries(st.tuples(st.sampled_from(["p1", "p2", "p3", "p4"]), st.sampled_from(["a", "b", "c"])),
                       st.integers(0, 5)),
       st.lists(st.sampled_from(["p1", "p2", "p3", "p4"])), st.integers(1, 5))
def test_coverage_is_the_union_of_each_passages_grades(grades: dict[tuple[str, str], int], passages: list[str],
                                                        tau: int) -> None:
    bank = ["a", "b", "c", "a"]  # an id listed twice counts once
    coverage = passage_coverage(grades, bank, passages, min_grade=tau)
    assert set(coverage) == set(passages)
    for p in passages:
        assert coverage[p] == {t for t in bank if grades.get((p, t), 0) >= tau}
    assert covered_by(coverage, passages) == {t for p in passages for t in bank if grades.get((p, t), 0) >= tau}
    assert covered_by(coverage, []) == set()


# -- the report: outcomes, grade counts, coverage and qrels from per-passage rows ------------------------------


def reference_verdicts(inputs: ExamInputs, outcome: SessionOutcome, k: int, tau: int) -> list[tuple[object, ...]]:
    """Every run's verdict on every test point, the way the report found them before (verdict() on the
    run's own top-k, one pair at a time)."""
    grading = outcome.grading
    found: list[tuple[object, ...]] = []
    for bank in outcome.banks:
        for name in sorted(inputs.data.runs):
            top = inputs.data.runs[name].top_k(bank.query.id, k)
            for tp in bank.test_points:
                v = verdict(tp, top, grading.grades, grading.failures, grading.unsupported, min_grade=tau, k=k)
                found.append((name, bank.query.id, tp.id, v.outcome, v.best_grade, v.best_passage))
    return found


def reference_grade_counts(inputs: ExamInputs, outcome: SessionOutcome, run: str, k: int) -> dict[str, int]:
    grading = outcome.grading
    counts: Counter[str] = Counter()
    for bank in outcome.banks:
        top = inputs.data.runs[run].top_k(bank.query.id, k)
        for tp in bank.test_points:
            if tp.id in grading.unsupported:
                continue
            for pid in top:
                grade = grading.grades.get((pid, tp.id))
                if grade is not None:
                    counts[str(grade)] += 1
                elif (pid, tp.id) in grading.failures:
                    counts["failed"] += 1
    return dict(sorted(counts.items()))


def random_session(seed: int) -> tuple[ExamInputs, SessionOutcome]:
    """Runs over shared pools with ties in rank, a run without a query, grades missing, failed pairs,
    a test point and a whole query the grader cannot grade, a second bank (facet) of one query, a
    secret bank and required test points."""
    rng = random.Random(seed)
    queries = [f"q{i}" for i in range(5)]
    banks: list[QueryBank] = []
    for q in queries:
        points = tuple(TestPoint(id=f"{q}/t{t}", query_id=q, kind=rng.choice(["question", "nugget"]),
                                 text=f"point {t}", required=rng.random() < 0.3) for t in range(rng.randint(1, 4)))
        banks.append(QueryBank(query=Query(id=q, text=q), test_points=points, source="b.yaml",
                               secret=q == "q3"))
    banks.append(QueryBank(query=Query(id="q0", text="q0"), facet_id="f", source="f.yaml",
                           test_points=(TestPoint(id="q0/f1", query_id="q0", kind="nugget", text="facet"),)))
    pools = {q: [f"{q}-p{i}" for i in range(12)] for q in queries}
    grades: dict[tuple[str, str], int] = {}
    failures: dict[tuple[str, str], str] = {}
    for bank in banks:
        for pid in pools[bank.query.id]:
            for tp in bank.test_points:
                roll = rng.random()
                if roll < 0.1:
                    failures[(pid, tp.id)] = "timeout"
                elif roll < 0.9:
                    grades[(pid, tp.id)] = rng.randrange(6)
    unsupported = {banks[1].test_points[0].id: "no", **{tp.id: "no" for tp in banks[4].test_points}}
    runs = {}
    for r in range(4):
        rankings = {q: [RankedPassage(passage_id=pid, rank=rng.randint(1, 6), score=float(rng.randint(0, 3)))
                        for pid in rng.sample(pools[q], rng.randint(0, 10))] for q in queries if (r, q) != (2, "q1")}
        runs[f"run{r}"] = Run(name=f"run{r}", rankings=rankings)
    inputs = ExamInputs(builtin_bank_formats(), builtin_run_formats())
    inputs._data = ExamData(runs=runs, passages={p: Passage(id=p, text=f"text of {p}") for ps in pools.values()
                                                  for p in ps})
    grading = GradingOutcome(grades=grades, answers={pair: f"answer {g}" for pair, g in grades.items()},
                             failures=failures, unsupported=unsupported)
    return inputs, SessionOutcome(grading=grading, banks=banks)


@pytest.mark.parametrize("seed", range(12))
def test_report_outcomes_and_grade_counts_are_the_per_pair_definitions(seed: int) -> None:
    inputs, outcome = random_session(seed)
    spec = GraderSpec(name="synthetic", version="1", default_min_grade=4)
    for k, tau in [(3, 4), (8, 2), (1, 5)]:
        plan = make_plan(ExamOptions(k=k, min_grade=(tau,)), spec, alpha_ndcg=False)
        report = build_report(inputs, outcome, plan).report
        assert [(o.run, o.query_id, o.test_point_id, o.outcome, o.best_grade, o.best_passage)
                for o in report.outcomes] == reference_verdicts(inputs, outcome, k, tau)
        # built without validation: each outcome is what validating its fields gives
        validate = TypeAdapter(TestPointOutcome).validate_python
        assert all(validate(asdict(o)) == o for o in report.outcomes)
        assert {s.run: s.grade_counts for s in report.systems} == {
            run: reference_grade_counts(inputs, outcome, run, k) for run in sorted(inputs.data.runs)}
        # the same without the scoring context's top-k (each run cuts its own)
        tops = TopGrades(inputs, outcome.banks, outcome.grading, k)
        assert point_outcomes(inputs, outcome, plan, tops) == report.outcomes
        assert all(grade_counts(tops, s.run) == s.grade_counts for s in report.systems)


def test_context_coverage_and_max_grade_labels_are_the_per_pair_definitions() -> None:
    for seed in range(10):
        exam = random_exam(seed, responses=False)
        ctx = ScoringContext(exam)
        for tau in (1, 3, 5):
            for q in exam.queries:
                pool = [p for ps in (ctx.top_k(12)[run][q] for run in ctx.runs) for p in ps]
                assert ctx.coverage(q, tau, pool) == passage_coverage(exam.grades, ctx.bank(q), pool, min_grade=tau)
                for run in ctx.runs:
                    top = ctx.top_k(12)[run][q]
                    assert ctx.covered(run, q, 12, tau) == {t for p in top for t in ctx.bank(q)
                                                            if exam.grades.get((p, t), 0) >= tau}
        labels = ctx.qrels(QrelsCut("max-grade", 4, 2, "top-k", 12))
        assert labels == {q: {p: max((exam.grades.get((p, t), 0) for t in ctx.bank(q)), default=0)
                              for p in ctx.pool("top-k", 12)[q]} for q in exam.queries if ctx.bank(q)}


def test_trec_eval_of_converted_runs_is_trec_eval() -> None:
    ctx = ScoringContext(random_exam(3, responses=False))
    qrels = ctx.qrels(QrelsCut("count", 2, 2, "top-k", 5))
    rankings = ctx.top_k(5)
    measures = ["P@5", "map", "ndcg@5", "rprec", "mrr"]
    assert trec_eval_scored(qrels, run_dicts(rankings), measures) == trec_eval(qrels, rankings, measures)
    with pytest.raises(ConfigError):
        trec_eval_scored(qrels, run_dicts(rankings), [])


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_while_a_report_is_built_and_restored_after(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_run_orders_skip_the_sort_only_when_it_would_change_nothing() -> None:
    """Run.top_k and Run.trec_order return a ranking already in order as it is; the result always equals
    the full sort (rank, then score descending, then id; trec_eval: score descending, then id descending)."""
    from exam_harness.core.models import RankedPassage, Run

    rng = random.Random(5)
    for trial in range(300):
        n = rng.randint(0, 12)
        ranks = list(range(1, n + 1)) if trial % 3 == 0 else [rng.randint(1, 6) for _ in range(n)]
        scores = sorted((rng.choice([1.0, 2.0, 3.0, rng.random()]) for _ in range(n)), reverse=trial % 2 == 0)
        ranked = [RankedPassage(passage_id=f"p{rng.randint(0, 30)}-{i}", rank=r, score=s)
                  for i, (r, s) in enumerate(zip(ranks, scores))]
        run = Run(name="r", rankings={"q": ranked}, source="r.run")
        by_rank = [r.passage_id for r in sorted(ranked, key=lambda r: (r.rank, -r.score, r.passage_id))]
        by_score = [r.passage_id for r in sorted(ranked, key=lambda r: (-r.score, _reverse(r.passage_id)))]
        assert run.top_k("q", 5) == by_rank[:5]
        assert run.trec_order("q", scored=True) == by_score


def _reverse(text: str) -> tuple[int, ...]:
    """A key that orders texts descending inside an ascending sort."""
    return (*(-ord(c) for c in text), 1)


# -- shared per-query work: each value the plain definition gives ------------------------------------------------


def test_context_pools_count_labels_and_overall_cover_are_the_per_pair_definitions() -> None:
    """Coverage kept as bit masks (one bit per test point of the bank): count and at-least-m labels, the
    pools and the overall cover equal their per-pair definitions."""
    for seed in range(10):
        exam = random_exam(seed, responses=False)
        check_pools_and_labels(ScoringInput(**{**exam.__dict__, "judged": {"q0": ["q0-p14", "q0-p3"], "q2": ["q2-p7"]}}))


def check_pools_and_labels(exam: ScoringInput) -> None:
    ctx = ScoringContext(exam)
    top = ctx.top_k(6)

    def count(q: str, p: str, tau: int) -> int:
        return sum(1 for t in ctx.bank(q) if exam.grades.get((p, t), 0) >= tau)

    for pool in ("judged", "top-k"):
        pooled = {q: list(dict.fromkeys([*(exam.judged.get(q, ()) if pool == "judged" else ()),
                                         *(p for run in ctx.runs for p in top[run][q])])) for q in exam.queries}
        assert ctx.pool(pool, 6) == pooled
        for tau in (1, 3, 5):
            assert ctx.qrels(QrelsCut("count", tau, 2, pool, 6)) == {
                q: {p: count(q, p, tau) for p in pooled[q]} for q in exam.queries if ctx.bank(q)}
            assert ctx.qrels(QrelsCut("at-least-m", tau, 2, pool, 6)) == {
                q: {p: int(count(q, p, tau) >= 2) for p in pooled[q]} for q in exam.queries if ctx.bank(q)}
            assert ctx.overall(tau, pool, 6) == {
                q: {t for p in pooled[q] for t in ctx.bank(q) if exam.grades.get((p, t), 0) >= tau}
                for q in exam.queries}


@given(st.integers(0, 3000), st.sets(st.sampled_from(["a", "b", "c", "d", "x"])), st.sampled_from([1.0, 3.0, 5.0]))
def test_nugget_f_of_a_covered_set_is_the_score_of_its_matched_nuggets(length: int, covered: set[str],
                                                                       beta: float) -> None:
    nuggets = QueryNuggets({"a": 1.0, "b": 0.5, "c": 0.25, "d": 0.0}, beta=beta)
    expected = nuggets.score(length, set(covered) & nuggets.weights.keys()).f
    assert nuggets.f_covering(length, frozenset(covered)) == expected
    assert nuggets.f_covering(length, frozenset(covered)) == expected  # the recall remembered for the set


def test_trec_measures_are_trec_eval_of_the_contexts_qrels() -> None:
    """Values read by trec_eval name from one pytrec_eval pass per qrels equal trec_eval() of those qrels
    (a query trec_eval does not report scores 0), and ScoringContext.trec keeps the canonical names."""
    names = ["P@5", "map", "ndcg@5", "ndcg@10", "rprec", "mrr", "recall@5", "bpref"]
    for seed in range(4):
        exam = random_exam(seed, responses=False)
        ctx = ScoringContext(exam)
        measures = [TrecMeasure(name=n, label=label, min_grade=3, m=2, pool="judged", k=8)
                    for label in VARIANTS for n in names]
        result = score(ctx, measures)
        for label in VARIANTS:
            qrels = ctx.qrels(QrelsCut(label, 3, 2, "judged", 8))
            expected = trec_eval(qrels, ctx.top_k(8), names, relevance_level=relevance_level(label, 3))
            for name in names:
                measure = next(m for m in measures if m.label == label and m.name == name)
                assert result[measure].per_query == {
                    run: {q: expected.get(run, {}).get(q, {}).get(name, 0.0) for q in exam.queries} for run in ctx.runs}
            assert ctx.trec(QrelsCut(label, 3, 2, "judged", 8), "map") == expected


def test_scoring_input_orders_are_the_runs_own_orders() -> None:
    """scoring_input reads both orders from one transposition of each ranking: the rank order is
    Run.top_k's, the trec_eval order Run.trec_order's (ranks 1..n or not, ties in rank or score, runs
    without scores, queries a run did not answer)."""
    rng = random.Random(11)
    queries = ["q0", "q1", "q2"]
    banks = [QueryBank(query=Query(id=q, text=q), source="b.yaml",
                       test_points=(TestPoint(id=f"{q}/t", query_id=q, kind="question", text="t"),)) for q in queries]
    for _ in range(40):
        runs: dict[str, Run] = {}
        for r in range(4):
            rankings: dict[str, list[RankedPassage]] = {}
            unscored = r == 3
            for q in queries:
                if rng.random() < 0.15:
                    continue  # not answered
                n = rng.randint(0, 9)
                style = rng.randrange(3)
                ranks = ([i + 1 for i in range(n)] if style == 0 else [2 * i for i in range(n)] if style == 1
                         else [rng.randint(1, 4) for _ in range(n)])
                scores = [0.0] * n if unscored else [float(rng.choice([n - i, 3, rng.random()])) for i in range(n)]
                rankings[q] = [RankedPassage(passage_id=pid, rank=rank, score=sc)
                               for pid, rank, sc in zip(rng.sample([f"{q}-p{i}" for i in range(12)], n), ranks, scores)]
            runs[f"run{r}"] = Run(name=f"run{r}", rankings=rankings)
        passages = {f"{q}-p{i}": Passage(id=f"{q}-p{i}", text="t") for q in queries for i in range(12)}
        view = view_from_banks(ExamData(runs=runs, passages=passages), banks)
        for tie_order in ("score", "rank"):
            exam = view.scoring_input({}, tie_order=tie_order)
            assert list(exam.rankings) == sorted(runs)
            for name, run in runs.items():
                assert exam.rankings[name] == {q: run.top_k(q, len(run.rankings.get(q, ()))) for q in exam.queries}
                if tie_order == "score":
                    assert exam.trec_rankings is not None
                    assert exam.trec_rankings[name] == {q: run.trec_order(q) for q in exam.queries}
            if tie_order == "rank":
                assert exam.trec_rankings is None


@given(st.lists(st.floats(-1e6, 1e6) | st.integers(-5, 5), max_size=40))
def test_mean_stderr_is_its_definition(values: list[float]) -> None:
    data = [float(v) for v in values]
    n = len(data)
    mean = math.fsum(data) / n if n else 0.0
    stderr = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / (n - 1)) / math.sqrt(n) if n > 1 else 0.0
    assert mean_stderr(values) == (mean, stderr)


def test_grade_counts_of_runs_that_rank_nothing_are_empty() -> None:
    """Every run's counts are summed in one pass over all runs' rows: a run without rows (first, last or
    between others) counts nothing, and the others count what the per-pair definition counts."""
    for seed in range(4):
        inputs, outcome = random_session(seed)
        runs = dict(inputs.data.runs)
        for name in ("aaa-empty", "run1x", "zzz-empty"):
            runs[name] = Run(name=name, rankings={} if name != "run1x" else {"q9": []})
        inputs._data = ExamData(runs=runs, passages=inputs.data.passages)
        for ctx in (None, "report"):
            if ctx is None:
                tops = TopGrades(inputs, outcome.banks, outcome.grading, 4)
                counts = {run: grade_counts(tops, run) for run in sorted(runs)}
            else:
                spec = GraderSpec(name="synthetic", version="1", default_min_grade=4)
                report = build_report(inputs, outcome, make_plan(ExamOptions(k=4), spec, alpha_ndcg=False)).report
                counts = {s.run: s.grade_counts for s in report.systems}
            assert counts == {run: reference_grade_counts(inputs, outcome, run, 4) for run in sorted(runs)}
            assert counts["aaa-empty"] == counts["zzz-empty"] == counts["run1x"] == {}
