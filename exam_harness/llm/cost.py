"""Token counts and cost of LLM grading, and the ``max_cost`` budget that bounds them.

Figures (docs/cost.md):

* **This session**: the tokens the grader's backend spent, read from its counters (the server's
  ``usage`` for an OpenAI-compatible server, the estimate where it sends none; the tokenizer's count
  for transformers), retries and the second stage of ``llm-verify`` included.
* **Cached**: what the grades found in the cache cost when they were made, from the token counts
  each LLM grade keeps in its details (``prompt_tokens``, ``completion_tokens``; a call that made
  ``shared_by`` grades, such as nugget assignment, is split evenly among them).
* **Per run**: the tokens of the distinct pairs in a run's top-k, cached or not: what grading that run
  alone costs. Pairs shared by runs count for each, so runs do not add up to the session.

Prices are per 1,000 tokens (grader options ``price_prompt`` and ``price_completion``; a price not
given counts as 0). ``max_cost`` is checked before each batch: the batch's bound (estimated prompt
tokens of its distinct prompts plus the answer limit for each) must fit within what is left, else
only the part of the batch that fits is sent and grading stops there (:class:`Meter`). A server may
report more than the estimate, so the bound is also checked against what was really spent: before
each call (a backend with a ``budget`` hook, the OpenAI one: nothing is sent once the budget is
spent, so at most the calls already in flight pass it) and between batches, which are no larger
than a server backend's concurrency while a budget is set. A session that spent more than ``max_cost``
all the same fails (the ``exam-max-cost`` check, exam_harness/config/gates.py).

A token count is a server's claim: one beyond :data:`MAX_TOKEN_COUNT` (a 400-digit ``usage``) is
counted as that ceiling, so it still exhausts any budget but never overflows a float.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from exam_harness.core.display import money as money  # shown here first; gates and reports read it from display
from exam_harness.core.errors import ConfigError
from exam_harness.io.limits import MAX_TOKEN_COUNT as MAX_TOKEN_COUNT

if TYPE_CHECKING:
    from exam_harness.core.models import GradingRequest
    from exam_harness.llm.backend import TextBackend

Pair = tuple[str, str]  # (passage id, test point id), as exam_harness.exam.inputs.Pair


def token_count(value: object, ceiling: float = MAX_TOKEN_COUNT) -> float:
    """A token count as a float: a non-negative number, at most ``ceiling`` (one call's); else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return 0.0
    return float(min(value, ceiling))


@dataclass
class TokenUsage:
    """Tokens and calls. Floats: a call's tokens shared by several grades are split among them. The
    ``batch_`` counts are the part of the tokens spent through batch jobs (priced at the batch rate)."""

    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    calls: int = 0
    batch_prompt_tokens: float = 0.0
    batch_completion_tokens: float = 0.0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.prompt_tokens + other.prompt_tokens,
                          self.completion_tokens + other.completion_tokens, self.calls + other.calls,
                          self.batch_prompt_tokens + other.batch_prompt_tokens,
                          self.batch_completion_tokens + other.batch_completion_tokens)

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.prompt_tokens - other.prompt_tokens,
                          self.completion_tokens - other.completion_tokens, self.calls - other.calls,
                          self.batch_prompt_tokens - other.batch_prompt_tokens,
                          self.batch_completion_tokens - other.batch_completion_tokens)

    @property
    def total(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def as_batch(self) -> TokenUsage:
        """These tokens, all of them spent through batch jobs."""
        return TokenUsage(self.prompt_tokens, self.completion_tokens, self.calls, self.prompt_tokens,
                          self.completion_tokens)


@dataclass(frozen=True)
class Prices:
    """Prices per 1,000 tokens, in the user's currency (shown with ``$``); ``batch``: those of tokens spent
    through batch jobs (None: priced as the others)."""

    prompt: float = 0.0
    completion: float = 0.0
    batch: Prices | None = None

    def cost(self, usage: TokenUsage) -> float:
        """What ``usage`` costs: its batch part at the batch prices, the rest at these (the one pricing of the
        dry run's bounds, the session's figures, the cached grades' and each run's)."""
        if self.batch is None:
            return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1000.0
        direct = TokenUsage(usage.prompt_tokens - usage.batch_prompt_tokens,
                            usage.completion_tokens - usage.batch_completion_tokens)
        batched = TokenUsage(usage.batch_prompt_tokens, usage.batch_completion_tokens)
        return replace(self, batch=None).cost(direct) + self.batch.cost(batched)


def with_batch_prices(prices: Prices | None, prompt: float | None, completion: float | None) -> Prices | None:
    """``prices`` with its batch prices: ``prompt`` and ``completion`` where given, else half the synchronous
    ones (OpenAI's Batch API discount); None when no price at all is given."""
    if prices is None and prompt is None and completion is None:
        return None
    base = prices or Prices()
    return replace(base, batch=Prices(base.prompt / 2 if prompt is None else prompt,
                                      base.completion / 2 if completion is None else completion))



def prices_from(price_prompt: float | None, price_completion: float | None, max_cost: float | None,
                grader: str) -> Prices | None:
    """The grader's prices, or None when neither is given; ``max_cost`` without a price is a ConfigError."""
    if price_prompt is None and price_completion is None:
        if max_cost is not None:
            raise ConfigError(f"grader {grader!r}: max_cost={max_cost:g} needs a price: give price_prompt and "
                              "price_completion (per 1,000 tokens)")
        return None
    return Prices(price_prompt or 0.0, price_completion or 0.0)


def backend_usage(backend: object) -> TokenUsage:
    """A backend's lifetime counters: ``stats`` as an object (OpenAI) or a dict (transformers)."""
    stats = getattr(backend, "stats", None)

    def read(name: str) -> float:
        value = stats.get(name, 0) if isinstance(stats, dict) else getattr(stats, name, 0)
        return token_count(value, 1e300)  # a lifetime total of capped counts, kept finite all the same

    return TokenUsage(read("prompt_tokens"), read("completion_tokens"), int(read("calls") or read("prompts")),
                      read("batch_prompt_tokens"), read("batch_completion_tokens"))


def made_by_batch(details: Mapping[str, Any]) -> bool:
    """Whether a grade was made by a batch job (its details say ``batch``: priced at the batch rate)."""
    return details.get("batch") is True


def grade_tokens(details: Mapping[str, Any]) -> tuple[float, float] | None:
    """(prompt, completion) tokens of one grade from its details; None when it holds no count."""
    prompt, completion = details.get("prompt_tokens"), details.get("completion_tokens")
    if not isinstance(prompt, (int, float)) and not isinstance(completion, (int, float)):
        return None
    shared = details.get("shared_by")
    share = token_count(shared) if isinstance(shared, (int, float)) and shared >= 1 else 1.0
    return (token_count(prompt) / share, token_count(completion) / share)


@dataclass
class GradingCost:
    """The token and cost figures of one grading pass (``GradingOutcome.cost``)."""

    session: TokenUsage = field(default_factory=TokenUsage)
    cached: TokenUsage = field(default_factory=TokenUsage)
    prices: Prices | None = None
    max_cost: float | None = None
    # pair -> its grade's (prompt, completion) tokens, cached or new: the per-run figures
    pair_tokens: dict[Pair, tuple[float, float]] = field(default_factory=dict)
    batch_pairs: set[Pair] = field(default_factory=set)  # pairs whose grade a batch job made (the batch rate)
    stopped: str | None = None  # why grading stopped at max_cost (None: it did not)
    not_graded: int = 0  # distinct pairs left ungraded by the stop

    def cost(self, usage: TokenUsage) -> float | None:
        return self.prices.cost(usage) if self.prices is not None else None

    def run_usage(self, pairs: Iterable[Pair]) -> TokenUsage:
        """Tokens of the grades of ``pairs`` (each distinct pair once)."""
        out = TokenUsage()
        for pair in set(pairs):
            tokens = self.pair_tokens.get(pair)
            if tokens is not None:
                out.prompt_tokens += tokens[0]
                out.completion_tokens += tokens[1]
                if pair in self.batch_pairs:
                    out.batch_prompt_tokens += tokens[0]
                    out.batch_completion_tokens += tokens[1]
        return out


def merged_cost(first: GradingCost | None, second: GradingCost | None) -> GradingCost | None:
    """Two passes' figures as one (an xdist worker grades bank by bank)."""
    if first is None or second is None:
        return second or first
    return GradingCost(first.session + second.session, first.cached + second.cached, second.prices,
                       second.max_cost, {**first.pair_tokens, **second.pair_tokens},
                       first.batch_pairs | second.batch_pairs, second.stopped or first.stopped,
                       first.not_graded + second.not_graded)


class Meter:
    """An LLM grader's spending: its backend's counters, priced, and the ``max_cost`` check."""

    def __init__(self, grader: object, backend: TextBackend, prices: Prices | None, max_cost: float | None,
                 answer_tokens: int) -> None:
        self.grader = grader
        self.backend = backend
        self.prices = prices
        self.max_cost = max_cost
        self.answer_tokens = answer_tokens  # the bound of one call's completion
        # why this process may spend nothing at all (an xdist worker: the controller holds the budget)
        self.closed: str | None = None
        # a backend without counters (a third party's): the tokens its new grades keep, noted by the pass
        self.counts = getattr(backend, "stats", None) is not None
        self.noted = TokenUsage()
        self.origin = self.used()  # max_cost bounds what the backend spends from now on
        if max_cost is not None and prices is not None and hasattr(backend, "budget"):
            backend.budget = self.over_budget  # checked before each call is sent

    def spent(self) -> float:
        """What the backend has spent since this meter was made, priced (0 without prices)."""
        return (self.prices or Prices()).cost(self.used() - self.origin)

    def over_budget(self) -> str | None:
        """Why no further call may be sent: ``max_cost`` is spent (or this process may spend nothing)."""
        if self.closed is not None:
            return self.closed
        if self.max_cost is not None and self.spent() >= self.max_cost:
            return f"max_cost {money(self.max_cost)} reached: {money(self.spent())} spent"
        return None

    def batch_size(self, chunk_size: int) -> int:
        """Pairs per batch under a budget: at most a server backend's concurrency, so what is spent is
        checked again after every few calls, not once for the whole exam. A local backend (no
        ``concurrency``: transformers) counts its own tokens exactly, so its batches stay as they are."""
        concurrency = getattr(self.backend, "concurrency", None)
        if self.max_cost is None or not isinstance(concurrency, int) or concurrency < 1:
            return chunk_size
        return max(1, min(chunk_size, concurrency))

    def used(self) -> TokenUsage:
        """What the backend has spent in its lifetime: its counters, else the tokens its grades noted."""
        return backend_usage(self.backend) if self.counts else TokenUsage(**vars(self.noted))

    def note(self, tokens: tuple[float, float]) -> None:
        """A new grade's tokens, for a backend that keeps no counters of its own."""
        if not self.counts:
            self.noted.prompt_tokens += tokens[0]
            self.noted.completion_tokens += tokens[1]

    def bound(self, requests: Sequence[GradingRequest]) -> tuple[int, int, float]:
        """``(calls, prompt tokens, cost)`` that grading ``requests`` may spend, by the dry run's estimate
        with every answer as long as allowed."""
        from exam_harness.llm.estimate import estimate_requests

        calls, prompt_tokens = estimate_requests(self.grader, requests)
        prices = self.prices or Prices()
        return calls, prompt_tokens, prices.cost(TokenUsage(prompt_tokens, calls * self.answer_tokens))

    def affordable(self, requests: Sequence[GradingRequest], spent: float) -> int:
        """How many of ``requests``, from the first, fit within ``max_cost`` after ``spent``: all of them
        without a budget; else the longest prefix whose bound fits (found by bisection)."""
        if self.max_cost is None or not requests:
            return len(requests)
        if self.closed is not None:
            return 0
        left = self.max_cost - spent
        if self.bound(requests)[2] <= left:
            return len(requests)
        low, high = 0, len(requests)  # the prefix of `low` fits, that of `high` does not
        while high - low > 1:
            middle = (low + high) // 2
            if self.bound(requests[:middle])[2] <= left:
                low = middle
            else:
                high = middle
        return low
