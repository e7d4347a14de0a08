"""Issue 31, findings 8 and 9: ``max_cost`` against a server whose ``usage`` is far beyond the estimate
(1e9 tokens a call) and against one reporting a 400-digit count.

* the budget is checked before every call and batches are no larger than the concurrency, so the
  calls after the budget is spent are never sent (at most the ones in flight pass it), and a session
  that spent more than ``max_cost`` all the same fails (``exam-max-cost``);
* an absurd count is capped, not an ``OverflowError``: the paid grades are made and cached.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from exam_harness.features.cost.budget import budget_results
from exam_harness.features.cost.section import cost_summary, summary_lines
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from exam_harness.llm.cost import MAX_TOKEN_COUNT
from tests.llm.support import PRICES, SeededServer, make_grader, requests

pytest.importorskip("openai")


class GreedyServer(SeededServer):
    """Reports ``prompt_tokens`` of its own choosing for every answer."""

    def __init__(self, prompt_tokens: int) -> None:
        super().__init__()
        self.prompt_tokens = prompt_tokens

    def usage_of(self, prompt: str) -> tuple[int, int]:
        return self.prompt_tokens, 3


@pytest.fixture
def billion() -> Iterator[GreedyServer]:
    with GreedyServer(10**9) as srv:
        yield srv


@pytest.fixture
def absurd() -> Iterator[GreedyServer]:
    with GreedyServer(10**400) as srv:
        yield srv


def test_max_cost_is_checked_per_call_when_usage_exceeds_the_estimate(billion: GreedyServer) -> None:
    grader = make_grader(billion, **PRICES, max_cost="1", concurrency="2")
    outcome = run_grading_pass(grader, requests(20), GradeCache(None), chunk_size=1000)
    calls = billion.spent().calls
    assert 1 <= calls <= 2  # the calls in flight when the first answer spent the budget, no more
    assert outcome.graded == calls
    cost = outcome.cost
    assert cost is not None and cost.stopped is not None and "max_cost $1.00 reached" in cost.stopped
    # the stop line, the cost line and the failures count the same pairs
    assert f"{20 - calls} pairs were not graded" in cost.stopped and len(outcome.failures) == 20 - calls
    summary = cost_summary(cost, {}, [], 10)
    assert summary is not None and summary.session.cost is not None and summary.session.cost > 1
    assert any(line.startswith("max_cost: grading stopped") for line in summary_lines(summary))
    failed = budget_results(summary)
    assert [r.gate for r in failed] == ["exam-max-cost"] and not failed[0].passed
    assert "more than max_cost $1.00" in failed[0].message


def test_a_session_within_its_budget_has_no_budget_failure(billion: GreedyServer) -> None:
    outcome = run_grading_pass(make_grader(billion, **PRICES, max_cost="1e9"), requests(3), GradeCache(None))
    assert outcome.graded == 3 and budget_results(cost_summary(outcome.cost, {}, [], 10)) == []


def test_a_400_digit_usage_count_is_capped_and_the_grades_are_cached(absurd: GreedyServer, tmp_path: Path) -> None:
    cache = GradeCache(tmp_path / "grades.sqlite")
    outcome = run_grading_pass(make_grader(absurd, **PRICES), requests(6), cache)
    assert outcome.graded == 6 and not outcome.failures
    assert outcome.cost is not None and outcome.cost.session.prompt_tokens == 6 * MAX_TOKEN_COUNT
    summary = cost_summary(outcome.cost, {}, [], 10)
    assert summary is not None and summary_lines(summary)  # printable: finite figures
    again = run_grading_pass(make_grader(absurd, **PRICES), requests(6), cache)
    assert again.cache_hits == 6 and absurd.spent().calls == 6  # nothing paid twice
    cache.close()


def _dry_run_cost(grader: object) -> float:
    from exam_harness.grading.passes import dry_run_summary

    line = dry_run_summary(grader, requests(4), GradeCache(None))  # type: ignore[arg-type]
    found = re.search(r"at most \$([\d.,]+)", line)
    assert found, line
    return float(found[1].replace(",", ""))


def test_the_dry_run_counts_every_sample(billion: GreedyServer) -> None:
    """Issue 28, item 7: repeats=3 asks every pair three times, so the dry run's bound is three times as high."""
    once = _dry_run_cost(make_grader(billion, **PRICES, temperature="1"))
    thrice = _dry_run_cost(make_grader(billion, **PRICES, temperature="1", repeats="3"))
    assert once > 0 and thrice == pytest.approx(3 * once, rel=1e-3)
    assert billion.spent().calls == 0
