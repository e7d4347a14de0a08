"""Dry-run figures: how many calls and prompt tokens grading or bank generation would spend.

Nothing is sent. An :class:`~exam_harness.llm.openai.OpenAIBackend` estimates with its own rule (system
message and truncation included); any other backend counts the tokens of each distinct prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from exam_harness.errors import ConfigError
from exam_harness.graders.base import GradingRequest
from exam_harness.llm.backend import PromptParts, TextBackend
from exam_harness.llm.openai import OpenAIBackend


class PromptingGrader(Protocol):
    """What a dry run needs of a grader: an LLM grader's backend, answer length and prompts."""

    backend: TextBackend
    max_new_tokens: int

    def prompt_for(self, request: GradingRequest) -> PromptParts | None: ...


def estimate_prompts(backend: TextBackend, prompts: Sequence[PromptParts], max_new_tokens: int) -> tuple[int, int]:
    """``(calls, prompt_tokens)`` of sending ``prompts`` to ``backend``; a repeated prompt is sent once."""
    if isinstance(backend, OpenAIBackend):
        return backend.estimate(prompts, max_new_tokens=max_new_tokens)
    unique = {p.text for p in prompts}
    return len(unique), sum(backend.count_tokens(text) for text in unique)


def estimate_requests(grader: object, requests: Sequence[GradingRequest]) -> tuple[int, int]:
    """Dry-run figures ``(calls, prompt_tokens)`` for grading ``requests`` with an
    :class:`~exam_harness.graders.llm.LLMGrader`: the distinct prompts it would send (pairs it does not
    support excluded; the second stage of ``llm-verify`` depends on the first and is not counted).
    A grader without a backend and prompts is a ConfigError."""
    if getattr(grader, "backend", None) is None or not hasattr(grader, "prompt_for"):
        raise ConfigError(f"grader {getattr(grader, 'name', grader)!r} is not an LLM grader: no prompts to count")
    llm = cast(PromptingGrader, grader)
    batched = getattr(grader, "prompts_for", None)  # nugget assignment asks about several pairs per prompt
    parts = batched(requests) if callable(batched) else [p for p in map(llm.prompt_for, requests) if p is not None]
    return estimate_prompts(llm.backend, parts, llm.max_new_tokens)
