"""The cost section: an LLM grader's tokens and cost, this session's, the cached grades' and per run
(docs/cost.md); other graders spend no tokens and the document has no such section."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.core.models import QueryBank, Run
from exam_harness.llm.cost import GradingCost, TokenUsage, money

if TYPE_CHECKING:
    from exam_harness.results.scored import Scored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TokenCount(_Model):
    """Tokens spent (or that cached grades cost when made), and their cost when prices are given."""

    prompt_tokens: int
    completion_tokens: int
    calls: int | None = None  # calls sent, retries included (this session only)
    cost: float | None = None  # at the grader's prices per 1,000 tokens; None without prices


class RunTokens(_Model):
    """The tokens of the grades of one run's top-k pairs, cached or not (shared pairs count for each run)."""

    run: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None = None


class CostSummary(_Model):
    """An LLM grader's tokens and cost (docs/cost.md); the report has none for other graders."""

    session: TokenCount  # what this session spent
    cached: TokenCount  # what the cached grades it used cost when they were made
    runs: list[RunTokens] = Field(default_factory=list)
    price_prompt: float | None = None  # per 1,000 tokens
    price_completion: float | None = None
    max_cost: float | None = None
    stopped: str | None = None  # why grading stopped at max_cost, with the pairs left ungraded


def cost_summary(cost: GradingCost | None, runs: Mapping[str, Run], banks: Sequence[QueryBank], k: int,
                 left_out: Iterable[str] = ()) -> CostSummary | None:
    """The cost section's content; None for a grader that spends no tokens."""
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


def summary_lines(c: CostSummary) -> list[str]:
    """The terminal's and markdown's lines: this session's tokens and cost, the cached grades', the
    budget, and each run's; then why grading stopped at ``max_cost``, if it did."""
    calls = f" in {c.session.calls:,} calls" if c.session.calls else ""
    line = f"grading cost: this session {_figures(c.session)}{calls}"
    if c.max_cost is not None:
        line += f" (max_cost {money(c.max_cost)})"
    if c.cached.prompt_tokens or c.cached.completion_tokens:
        line += f"; cached grades {_figures(c.cached)}"
    if c.runs:
        line += "; per run (its top-k pairs): " + ", ".join(f"{r.run} {_figures(r)}" for r in c.runs)
    return [line, *([f"max_cost: {c.stopped}"] if c.stopped else [])]


def _html(c: CostSummary) -> str:
    e = html.escape
    priced = c.price_prompt is not None or c.price_completion is not None

    def row(name: str, count: TokenCount | RunTokens) -> str:
        shown = money(count.cost) if count.cost is not None else "–"
        cost = f"<td>{e(shown)}</td>" if priced else ""
        return f"<tr><td>{e(name)}</td><td>{count.prompt_tokens:,}</td><td>{count.completion_tokens:,}</td>{cost}</tr>"

    calls = f" ({c.session.calls:,} calls)" if c.session.calls else ""
    rows = "".join([*(row(r.run, r) for r in c.runs), row(f"this session{calls}", c.session),
                    row("cached grades", c.cached)])
    head = "<th>run</th><th>prompt tokens</th><th>completion tokens</th>" + ("<th>cost</th>" if priced else "")
    notes = "".join(f'<p class="note">{e(line)}</p>' for line in summary_lines(c))
    return (f'<section id="cost"><h2>Grading cost</h2>{notes}<div class="scroll"><table><thead><tr>{head}</tr>'
            f"</thead><tbody>{rows}</tbody></table></div></section>")


@dataclass(frozen=True)
class CostSection:
    name: str = "cost"
    title: str = "Grading cost"
    model: type[BaseModel] = CostSummary

    def compute(self, scored: Scored) -> CostSummary | None:
        grading = scored.grading
        return cost_summary(grading.cost, scored.runs, scored.banks, scored.plan.k, grading.unsupported)

    def terminal(self, content: CostSummary) -> list[str]:
        return summary_lines(content)

    def markdown(self, content: CostSummary, escape: Callable[[str], str]) -> str:
        return "\n\n".join(escape(line) for line in summary_lines(content))

    def html(self, content: CostSummary) -> str:
        return _html(content)


SECTION = CostSection()
