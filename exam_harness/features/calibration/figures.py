"""The calibration feature's gate figures: a run's score corrected by the team's labels, gated by name within
the threshold syntax of ``--exam-fail-under`` and ``exam-harness verdict --fail-under`` (config/gates.py):
``[RUN=]exam-cover.corrected:0.6`` (the corrected estimate) or ``exam-cover.corrected-low:0.6`` (the low end of
its 95% interval: the run passes only where the labels make it at least 0.6 with 95% confidence); the same for
``n-exam-cover`` and ``nugget-f``. Each reads the calibration section's first corrected measure of its family (the
document's first: its k, its tau; evaluate's first tau). A document without that corrected score fails the gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exam_harness.features.calibration.inputs import NAME

FAMILIES = (("exam-cover", "EXAM-Cover"), ("n-exam-cover", "n-EXAM"), ("nugget-f", "nugget-F"))


def _corrected(content: Any, family: str) -> Any:
    """The section's first corrected measure of ``family`` (content typed or as read), None where it has none."""
    entries = getattr(content, "corrected", None)
    if entries is None and isinstance(content, dict):
        entries = content.get("corrected", [])
    for entry in entries or []:
        key = entry.key if hasattr(entry, "key") else entry.get("key", "")
        if key == family or key.startswith(family + "@"):
            return entry
    return None


@dataclass
class CorrectedFigure:
    name: str
    title: str
    family: str
    low: bool  # the low end of the 95% interval, else the estimate
    section: str = NAME
    lower_is_better: bool = False

    def value(self, content: Any, run: str) -> float | None:
        entry = _corrected(content, self.family)
        if entry is None:
            return None
        runs = entry.runs if hasattr(entry, "runs") else entry.get("runs", {})
        found = runs.get(run)
        if found is None:
            return None
        value = (found.low if self.low else found.corrected) if hasattr(found, "corrected") else \
            found.get("low" if self.low else "corrected")
        return None if value is None else float(value)


FIGURES = [CorrectedFigure(f"{family}.corrected{'-low' if low else ''}",
                           f"{title} corrected by the team's labels" + (" (the low end of its 95% interval)" if low
                                                                        else ""), family, low)
           for family, title in FAMILIES for low in (False, True)]
