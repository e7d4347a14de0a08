"""Grading engines: what grades a pass's cache misses when this process does not (a feature's, such as Ray).

The grading pass (passes.py) pools the pairs, keys them, finds the misses and, with an engine, hands the engine
the misses (one request per cache key) instead of grading them itself. The engine grades them wherever it runs
them and gives back each pair's result a batch at a time, in any order; the pass records every result and stores
the grades in the cache as it stores its own (at least every ``STORE_EVERY_S``), so this process stays the cache's
one writer and a killed run resumes from what was stored. A failure is recorded as a failure, never a grade.

An engine comes from a plugin through the hook ``pytest_exam_grading_engine`` (hookspecs.py), asked once per
grading set-up (grading/setup.py) with the options and the grader's recipe (graders/registry.py: ``GraderRecipe``);
no plugin answering leaves the misses to the pass itself (the ``local`` engine).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from exam_harness.core.models import Grade, GradeFailure, GradingRequest
from exam_harness.graders.base import Grader
from exam_harness.llm.cost import TokenUsage


@dataclass(frozen=True)
class EngineBatch:
    """Results of some of the misses: ``(cache key, grade or failure)`` each."""

    results: Sequence[tuple[str, Grade | GradeFailure]]
    # the tokens and calls the engine's graders spent on them, retries included (none for a grader without)
    usage: TokenUsage = field(default_factory=TokenUsage)
    # why grading must stop after this batch (a worker's grader said so: its server went away), or None
    stop: str | None = None


class EngineStopped(Exception):
    """The engine cannot go on (its cluster went away, a worker kept dying): the pairs it gave no result for are
    left ungraded and the pass stops as for a dead server (exit status 75; a rerun grades only those)."""


class Engine(Protocol):
    """Grades a pass's misses elsewhere. ``check`` refuses, before anything is graded, a grader the engine cannot
    serve (ConfigError, naming why); ``grade`` yields results as they come and raises :class:`EngineStopped` when
    it cannot go on; ``close`` releases what the engine started."""

    @property
    def name(self) -> str: ...

    def check(self, grader: Grader) -> None: ...

    def grade(self, todo: Sequence[tuple[str, GradingRequest]], *, chunk_size: int) -> Iterator[EngineBatch]: ...

    def close(self) -> None: ...
