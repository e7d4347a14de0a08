"""The cost feature: an LLM grader's tokens and cost in the result document (the ``cost`` section: this session's,
the cached grades' and per run; docs/cost.md) and the verdict's ``exam-max-cost`` check, a session that spent
more than the grader's ``max_cost`` all the same (budget.py).

The counting itself (tokens, prices, the meter that holds ``max_cost`` while grading: llm/cost.py) is the core's:
the backends, the grading pass, the cache and the batch jobs count with it whether or not a document shows it.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
