"""The text-generation backend protocol shared by the LLM graders and bank generation.

A backend turns whole batches of prompts into text. Prompts arrive split around the passage
(``before`` + ``context`` + ``after``) so that a backend can truncate the context alone to its
model's limit: the instruction and the question always stay whole, as the method's grading phase requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from exam_harness.core.models import GradeFailure


@dataclass(frozen=True)
class PromptParts:
    before: str
    context: str
    after: str = ""

    @property
    def text(self) -> str:
        return self.before + self.context + self.after


@dataclass(frozen=True)
class Generation:
    """A backend's answer to one prompt."""

    text: str
    # Probability of each grade 0..max_grade from the first decoding step, when the backend knows it.
    grade_probabilities: tuple[float, ...] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None  # the answer's tokens (the server's usage, else counted)


GenerationResult = Generation | GradeFailure


@runtime_checkable
class TextBackend(Protocol):
    """What an LLM grader needs from a model server or a local model."""

    model_id: str
    revision: str | None

    def settings(self) -> dict[str, Any]:
        """Decoding settings and anything else that shapes an answer (goes into the cache key)."""
        ...

    def generate(
        self, prompts: Sequence[PromptParts], *, max_new_tokens: int, rating_scale: int | None = None
    ) -> list[GenerationResult]:
        """Answer every prompt, in order. ``rating_scale`` (e.g. 5) asks for grade probabilities 0..scale
        when the backend can compute them cheaply; a backend may use it to take a fast path whose text
        equals that of plain greedy decoding."""
        ...

    def count_tokens(self, text: str) -> int:
        """Prompt tokens as this backend's tokenizer counts them (estimates allowed for remote models)."""
        ...

    def close(self) -> None: ...
