"""The batch-first grader interface every grader implements, built-in or from a plugin.

A grader receives whole batches of (query, test point, passage) requests and answers each with a
:class:`~exam_harness.core.models.Grade` or a :class:`GradeFailure`. Failures are reported and never
stored as grades. Everything that shapes a grade goes into :meth:`Grader.spec` and
:meth:`Grader.cache_payload`, which together form the grade-cache key.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from exam_harness.config.options import (  # the option machinery, declared with the other option converters
    GraderOption as GraderOption,
)
from exam_harness.config.options import check_options as check_options
from exam_harness.config.options import declared_options as declared_options
from exam_harness.config.options import option_field as option_field
from exam_harness.config.options import options_of as options_of
from exam_harness.config.options import read_grader_options as read_grader_options
from exam_harness.config.options import shared_option as shared_option
from exam_harness.core.models import ExamData, Grade, GraderSpec, TestPoint
from exam_harness.core.models import GradeFailure as GradeFailure  # declared below the llm backends that return it
from exam_harness.core.models import GradingRequest as GradingRequest  # the llm layer counts and meters them

if TYPE_CHECKING:
    from exam_harness.llm.cost import Meter


GradeResult = Grade | GradeFailure


@dataclass
class GraderConfig:
    """What a grader factory is given: the user's grader options and the loaded exam data."""

    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    data: ExamData | None = None
    batch_size: int | None = None
    device: str | None = None
    dry_run: bool = False  # the session only counts what grading would spend: nothing is sent, no key needed
    # the registry the grader was created from (a GraderRegistry), for a grader made of graders (cascade)
    registry: Any = None
    # the session's grade cache file (None: in memory), for a grader whose parts grade through it as themselves
    # (a panel's members)
    cache: Path | None = None


class Grader(abc.ABC):
    """Base class of graders. Subclasses set ``name`` and implement :meth:`spec` and :meth:`grade_batch`.

    ``options`` declares what ``--exam-grader-option KEY=VALUE`` accepts (see :class:`GraderOption`).

    The attributes and methods below are everything the grading pass (``grading/passes.py``, ``grading/setup.py``)
    asks of a grader besides grading, each with the answer of a grader that lacks the capability; a
    grader that has it sets or overrides it.
    """

    name: str = ""
    options: ClassVar[tuple[GraderOption, ...]] = ()
    chunk_size: int | None = None  # pairs per call it prefers when --batch-size is not given; None: the default
    repeats: int = 1  # samples asked per pair (graders/repeats.py)
    reducer: str = "auto"  # how a pair's samples make its grade (graders/repeats.py; auto: majority for a 0/5 judge)
    meter: Meter | None = None  # an LLM grader's token and cost counter (llm/cost.py)

    def sampling(self, index: int) -> AbstractContextManager[None]:
        """The context in which sample ``index`` of a grader with repeats is asked (an LLM grader moves
        its backend's seed by ``index``); by default, nothing changes."""
        return nullcontext()

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int] | None:
        """Dry-run figures ``(calls, prompt_tokens)`` for grading ``requests``, nothing sent; None for a
        grader that sends no prompts."""
        return None

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

    def call_key(self, request: GradingRequest) -> Hashable | None:
        """The call that answers ``request`` where one call answers several pairs (the nugget-assignment
        prompts: one window of a passage's nuggets), else None. The grading pass keeps the pairs of one call
        in one batch, so a batch boundary never splits a call into two."""
        return None

    def probe(self) -> None:  # noqa: B027  (optional hook: only graders behind a server need it)
        """Check, before the first pair is graded, that grading can work at all (e.g. a server is
        reachable and serves the model); raise ConfigError naming what is wrong. Called only when some
        pair misses the cache."""

    def prepare(self, requests: Sequence[GradingRequest]) -> None:  # noqa: B027  (optional hook)
        """Share work across the batches of one grading pass. Called once per pass, after :meth:`probe`
        and before the first :meth:`grade_batch`, with every request the pass will grade (one per
        distinct cache key; pairs the cache holds are left out); not called when nothing is to grade.
        The embedding grader encodes each distinct text here, once, sorted by length.

        A grader must grade alike with and without it: ``grade_batch`` may still receive requests
        ``prepare`` never saw (a direct caller, a later pass). What it keeps belongs to this pass: a
        later call replaces it, :meth:`close` lets it go. An exception other than ConfigError or
        InputError is said once (a notice) and the pass goes on: the batches then do the work, and
        report any error per pair.
        """

    def decided_by(self, answer: str | None) -> str | None:
        """For a grader made of parts (the default ``embedding`` grader decides test points with gold
        answers by the answer key): which part decided the grade whose stored answer is ``answer``.
        None for a grader of one part."""
        return None

    def stop_reason(self) -> str | None:
        """Why the grading pass must stop after the current batch (e.g. the server went away), or None."""
        return None

    def pass_figures(self) -> dict[str, float] | None:
        """Figures of the last grading pass a grader made of judges states beside its grades (the cascade: what
        its filter cost and what its decider took, in seconds); None for most graders."""
        return None

    def close(self) -> None:  # noqa: B027  (optional hook: most graders hold nothing to release)
        """Release models, clients or threads. Called once at the end of the grading pass."""
