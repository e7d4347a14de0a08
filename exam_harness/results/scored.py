"""What the scoring of an exam hands the document's builder and its sections: one object for both front ends.

The pytest session scores one tau (``--exam-min-grade``), ``exam-harness evaluate`` each of
``--min-grade``; a section computes its content from this alone, the same way under either front end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from exam_harness.grading import GradingOutcome
    from exam_harness.inputs import ExamView
    from exam_harness.measures.base import Measure
    from exam_harness.measures.context import ScoringContext
    from exam_harness.measures.result import ExamResult
    from exam_harness.models import QueryBank, Run
    from exam_harness.plan import ExamPlan
    from exam_harness.results.agreement import HumanLabels
    from exam_harness.results.evaluation import ExternalQrels
    from exam_harness.results.schema import ExamReport, TestPointOutcome
    from exam_harness.systems.health import LiveSystems


@dataclass(frozen=True)
class BaselineTest:
    """``--baseline``: every run compared with the baseline run per measure (``--significance`` test)."""

    baseline: str
    method: str
    alpha: float
    resamples: int
    seed: int


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
    systems: LiveSystems | None = None  # the declared live systems' health
    reference: tuple[str, ExamReport] | None = None  # --exam-compare: the kept report's name and the report
    judge_model: str | None = None  # the judge's model, for the circularity guard
    run_folders: Sequence[Path] = ()  # where the runs (and systems' manifests) were read
    # what only evaluate is given (the pytest session leaves them None, and the sections reading them with them)
    official: Mapping[str, float] | None = None  # --official: run -> official score or rank
    baseline: BaselineTest | None = None  # --baseline
    agreement: Sequence[int] | None = None  # the agreement with the judgments asked for: the --min-answers m values
    external: ExternalQrels | None = None  # --qrels / --official-qrels
    per_query: bool = False  # --per-query: the external qrels' leaderboards keep their per-query values
    human_assignments: HumanLabels | None = None  # --human-assignments
    # what a front end was given for a feature's section, by the feature's name (both front ends): the team's
    # labels of --exam-team-labels / --team-labels (exam_harness/features/calibration/inputs.py)
    given: Mapping[str, object] = field(default_factory=dict)

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
        from exam_harness.models import readable_id

        tp = next(t for t in bank.test_points if t.id == test_point)
        return readable_id(test_point, bank.query.id, None if self.secret(bank) else tp.text, tp.facet_id)

    def cover(self, tau: int) -> Mapping[str, Mapping[str, float]]:
        """EXAM-Cover at the plan's k and ``tau``, run -> query -> value (scored here if the plan did not)."""
        from exam_harness.measures.exam import ExamCover
        from exam_harness.measures.pipeline import score

        cover = ExamCover(k=self.plan.k, min_grade=tau)
        values = self.result[cover] if cover in self.result else score(self.ctx, [cover])[cover]
        return values.per_query
