"""The batch-first grader interface every grader implements, built-in or from a plugin.

A grader receives whole batches of (query, test point, passage) requests and answers each with a
:class:`~exam_harness.models.Grade` or a :class:`GradeFailure`. Failures are reported and never
stored as grades. Everything that shapes a grade goes into :meth:`Grader.spec` and
:meth:`Grader.cache_payload`, which together form the grade-cache key.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from exam_harness.models import ExamData, Grade, GraderSpec, Passage, Query, TestPoint


@dataclass(frozen=True)
class GradingRequest:
    """One (passage, test point) pair to grade, with its query for prompts that need it."""

    query: Query
    test_point: TestPoint
    passage: Passage


@dataclass(frozen=True)
class GradeFailure:
    """A pair the grader could not grade; ``message`` says why (shown as a test error)."""

    message: str


GradeResult = Grade | GradeFailure


@dataclass
class GraderConfig:
    """What a grader factory is given: the user's grader options and the loaded exam data."""

    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    data: ExamData | None = None
    batch_size: int | None = None
    device: str | None = None


class Grader(abc.ABC):
    """Base class of graders. Subclasses set ``name`` and implement :meth:`spec` and :meth:`grade_batch`."""

    name: str = ""

    @abc.abstractmethod
    def spec(self) -> GraderSpec:
        """Identity of this grader (name, version, model, prompt, decoding); hashed into cache keys."""

    @abc.abstractmethod
    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        """Grade every request; return one result per request, in order."""

    def supports(self, test_point: TestPoint) -> str | None:
        """``None`` if this grader can grade the test point, else the reason it cannot (case is skipped)."""
        return None

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        """The request content that shapes a grade. Override to add fields (e.g. the query text)."""
        tp = request.test_point
        return {
            "kind": tp.kind,
            "test_point": tp.text,
            "gold_answers": list(tp.gold_answers),
            "choices": list(tp.choices),
            "passage": request.passage.text,
        }

    def uses_cache(self) -> bool:
        """Whether grades are worth caching (replaying recorded grades is not)."""
        return True

    def close(self) -> None:
        """Release models, clients or threads. Called once at the end of the grading pass."""
