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
from exam_harness.core.host import active_hook
from exam_harness.core.models import ExamData, QueryBank
from exam_harness.core.progress import GradingProgress
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import ExamPlan, make_plan
from exam_harness.graders.base import Grader, GraderConfig, GradingRequest
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.engines import Engine
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
    """The grader (closed by :meth:`close` or on leaving a ``with`` block, with the engine), the plan made from its
    spec, the pairs per grader call, the engine that grades the misses (None: this process) and whether the pairs a
    sharded cache lacks are graded (``--exam-grade-missing``) or refused."""

    grader: Grader
    plan: ExamPlan
    chunk_size: int
    engine: Engine | None = None
    grade_missing: bool = False

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
                           chunk_size=self.chunk_size, progress=progress, only_queries=only_queries,
                           engine=self.engine, grade_missing=self.grade_missing)

    def close(self) -> None:
        try:
            if self.engine is not None:
                self.engine.close()
        finally:
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
    recipe = registries.graders.recipe(
        options.grader,
        GraderConfig(model=options.model, options=options.grader_options, data=data, batch_size=options.batch_size,
                     device=options.device, dry_run=options.dry_run, cache=options.cache),
    )
    grader = recipe.build()
    engine: Engine | None = None
    try:
        plan = make_plan(options, grader.spec(), where=where, several=several, alpha_ndcg=alpha_ndcg,
                         registry=registries.measures)
        if not options.dry_run:  # a dry run grades nothing: no engine is started
            engine = active_hook().pytest_exam_grading_engine(options=options, grader=grader, recipe=recipe)
        if engine is not None:
            engine.check(grader)
    except BaseException:
        try:
            if engine is not None:
                engine.close()
        finally:
            grader.close()
        raise
    return GradingSetup(grader, plan, chunk_size_for(grader, options.batch_size), engine, options.grade_missing)
