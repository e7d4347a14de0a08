"""Token counts, cost and ``max_cost`` of LLM grading (docs/cost.md), against a local OpenAI-compatible
server on 127.0.0.1 that answers grades drawn from a seeded distribution and reports ``usage`` with
seeded completion token counts: what a session reports is what the server said it spent, a rerun
reports what its cached grades cost, and ``max_cost`` stops grading before it would be passed, the
grades made kept."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import GradingRequest
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from exam_harness.llm.cost import Prices, TokenUsage
from tests.fake_openai_server import FakeOpenAIServer, Fault
from tests.helpers import doc_example, printed_block, write_project
from tests.llm.support import COLLECTION, PRICES, RUNS, SeededServer, grader_options, make_grader, pytest_args, requests
from tests.paths import GOLDEN
from tests.plugin.support import BANK

pytest_plugins = ["pytester"]
pytest.importorskip("openai")

@pytest.fixture
def server() -> Iterator[SeededServer]:
    with SeededServer() as srv:
        yield srv


def test_session_tokens_and_cost_are_what_the_server_reported(server: SeededServer, tmp_path: Path) -> None:
    grader = make_grader(server, **PRICES)
    cache = GradeCache(tmp_path / "grades.sqlite")
    outcome = run_grading_pass(grader, requests(), cache)
    spent = server.spent()
    assert spent.calls == 8 and outcome.graded == 8
    cost = outcome.cost
    assert cost is not None
    assert (cost.session.prompt_tokens, cost.session.completion_tokens) == (spent.prompt_tokens, spent.completion_tokens)
    assert cost.session.calls == 8
    assert cost.cost(cost.session) == pytest.approx(
        (spent.prompt_tokens * 0.5 + spent.completion_tokens * 2) / 1000)
    assert cost.cached.total == 0
    # each pair carries its grade's tokens: together they are the session's
    assert sum(p for p, _ in cost.pair_tokens.values()) == spent.prompt_tokens
    assert sum(c for _, c in cost.pair_tokens.values()) == spent.completion_tokens
    # the seeded distribution gave more than one grade: the counts are per call, not a constant
    assert len(set(outcome.grades.values())) > 1 and len({c for _, c in server.sent}) > 1

    # A rerun sends nothing, spends nothing, and reports what its cached grades cost when made.
    again = run_grading_pass(make_grader(server, **PRICES), requests(), cache)
    assert server.spent().calls == 8 and again.cache_hits == 8
    assert again.cost is not None and again.cost.session.total == 0
    assert (again.cost.cached.prompt_tokens, again.cost.cached.completion_tokens) == (
        spent.prompt_tokens, spent.completion_tokens)
    assert again.cost.pair_tokens == cost.pair_tokens
    cache.close()


def test_max_cost_stops_before_it_is_passed_and_keeps_the_grades(server: SeededServer, tmp_path: Path) -> None:
    pool = requests()
    probe = make_grader(server, **PRICES)
    bounds = {probe.meter.bound([r])[2] for r in pool}
    assert len(bounds) == 1  # every prompt is of one length: each pair's bound is the same
    bound = bounds.pop()
    max_cost = 3.5 * bound  # three pairs fit, a fourth would not
    cache = GradeCache(tmp_path / "grades.sqlite")
    outcome = run_grading_pass(make_grader(server, **PRICES, max_cost=f"{max_cost!r}"), pool, cache)
    assert server.spent().calls == 3 and outcome.graded == 3
    cost = outcome.cost
    assert cost is not None and cost.stopped is not None and cost.not_graded == 5
    spent = cost.cost(cost.session)
    assert spent is not None and 0 < spent <= max_cost
    assert "max_cost" in cost.stopped and "5 pairs were not graded" in cost.stopped
    assert len(outcome.failures) == 5 and all("max_cost" in why for why in outcome.failures.values())

    # The grades made are cached: a rerun with a larger budget asks only for the five left.
    rest = run_grading_pass(make_grader(server, **PRICES, max_cost="100"), pool, cache)
    assert rest.cache_hits == 3 and rest.graded == 5 and server.spent().calls == 8
    assert rest.cost is not None and rest.cost.stopped is None and not rest.failures
    cache.close()


def test_max_cost_below_one_call_sends_nothing(server: SeededServer) -> None:
    outcome = run_grading_pass(make_grader(server, **PRICES, max_cost="0.000001"), requests(2), GradeCache(None))
    assert server.spent().calls == 0 and outcome.graded == 0 and len(outcome.failures) == 2
    assert outcome.cost is not None and outcome.cost.stopped is not None


def test_a_budget_needs_a_price(server: SeededServer) -> None:
    with pytest.raises(ConfigError, match=r"max_cost=1 needs a price"):
        make_grader(server, max_cost="1")


def test_without_prices_tokens_are_counted_and_no_cost_is_made_up(server: SeededServer) -> None:
    outcome = run_grading_pass(make_grader(server), requests(3), GradeCache(None))
    assert outcome.cost is not None and outcome.cost.prices is None
    assert outcome.cost.session.prompt_tokens == server.spent().prompt_tokens > 0
    assert outcome.cost.cost(outcome.cost.session) is None


def test_a_server_without_usage_is_counted_by_the_estimate(tmp_path: Path) -> None:
    class NoUsage(FakeOpenAIServer):
        def answer_body(self, path: str, body: dict[str, Any], prompt: str, fault: Fault | None) -> dict[str, Any]:
            answer = super().answer_body(path, body, prompt, fault)
            del answer["usage"]
            return answer

    with NoUsage(lambda prompt: "4") as srv:
        grader = make_grader(srv, **PRICES)
        outcome = run_grading_pass(grader, requests(2), GradeCache(None))
    assert outcome.cost is not None
    _calls, estimated = grader.meter.bound(requests(2))[:2]
    assert outcome.cost.session.prompt_tokens == estimated  # the same estimate as the dry run's
    assert outcome.cost.session.completion_tokens == 2  # "4" is one token by the estimate, twice


def test_prices_cost_of_tokens() -> None:
    assert Prices(0.5, 2.0).cost(TokenUsage(1000, 500)) == pytest.approx(1.5)


# --- through pytest ------------------------------------------------------------------------------

@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return write_project(pytester, BANK, COLLECTION, RUNS, "exam_k = 2")


def report_cost(pytester: pytest.Pytester) -> dict[str, Any]:
    cost = json.loads((pytester.path / "reports" / "exam-report.json").read_text())["sections"]["cost"]
    assert isinstance(cost, dict)
    return cost


def test_every_output_shows_tokens_and_cost(project: pytest.Pytester, server: SeededServer) -> None:
    result = project.runpytest(*pytest_args(server, **PRICES), "--exam-markdown", "summary.md",
                               "--exam-html", "report.html")
    assert result.ret == 0, result.stdout.str()
    spent = server.spent()
    assert spent.calls == 6  # q1: {p1, p2} x {a, b}; q2: {p3, p4} x {c}; p1's pairs shared by both runs
    cost = report_cost(project)
    assert cost["session"]["prompt_tokens"] == spent.prompt_tokens
    assert cost["session"]["completion_tokens"] == spent.completion_tokens
    money = (spent.prompt_tokens * 0.5 + spent.completion_tokens * 2) / 1000
    assert cost["session"]["cost"] == pytest.approx(money, abs=1e-6)
    assert (cost["price_prompt"], cost["price_completion"], cost["max_cost"]) == (0.5, 2.0, None)
    runs = {r["run"]: r for r in cost["runs"]}
    # the weak run ranks p1 too: the shared pairs count for each run, so runs add up to more than the session
    assert runs["good"]["prompt_tokens"] < runs["weak"]["prompt_tokens"] < spent.prompt_tokens
    assert runs["good"]["prompt_tokens"] + runs["weak"]["prompt_tokens"] > spent.prompt_tokens
    shown = f"${money:.4f}"
    result.stdout.fnmatch_lines([f"grading cost: this session {spent.prompt_tokens:,} prompt + "
                                 f"{spent.completion_tokens:,} completion tokens = {shown} in 6 calls*"])
    assert shown in (project.path / "summary.md").read_text()
    assert shown in (project.path / "report.html" / "index.html").read_text()

    # The rerun spends nothing and says what its cached grades cost.
    project.runpytest(*pytest_args(server, **PRICES))
    cost = report_cost(project)
    assert server.spent().calls == 6 and cost["session"]["prompt_tokens"] == 0
    assert cost["cached"]["prompt_tokens"] == spent.prompt_tokens and cost["cached"]["cost"] == pytest.approx(
        money, abs=1e-6)


def test_max_cost_through_pytest_fails_the_session_with_the_grades_kept(
    project: pytest.Pytester, server: SeededServer
) -> None:
    result = project.runpytest(*pytest_args(server, **PRICES, max_cost="0.5"))
    out = result.stdout.str()
    assert result.ret == 1, out  # an incomplete exam: a gate failure, not an infrastructure one (75)
    graded = server.spent().calls
    assert 0 < graded < 6
    cost = report_cost(project)
    assert cost["session"]["cost"] <= 0.5 and cost["max_cost"] == 0.5
    assert f"{6 - graded} pairs were not graded" in cost["stopped"]
    result.stdout.fnmatch_lines(["max_cost: grading stopped: max_cost $0.5000 reached: $0.* spent*"])
    # The next session grades only what is left.
    again = project.runpytest(*pytest_args(server, **PRICES))
    assert again.ret == 0, again.stdout.str()
    assert server.spent().calls == 6


def test_dry_run_prints_tokens_and_cost(project: pytest.Pytester, server: SeededServer) -> None:
    result = project.runpytest(*pytest_args(server, **PRICES, max_cost="5"), "--exam-dry-run")
    assert result.ret == 0, result.stdout.str()
    assert server.spent().calls == 0
    line = next(line for line in result.outlines if line.startswith("exam dry run:"))
    found = re.search(r"6 calls with about (\d+) prompt tokens and at most 192 completion tokens, at most \$([\d.]+) "
                      r"\(max_cost \$5\.00\); nothing was sent$", line)
    assert found, line
    assert float(found[2]) == pytest.approx((int(found[1]) * 0.5 + 192 * 2) / 1000, abs=0.005)


def test_evaluate_prints_and_writes_the_session_and_each_run_s_tokens_and_cost(
    server: SeededServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``exam-harness evaluate`` with an LLM grader: the session's tokens and cost on the summary line, each
    run's (the usage the server reported for the grades of its top-k pairs) in a table and in ``grading.cost``."""
    from exam_harness.cli import main
    from exam_harness.results.document import validate_document
    from exam_harness.results.evaluation import EvaluationReport

    (tmp_path / "exam.yaml").write_text(BANK)
    (tmp_path / "collection.tsv").write_text(COLLECTION)
    for name, text in RUNS.items():
        (tmp_path / name).write_text(text)
    args = ["evaluate", str(tmp_path / "collection.tsv"), *(str(tmp_path / name) for name in RUNS), "--bank",
            str(tmp_path / "exam.yaml"), "--grader", "openai", "--cache", str(tmp_path / "c.sqlite"), "--k", "2",
            "--json", str(tmp_path / "lb.json"), "--bootstrap", "0", "--no-progress"]
    for key, value in grader_options(server, **PRICES).items():
        args += ["--grader-option", f"{key}={value}"]
    monkeypatch.setenv("COLUMNS", "200")  # every table column on one line
    assert main(args) == 0
    spent = server.spent()
    assert spent.calls == 6  # q1: {p1, p2} x {a, b}; q2: {p3, p4} x {c}
    printed = capsys.readouterr().out
    assert (f"grading cost: this session {spent.prompt_tokens:,} prompt + {spent.completion_tokens:,} completion "
            f"tokens = ${(spent.prompt_tokens * 0.5 + spent.completion_tokens * 2) / 1000:.4f} in 6 calls") in printed

    def usage(pairs: list[tuple[str, str]]) -> tuple[int, int]:
        """What the server reported for the grades of these (passage text, question) pairs, one call each."""
        prompts = [next(r.prompt for r in server.requests if f"\n{text}\n" in r.prompt and f" {question}\n" in r.prompt)
                   for text, question in pairs]
        assert len(set(prompts)) == len(pairs)
        return sum(server.usage_of(p)[0] for p in prompts), sum(server.usage_of(p)[1] for p in prompts)

    a, b, c = "question a", "question b", "question c"
    expected = {  # each run's top-2: good ranks p1 and p3, weak p1, p2 and p4 (p1's pairs count for both)
        "good": usage([("first passage", a), ("first passage", b), ("third passage", c)]),
        "weak": usage([("first passage", a), ("first passage", b), ("second passage", a), ("second passage", b),
                       ("fourth passage", c)]),
    }
    document = json.loads((tmp_path / "lb.json").read_text())
    assert isinstance(validate_document(document), EvaluationReport)  # the one schema
    cost = document["sections"]["cost"]  # the pytest report's cost section, computed the same way
    assert (cost["session"]["prompt_tokens"], cost["session"]["completion_tokens"]) == (
        spent.prompt_tokens, spent.completion_tokens)
    runs = {r["run"]: r for r in cost["runs"]}
    assert {run: (r["prompt_tokens"], r["completion_tokens"]) for run, r in runs.items()} == expected
    for run, (prompt, completion) in expected.items():
        assert runs[run]["cost"] == pytest.approx((prompt * 0.5 + completion * 2) / 1000, abs=1e-6)
    assert expected["good"][0] + expected["weak"][0] > spent.prompt_tokens  # the shared pairs count twice
    # the section's line, as the pytest session prints it: each run's tokens and cost
    for run, (prompt, completion) in expected.items():
        assert (f"{run} {prompt:,} prompt + {completion:,} completion tokens = "
                f"${(prompt * 0.5 + completion * 2) / 1000:.4f}") in printed
    example = doc_example("cost.md", "evaluate-cost")  # what the document shows is printed
    assert printed_block(printed, example[0], len(example)) == example

    # A rerun spends nothing: each run's figures are what its cached grades cost when made.
    assert main(args) == 0
    again = json.loads((tmp_path / "lb.json").read_text())["sections"]["cost"]
    assert server.spent().calls == 6 and again["session"]["prompt_tokens"] == 0
    assert again["cached"]["prompt_tokens"] == spent.prompt_tokens and again["runs"] == cost["runs"]


def test_a_call_that_makes_several_grades_is_shared_among_them(tmp_path: Path) -> None:
    """Nugget assignment asks about every nugget of a passage in one call: each grade keeps the call's
    tokens with ``shared_by``, so the grades' shares add up to the call and the cached figures of a
    rerun equal what the session spent."""

    def labels(prompt: str) -> str:
        rng = random.Random(prompt.count("NUG#"))
        return json.dumps([rng.choice(["support", "partial_support", "not_support"]) for _ in range(prompt.count("NUG#"))])

    query = Query(id="q", text="battery storage")
    nuggets = [TestPoint(id=f"q/{i}", query_id="q", kind="nugget", text=f"NUG#{i} stores energy") for i in range(3)]
    pool = [GradingRequest(query, tp, Passage(id=pid, text=f"passage {pid} on cells")) for pid in ("a", "b")
            for tp in nuggets]
    with SeededServer() as srv:
        srv.responder = labels
        options = {**PRICES, "prompt": "nugget-assignment"}
        cache = GradeCache(tmp_path / "grades.sqlite")
        outcome = run_grading_pass(make_grader(srv, **options), pool, cache)
        spent = srv.spent()
        assert spent.calls == 2 and outcome.graded == 6  # one call per passage, three grades each
        assert outcome.cost is not None
        assert sum(p for p, _ in outcome.cost.pair_tokens.values()) == pytest.approx(spent.prompt_tokens)
        assert sum(c for _, c in outcome.cost.pair_tokens.values()) == pytest.approx(spent.completion_tokens)
        again = run_grading_pass(make_grader(srv, **options), pool, cache)
        assert again.cost is not None and again.cost.session.total == 0
        assert again.cost.cached.prompt_tokens == pytest.approx(spent.prompt_tokens)
        assert again.cost.cached.completion_tokens == pytest.approx(spent.completion_tokens)
        cache.close()


@pytest.mark.slow
def test_under_xdist_only_the_controller_spends_the_budget(project: pytest.Pytester, server: SeededServer) -> None:
    pytest.importorskip("xdist")
    result = project.runpytest(*pytest_args(server, **PRICES, max_cost="0.5"), "-n", "2")
    assert result.ret == 1, result.stdout.str()
    spent = server.spent()
    assert 0 < spent.calls < 6  # the workers did not grade what the controller left
    assert Prices(0.5, 2.0).cost(spent) <= 0.5


def test_a_backend_without_counters_is_counted_from_its_grades() -> None:
    """A third party's backend keeps no ``stats``: the session's figures are the tokens its grades keep."""
    from exam_harness.graders.llm import LLMGrader
    from exam_harness.llm.backend import Generation, PromptParts

    class Plain:
        model_id: str = "plain"
        revision: str | None = None

        def settings(self) -> dict[str, Any]:
            return {}

        def generate(self, prompts: Any, *, max_new_tokens: int, rating_scale: int | None = None) -> list[Any]:
            return [Generation("4", prompt_tokens=len(p.text) // 4, completion_tokens=1) for p in prompts]

        def count_tokens(self, text: str) -> int:
            return len(text) // 4

        def close(self) -> None: ...

    grader = LLMGrader(Plain(), prices=Prices(1.0, 1.0), max_cost=1000.0)
    outcome = run_grading_pass(grader, requests(3), GradeCache(None))
    assert outcome.cost is not None and outcome.graded == 3
    prompts = [grader.prompt_for(r) for r in requests(3)]
    assert outcome.cost.session.prompt_tokens == sum(len(p.text) // 4 for p in prompts if isinstance(p, PromptParts))
    assert outcome.cost.session.completion_tokens == 3


def test_a_kept_report_of_schema_3_1_reads_in_3_2_without_cost(tmp_path: Path) -> None:
    from exam_harness.results.read import read_report

    pinned = json.loads((GOLDEN / "exam-report.json").read_text())
    pinned.pop("sections")  # a 3.1 report had neither cost nor sections
    kept = tmp_path / "exam-report.json"
    kept.write_text(json.dumps({**pinned, "schema_version": "3.1", "tool_version": "0.1.0",
                                "created": "2026-11-23T00:00:00+00:00"}))
    report = read_report(kept)
    assert report.schema_version == "3.1" and "cost" not in report.sections
