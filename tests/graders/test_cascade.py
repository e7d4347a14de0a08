"""Cascade grading (issue 30): a cheap first judge filters, a deciding judge grades the rest, and an audit
sample of the filtered pairs states the filter's miss rate."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import Grader, GraderConfig, GradingRequest
from exam_harness.graders.cascade import AUDIT, FILTERED, KEPT, CascadeGrader, estimate_of, statement
from exam_harness.graders.cascade_filter import audit_draw, descend, miss_estimate, wilson
from exam_harness.graders.registry import default_registry
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome, run_grading_pass
from tests.fake_openai_server import FakeOpenAIServer
from tests.sourdough_bank import LabelledBank, load

pytest_plugins = ["pytester"]

# -- the arithmetic -----------------------------------------------------------------------------------------


def test_the_wilson_interval_matches_its_textbook_value() -> None:
    low, high = wilson(0, 20)
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)


def test_the_audit_draw_is_the_same_in_every_run_and_about_uniform() -> None:
    draws = [audit_draw(0, f"pair {i}") for i in range(4000)]
    assert draws == [audit_draw(0, f"pair {i}") for i in range(4000)]
    assert 0.017 < sum(d < 0.02 for d in draws) / len(draws) < 0.023 + 0.01
    assert draws != [audit_draw(1, f"pair {i}") for i in range(4000)]


def test_the_miss_rate_counts_the_audit_passes_for_every_filtered_pair() -> None:
    estimate = miss_estimate(kept=[True] * 90 + [False] * 10, audited=[True] + [False] * 9, filtered=100)
    # 1 pass in 10 audited -> 10 of the 100 filtered pairs estimated passes; 91 passes found
    assert estimate.calls == 110
    rate = estimate.miss_rate
    assert rate == pytest.approx(10 / 101)
    low, high = estimate.interval
    assert rate is not None and low < rate < high


def test_the_descent_stops_once_the_target_recall_is_estimated_reached() -> None:
    rng = random.Random(3)
    scores = [rng.random() for _ in range(3000)]
    passes = [rng.random() < s**4 for s in scores]  # the better the score, the likelier a pass
    audited = [audit_draw(7, str(i)) < 0.05 for i in range(len(scores))]
    asked: list[int] = []

    def decide(indices: Sequence[int]) -> list[bool | None]:
        asked.extend(indices)
        return [passes[i] for i in indices]

    descent = descend(scores, audited, decide, target=0.9, step=30)
    kept = [i for i, s in enumerate(scores) if s >= descent.threshold]
    true_recall = sum(passes[i] for i in kept) / sum(passes)
    assert true_recall >= 0.85
    assert len(asked) < 0.8 * len(scores)  # it did not ask about everything
    assert len(set(asked)) == len(asked) == descent.calls
    assert all(audited[i] or scores[i] >= descent.threshold for i in asked)


def test_a_large_audit_stops_the_descent_near_the_target_where_the_floor_overstates_the_misses() -> None:
    # The pass rate keeps falling below any boundary, so the latest steps' pass rate held flat below it
    # overstates the misses; an audit of 2,000 pairs bounds them tighter, and the descent stops near its target
    # (held to the floor alone it went on to 98% of the passes with two thirds of the pairs sent).
    rng = random.Random(0)
    scores = [rng.random() for _ in range(20000)]
    passes = [rng.random() < s**3 for s in scores]
    audited = [audit_draw(0, str(i)) < 0.1 for i in range(len(scores))]
    descent = descend(scores, audited, lambda ix: [passes[i] for i in ix], target=0.9, step=200)
    kept = [i for i, s in enumerate(scores) if s >= descent.threshold]
    true_recall = sum(passes[i] for i in kept) / sum(passes)
    assert 0.88 <= true_recall <= 0.95
    assert descent.calls < 0.6 * len(scores)


def test_a_descent_that_never_reaches_the_target_keeps_every_pair() -> None:
    descent = descend([0.5] * 10 + [0.1] * 10, [False] * 20, lambda ix: [True] * len(ix), target=1.0, step=4)
    assert descent.threshold == 0.1 and descent.calls == 20


# -- the grader over the sourdough bank, with a server answering from the bank's labels ----------------------


@pytest.fixture(scope="module")
def bank() -> LabelledBank:
    return load()


@pytest.fixture
def server(bank: LabelledBank) -> Iterator[FakeOpenAIServer]:
    pytest.importorskip("openai")
    with FakeOpenAIServer(bank.responder) as srv:
        yield srv


def decider_options(server: FakeOpenAIServer) -> dict[str, str]:
    return {"base_url": server.base_url, "api_key": "k", "backoff_base": "0.001", "backoff_max": "0.002"}


def cascade_config(server: FakeOpenAIServer, **options: str) -> GraderConfig:
    sub = ";".join(f"{k}={v}" for k, v in decider_options(server).items())
    return GraderConfig(model="fake-model", options={"decider": "openai", "decider_options": sub, **options})


def calls(server: FakeOpenAIServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("completions"))


def passed(outcome: GradingOutcome) -> set[tuple[str, str]]:
    return {pair for pair, grade in outcome.grades.items() if grade >= 4}


def test_the_cascade_keeps_the_deciders_passes_at_half_its_calls(bank: LabelledBank,
                                                                 server: FakeOpenAIServer) -> None:
    # The decider alone asks once per pair and passes exactly the pairs the bank labels answering (the server
    # answers from the labels): checked on every answering pair and as many others, so the test stays fast.
    answering = [r for r in bank.requests if bank.labels[(r.passage.id, r.test_point.id)]]
    others = random.Random(0).sample([r for r in bank.requests if r not in answering], len(answering))
    decider = default_registry().create("openai", GraderConfig(model="fake-model", options=decider_options(server)))
    alone = run_grading_pass(decider, answering + others, GradeCache(None))
    assert not alone.failures and calls(server) == len(answering) + len(others)
    assert passed(alone) == {(r.passage.id, r.test_point.id) for r in answering}
    alone_passes = {pair for pair, label in bank.labels.items() if label}
    alone_calls = len(bank.requests)
    before = calls(server)

    cascade = default_registry().create("cascade", cascade_config(server))
    cache = GradeCache(None)
    outcome = run_grading_pass(cascade, bank.requests, cache)
    cascade_calls = calls(server) - before
    assert not outcome.failures
    kept = passed(outcome)
    assert kept <= alone_passes  # no pair the decider fails
    assert len(kept) >= 0.95 * len(alone_passes)
    assert cascade_calls <= 0.5 * alone_calls
    # which judge decided each grade is in its reason, and the report's "decided by" counts them
    roles = {next(role for role in (KEPT, AUDIT, FILTERED) if answer.startswith(role))
             for answer in outcome.answers.values() if answer}
    assert roles == {KEPT, AUDIT, FILTERED}
    assert set(outcome.decided_by) == {"openai", "openai (audit)", "embedding (filtered, no call)"}
    assert sum(n for part, n in outcome.decided_by.items() if part.startswith("openai")) == cascade_calls
    # the stated miss rate covers the true one
    estimate = estimate_of(outcome.answers, outcome.grades, 4)
    assert estimate is not None and estimate.calls == cascade_calls
    true_miss = 1 - len(kept) / len(alone_passes)
    low, high = estimate.interval
    assert low <= true_miss <= high
    line = statement(outcome.answers, outcome.grades, 4, cascade.spec())
    assert line is not None and "estimated miss rate" in line and f"{cascade_calls:,} of 1,260 pairs" in line
    # a rerun takes every grade from the cache: no call
    again = run_grading_pass(default_registry().create("cascade", cascade_config(server)), bank.requests, cache)
    assert calls(server) - before == cascade_calls and again.grades == outcome.grades
    cascade.close()


def test_a_given_threshold_filters_without_choosing(bank: LabelledBank, server: FakeOpenAIServer) -> None:
    cascade = default_registry().create("cascade", cascade_config(server, threshold="0.999", audit="0"))
    requests = bank.requests[:84]  # two questions against every passage
    outcome = run_grading_pass(cascade, requests, GradeCache(None))
    filtered = [a for a in outcome.answers.values() if a and a.startswith(FILTERED)]
    assert calls(server) == len(requests) - len(filtered)
    assert all(outcome.grades[p] == 0 for p, a in outcome.answers.items() if a and a.startswith(FILTERED))
    line = statement(outcome.answers, outcome.grades, 4, cascade.spec())
    assert line is not None and "no audit sample: the share of passes the filter missed is unknown" in line


@pytest.mark.parametrize(("options", "message"), [
    ({}, "needs a deciding judge"),
    ({"decider": "openai", "threshold": "0.1", "target_recall": "0.9"}, "not both"),
    ({"decider": "cascade"}, "neither judge can be a cascade"),
    ({"decider": "openai", "decider_options": "base_url"}, "key=value"),
])
def test_a_cascade_badly_configured_says_what_is_wrong(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CascadeGrader(GraderConfig(options=options))


# -- tokens, cost, max_cost and repeats are the decider's -------------------------------------------------


def gold_requests() -> list[GradingRequest]:
    """8 pairs of one length: the even ones state the gold answer (the answer key keeps them), the odd do not."""
    query = Query(id="q", text="battery storage")
    tp = TestPoint(id="q/1", query_id="q", kind="question", text="What do batteries store?",
                   gold_answers=("energy",))
    texts = [f"Cells {i} hold energy for later." if i % 2 == 0 else f"Cells {i} hold nothing at all." for i in range(8)]
    return [GradingRequest(query, tp, Passage(id=f"p{i}", text=t)) for i, t in enumerate(texts)]


def cost_cascade(server: FakeOpenAIServer, **decider: str) -> Grader:
    from tests.llm.test_grading_cost import grader_options

    sub = ";".join(f"{k}={v}" for k, v in grader_options(server, **decider).items())
    return default_registry().create("cascade", GraderConfig(options={
        "decider": "openai", "decider_options": sub, "first": "answer-key", "threshold": "0.5", "audit": "0"}))


def test_the_cascade_counts_and_bounds_only_what_the_decider_spends() -> None:
    pytest.importorskip("openai")
    from tests.llm.test_grading_cost import PRICES, SeededServer

    with SeededServer() as server:
        outcome = run_grading_pass(cost_cascade(server, **PRICES), gold_requests(), GradeCache(None))
        spent = server.spent()
        assert spent.calls == 4 and not outcome.failures
        cost = outcome.cost
        assert cost is not None and cost.session.calls == 4
        assert (cost.session.prompt_tokens, cost.session.completion_tokens) == (spent.prompt_tokens,
                                                                                spent.completion_tokens)
        assert sorted(p for p, _ in cost.pair_tokens) == ["p0", "p2", "p4", "p6"]  # filtered pairs cost nothing

        probe = cost_cascade(server, **PRICES)
        assert probe.meter is not None
        one = probe.meter.inner.bound(gold_requests()[:1])[2]  # type: ignore[attr-defined]  # a call's bound
        budget = run_grading_pass(cost_cascade(server, **PRICES, max_cost=f"{2.5 * one!r}", temperature="0.1"),
                                  gold_requests(), GradeCache(None))
        assert server.spent().calls - spent.calls == 2
        assert budget.cost is not None and budget.cost.stopped is not None and "max_cost" in budget.cost.stopped


def test_the_deciders_repeats_are_the_cascades() -> None:
    pytest.importorskip("openai")
    from tests.llm.test_grading_cost import SeededServer

    with SeededServer() as server:
        outcome = run_grading_pass(cost_cascade(server, repeats="3", temperature="0.7"), gold_requests(),
                                   GradeCache(None))
        assert server.spent().calls == 3 * 4 and outcome.repeats == 3
        assert all(outcome.samples[(f"p{i}", "q/1")] == (0, 0, 0) for i in (1, 3, 5, 7))  # filtered, no call
        assert len(outcome.samples) == 8


def test_a_pytest_session_with_plugin_judges_states_the_cascade(pytester: pytest.Pytester) -> None:
    """Both judges may be a plugin's graders (the cascade creates them from the session's registry), and the
    session's summary states the calls made and the miss rate."""
    from tests.helpers import make_project

    project = make_project(pytester)
    options = ["decider=marker", "first=marker", "threshold=0.5", "audit=0"]
    result = project.runpytest("banks", "--exam-grader", "cascade",
                               *(a for o in options for a in ("--exam-grader-option", o)))
    result.stdout.fnmatch_lines(["grades decided by marker 4, marker (filtered, no call) 7",
                                 "cascade: marker graded 4 of 11 pairs (36.4%: 4 kept at score >= 0.5, 0 audited); "
                                 "marker graded 7 pairs 0 without a call; no audit sample*"])


def test_the_cascades_statement_is_a_section_of_the_json_and_markdown(pytester: pytest.Pytester) -> None:
    """Issue 30, item 1: every output states the filter's calls and estimated miss rate, the JSON with the
    figures behind the line."""
    import json

    from tests.helpers import make_project

    project = make_project(pytester)
    options = ["decider=marker", "first=marker", "threshold=0.5", "audit=0"]
    result = project.runpytest("banks", "--exam-grader", "cascade", "--exam-markdown", "summary.md",
                               *(a for o in options for a in ("--exam-grader-option", o)))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    [estimate] = report["sections"]["judge-notes"]["cascade"]
    assert (estimate["min_grade"], estimate["calls"], estimate["kept"], estimate["audited"], estimate["filtered"]) \
        == (4, 4, 4, 0, 7)
    assert estimate["miss_rate"] is None and estimate["interval"] is None  # no audit sample: unknown, said so
    assert estimate["statement"].startswith("cascade: marker graded 4 of 11 pairs")
    markdown = (project.path / "summary.md").read_text()
    assert "cascade: marker graded 4 of 11 pairs" in markdown
    assert "the share of passes the filter missed is unknown" in markdown
