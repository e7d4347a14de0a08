"""What the scoring of an exam hands the document's builder and its sections: one object for both front ends.

The pytest session scores one tau (``--exam-min-grade``), ``exam-harness evaluate`` each of
``--min-grade``; a section computes its content from this alone, the same way under either front end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

if TYPE_CHECKING:
    from pathlib import Path

    from exam_harness.config.options import ExamOptions
    from exam_harness.core.models import QueryBank, Run
    from exam_harness.exam.inputs import ExamView
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.measures.base import Measure
    from exam_harness.measures.context import ScoringContext
    from exam_harness.measures.result import ExamResult
    from exam_harness.results.schema import ExamReport, TestPointOutcome


T = TypeVar("T")
ScoringFront = Literal["pytest", "evaluate"]  # who scores: the pytest session, or evaluate (and its library calls)


@dataclass(frozen=True)
class InputKey(Generic[T]):
    """The key of one scoring input a feature adds (as pytest's ``StashKey``): ``scored.input(KEY)`` is typed ``T``.
    ``name`` says whose it is in messages."""

    name: str


class ScoringInputs:
    """What features add beside the grades for their sections to read (hook ``pytest_exam_scoring_inputs``):
    ``set(KEY, value)`` once per key; :meth:`Scored.input` reads it back."""

    def __init__(self) -> None:
        self._values: dict[InputKey[Any], object] = {}

    def set(self, key: InputKey[T], value: T) -> None:
        if key in self._values:
            raise ValueError(f"scoring input {key.name!r} is set twice")
        self._values[key] = value

    def get(self, key: InputKey[T]) -> T | None:
        return cast("T | None", self._values.get(key))

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)


def collect_scoring_inputs(options: ExamOptions, front: ScoringFront, hook: Any = None) -> ScoringInputs:
    """Every feature's scoring inputs for ``options`` through ``hook`` (a pluggy hook relay; by default the active
    front end's, else the in-tree features': core/host.py)."""
    if hook is None:
        from exam_harness.core.host import active_hook

        hook = active_hook()
    inputs = ScoringInputs()
    hook.pytest_exam_scoring_inputs(options=options, front=front, inputs=inputs)
    return inputs


@dataclass(frozen=True)
class Scored:
    """An exam scored: the grades and the runs it read, the plan, the taus scored and every measure's result."""

    ctx: ScoringContext
    view: ExamView
    grading: GradingOutcome
    plan: ExamPlan
    taus: Sequence[int]
    result: ExamResult
    measures: Sequence[Measure] = ()  # the measures the document holds, in its order (results/scoring.py)
    redact_all: bool = False  # --exam-redact-all: every text left out, as for a secret bank
    # what only a pytest session knows (evaluate leaves them out, and the sections reading them with them)
    outcomes: Sequence[TestPointOutcome] = ()  # every run's verdict per test point
    # --exam-compare: the kept report's name and the report (the session's compare gates check against it too)
    reference: tuple[str, ExamReport] | None = None
    judge_model: str | None = None  # the judge's model, for the circularity guard
    run_folders: Sequence[Path] = ()  # where the runs (and what was recorded beside them) were read
    # what only evaluate is given (the pytest session leaves them None, and the sections reading them with them)
    official: Mapping[str, float] | None = None  # --official: run -> official score or rank
    min_answers: Sequence[int] | None = None  # evaluate's --min-answers m values (the judgments' views)
    # what features add for their sections (hook pytest_exam_scoring_inputs), read by :meth:`input`
    inputs: ScoringInputs = field(default_factory=ScoringInputs)

    def input(self, key: InputKey[T]) -> T | None:
        """The scoring input a feature set under ``key`` (None where it set none)."""
        return self.inputs.get(key)

    @property
    def banks(self) -> Sequence[QueryBank]:
        return self.view.banks

    @property
    def runs(self) -> Mapping[str, Run]:
        return self.view.data.runs

    def secret(self, bank: QueryBank) -> bool:
        """Whether ``bank``'s texts stay out of every output."""
        return bank.secret or self.redact_all

    def shown_id(self, bank: QueryBank, test_point: str) -> str:
        """The id the pytest case of ``test_point`` carries (models.readable_id), as outcomes show it."""
        from exam_harness.core.models import readable_id

        tp = next(t for t in bank.test_points if t.id == test_point)
        return readable_id(test_point, bank.query.id, None if self.secret(bank) else tp.text, tp.facet_id)

    def cover(self, tau: int) -> Mapping[str, Mapping[str, float]]:
        """EXAM-Cover at the plan's k and ``tau``, run -> query -> value (scored here if the plan did not)."""
        from exam_harness.measures.exam import ExamCover
        from exam_harness.measures.pipeline import score

        cover = ExamCover(k=self.plan.k, min_grade=tau)
        values = self.result[cover] if cover in self.result else score(self.ctx, [cover])[cover]
        return values.per_query
