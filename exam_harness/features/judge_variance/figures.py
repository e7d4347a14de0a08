"""The gate figure of a threshold's ``@MofK`` suffix (config/gates.py: ``HOLDING_FIGURE``), read from the
``judge-variance`` section at the document's tau: a run's EXAM-Cover counting a test point as covered only where
its case answers in at least M of the K samples (``cover_at_least[M - 1]``, section.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exam_harness.features.judge_variance.section import JudgeVariances

SECTION = "judge-variance"


@dataclass(frozen=True)
class HoldingCover:
    """EXAM-Cover with verdicts holding in M of K samples (the ``HoldingFigure`` protocol of config/gates.py)."""

    name: str = "exam-cover@MofK"
    title: str = "EXAM-Cover with verdicts holding in M of K samples"
    section: str = SECTION
    lower_is_better: bool = False

    def value(self, content: Any, run: str) -> float | None:
        """No value of its own: a threshold reads it through ``@MofK`` alone (:meth:`holding`)."""
        return None

    def holding(self, content: Any, tau: int, run: str, holds: tuple[int, int]) -> float | None:
        figures = content.at(tau) if isinstance(content, JudgeVariances) else None
        found = figures.run(run) if figures is not None and figures.repeats == holds[1] else None
        return found.cover_at_least[holds[0] - 1] if found is not None else None

    def samples(self, content: Any, tau: int) -> int | None:
        figures = content.at(tau) if isinstance(content, JudgeVariances) else None
        return figures.repeats if figures is not None else None


FIGURE = HoldingCover()
