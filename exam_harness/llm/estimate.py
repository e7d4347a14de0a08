"""Dry-run figures: how many calls and prompt tokens grading or bank generation would spend.

Nothing is sent. An :class:`~exam_harness.llm.openai.OpenAIBackend` estimates with its own rule (system
message and truncation included); any other backend counts the tokens of each distinct prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from exam_harness.core.errors import ConfigError
from exam_harness.llm.backend import PromptParts, TextBackend
from exam_harness.llm.openai import OpenAIBackend

if TYPE_CHECKING:
    from exam_harness.core.models import GradingRequest


@runtime_checkable
class _Estimating(Protocol):
    """What :func:`estimate_requests` reads of a grader (``graders.base.Grader`` has both): matched by
    shape, so this backend layer does not import the graders above it."""

    name: str

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int] | None: ...


def estimate_prompts(backend: TextBackend, prompts: Sequence[PromptParts], max_new_tokens: int) -> tuple[int, int]:
    """``(calls, prompt_tokens)`` of sending ``prompts`` to ``backend``; a repeated prompt is sent once."""
    if isinstance(backend, OpenAIBackend):
        return backend.estimate(prompts, max_new_tokens=max_new_tokens)
    unique = {p.text for p in prompts}
    return len(unique), sum(backend.count_tokens(text) for text in unique)


def estimate_requests(grader: object, requests: Sequence[GradingRequest]) -> tuple[int, int]:
    """Dry-run figures ``(calls, prompt_tokens)`` for grading ``requests`` (:meth:`Grader.estimate`): for an
    :class:`~exam_harness.graders.llm.LLMGrader`, the distinct prompts it would send (pairs it does not
    support excluded; the second stage of ``llm-verify`` depends on the first and is not counted).
    A grader that sends no prompts is a ConfigError."""
    figures = grader.estimate(requests) if isinstance(grader, _Estimating) else None
    if figures is None:
        name = grader.name if isinstance(grader, _Estimating) else grader
        raise ConfigError(f"grader {name!r} is not an LLM grader: no prompts to count")
    return figures
