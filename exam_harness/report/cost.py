"""The cost section of a report: an LLM grader's tokens and cost, this session's, the cached grades'
and per run (:class:`~exam_harness.report.schema.CostSummary`), and its lines in each output."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from exam_harness.llm.cost import GradingCost, TokenUsage, money
from exam_harness.models import QueryBank, Run
from exam_harness.report.schema import CostSummary, ExamReport, RunTokens, TokenCount


def cost_summary(cost: GradingCost | None, runs: Mapping[str, Run], banks: Sequence[QueryBank], k: int,
                 left_out: Iterable[str] = ()) -> CostSummary | None:
    """The report's cost section; None for a grader that spends no tokens."""
    if cost is None:
        return None
    skip = set(left_out)  # test points the grader cannot grade
    runs_tokens = []
    for name, run in runs.items():
        pairs = ((pid, tp.id) for bank in banks for pid in run.top_k(bank.query.id, k)
                 for tp in bank.test_points if tp.id not in skip)
        usage = cost.run_usage(pairs)
        runs_tokens.append(RunTokens(run=name, prompt_tokens=round(usage.prompt_tokens),
                                     completion_tokens=round(usage.completion_tokens), cost=_cost(cost, usage)))
    prices = cost.prices
    return CostSummary(
        session=_count(cost, cost.session, calls=True), cached=_count(cost, cost.cached, calls=False), runs=runs_tokens,
        price_prompt=prices.prompt if prices else None, price_completion=prices.completion if prices else None,
        max_cost=cost.max_cost, stopped=cost.stopped)


def _cost(cost: GradingCost, usage: TokenUsage) -> float | None:
    value = cost.cost(usage)
    return round(value, 6) if value is not None else None


def _count(cost: GradingCost, usage: TokenUsage, *, calls: bool) -> TokenCount:
    return TokenCount(prompt_tokens=round(usage.prompt_tokens), completion_tokens=round(usage.completion_tokens),
                      calls=usage.calls if calls else None, cost=_cost(cost, usage))


def _figures(count: TokenCount | RunTokens) -> str:
    text = f"{count.prompt_tokens:,} prompt + {count.completion_tokens:,} completion tokens"
    return text + (f" = {money(count.cost)}" if count.cost is not None else "")


def cost_lines(report: ExamReport) -> list[str]:
    """The terminal's and markdown's lines: this session's tokens and cost, the cached grades', the
    budget, and each run's; then why grading stopped at ``max_cost``, if it did."""
    return summary_lines(report.cost)


def summary_lines(c: CostSummary | None) -> list[str]:
    """:func:`cost_lines` of a cost section (also ``exam-harness evaluate``'s summary line, given the section
    without its runs: it prints each run's figures as a table, report/evaluation_tables.py)."""
    if c is None:
        return []
    calls = f" in {c.session.calls:,} calls" if c.session.calls else ""
    line = f"grading cost: this session {_figures(c.session)}{calls}"
    if c.max_cost is not None:
        line += f" (max_cost {money(c.max_cost)})"
    if c.cached.prompt_tokens or c.cached.completion_tokens:
        line += f"; cached grades {_figures(c.cached)}"
    if c.runs:
        line += "; per run (its top-k pairs): " + ", ".join(f"{r.run} {_figures(r)}" for r in c.runs)
    return [line, *([f"max_cost: {c.stopped}"] if c.stopped else [])]
