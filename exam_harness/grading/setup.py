"""Setting up a grading pass, the same for the pytest plugin and every subcommand that grades.

Create the grader named by the options, make the plan from its spec, pool the pairs to grade and pick
the chunk size: :func:`open_grading` does the first two and :class:`GradingSetup` the rest, so that
``pytest``, ``exam-harness evaluate``/``grades`` and ``analyze edit-impact`` grade the same pairs in the
same chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from exam_harness.config.options import ExamOptions
from exam_harness.core.models import ExamData, QueryBank
from exam_harness.core.progress import GradingProgress
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import ExamPlan, make_plan
from exam_harness.graders.base import Grader, GraderConfig, GradingRequest
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome, chunk_size_for, exam_requests, grade_banks

if TYPE_CHECKING:
    from exam_harness.core.registry import Registry
    from exam_harness.graders.registry import GraderRegistry
    from exam_harness.measures.base import Measure


class GradingRegistries(Protocol):
    """What grading reads of the plugin host's registries (``extensions.Registries`` has them): declared
    by shape, as the plugin host stands above grading."""

    @property
    def graders(self) -> GraderRegistry: ...

    @property
    def measures(self) -> Registry[type[Measure]]: ...


@dataclass
class GradingSetup:
    """The grader (closed by :meth:`close` or on leaving a ``with`` block), the plan made from its spec,
    and the pairs per grader call."""

    grader: Grader
    plan: ExamPlan
    chunk_size: int

    def requests(
        self, data: ExamData, banks: Sequence[QueryBank], *, only_queries: set[str] | None = None
    ) -> list[GradingRequest]:
        """The pool pairs of ``banks``: every run's top-k under the plan, plus the judged passages under
        the ``judged`` pool."""
        return exam_requests(data, banks, k=self.plan.k, pool=self.plan.pool, only_queries=only_queries)

    def grade(
        self, data: ExamData, banks: Sequence[QueryBank], cache: GradeCache, *,
        progress: GradingProgress | None = None, only_queries: set[str] | None = None,
    ) -> tuple[ExamView, GradingOutcome]:
        """Grade the pool pairs of ``banks`` through ``cache`` in chunks of :attr:`chunk_size`."""
        return grade_banks(data, banks, self.grader, cache, k=self.plan.k, pool=self.plan.pool,
                           chunk_size=self.chunk_size, progress=progress, only_queries=only_queries)

    def close(self) -> None:
        self.grader.close()

    def __enter__(self) -> GradingSetup:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_grading(
    options: ExamOptions, registries: GradingRegistries, data: ExamData, *, where: str = "--exam-min-grade",
    several: bool = False, alpha_ndcg: bool | None = None,
) -> GradingSetup:
    """The grader of ``options.grader`` (from ``registries``, with the options' model, grader options,
    batch size, device and dry run) and the plan for its spec (``where``, ``several`` and ``alpha_ndcg`` as
    :func:`exam_harness.exam.plan.make_plan` takes them). The grader is closed when the plan cannot be made."""
    grader = registries.graders.create(
        options.grader,
        GraderConfig(model=options.model, options=options.grader_options, data=data, batch_size=options.batch_size,
                     device=options.device, dry_run=options.dry_run, cache=options.cache),
    )
    try:
        plan = make_plan(options, grader.spec(), where=where, several=several, alpha_ndcg=alpha_ndcg,
                         registry=registries.measures)
    except BaseException:
        grader.close()
        raise
    return GradingSetup(grader, plan, chunk_size_for(grader, options.batch_size))
