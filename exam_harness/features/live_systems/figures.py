"""The gate figures of a declared live system's recording, read from the document's ``system-costs`` section
(costs.py): ``latency-p50`` and ``latency-p95`` (seconds), ``tokens`` and ``cost`` (summed over its queries),
where lower is better: ``--exam-fail-under [RUN=]NAME:LIMIT`` (``exam-harness verdict --fail-under``) fails a run
whose figure is above the limit. A threshold for every run gates the runs with a manifest (every run when none
has one: each fails, naming why)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from exam_harness.features.live_systems.costs import SystemCosts

SECTION = "system-costs"
# name -> how a check names it, in the order docs/ci.md lists them
TITLES: dict[str, str] = {"latency-p50": "latency p50 (s)", "latency-p95": "latency p95 (s)", "tokens": "tokens",
                          "cost": "cost"}


@dataclass(frozen=True)
class SystemFigure:
    """One figure of every run with a manifest (:meth:`SystemFigures.figure
    <exam_harness.features.live_systems.costs.SystemFigures.figure>` by name)."""

    name: str
    title: str
    section: str = SECTION
    lower_is_better: bool = True

    def value(self, content: Any, run: str) -> float | None:
        row = content.run(run) if isinstance(content, SystemCosts) else None
        return row.figure(self.name) if row is not None else None

    def runs(self, content: Any) -> Collection[str]:
        """The runs a threshold for every run gates: those with a manifest."""
        return [s.run for s in content.systems] if isinstance(content, SystemCosts) else []

    def missing_message(self, run: str, limit: float) -> str:
        return (f"FAIL run {run!r} records no {self.title} (no system manifest <run>.system.json beside the runs, "
                f"or no such figure in it), so it cannot meet its limit {limit:g}")


LATENCY_P50 = SystemFigure("latency-p50", TITLES["latency-p50"])
LATENCY_P95 = SystemFigure("latency-p95", TITLES["latency-p95"])
TOKENS = SystemFigure("tokens", TITLES["tokens"])
COST = SystemFigure("cost", TITLES["cost"])
