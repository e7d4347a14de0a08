"""Cut points of a reranker grader (``cross-encoder``, ``monot5``) fitted on a team's labels: the file
``exam-harness calibrate --team-labels FILE --fit-cut-points OUT`` writes and the option ``cut_points_file``
reads (docs/graders.md, "Judge ladder").

A reranker's grade is where its probability falls among 5 cut points (graders/rerankers.py). The fit chooses
the probability where the minimum grade begins by Cohen's kappa against the labels; the other cut points
keep the support model's spacing in logits around it (:func:`exam_harness.analysis.support_fit.cut_points_around`).
The file names what it was fitted on; that name is part of the grader's spec, so every output that shows
the spec names it, and grades made under other cut points are never taken for these.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam_harness.core.errors import ConfigError, InputError

_PROBABILITY = re.compile(r"relevant with probability (\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class FittedCutPoints:
    grader: str  # the grader they were fitted for: cross-encoder or monot5
    model: str  # the model whose probabilities they cut
    cut_points: tuple[float, ...]
    min_grade: int
    fitted_on: str  # what they were fitted on, named in every output (the grader's spec)

    def to_json(self) -> dict[str, Any]:
        return {"grader": self.grader, "model": self.model, "cut_points": list(self.cut_points),
                "min_grade": self.min_grade, "fitted_on": self.fitted_on}


def probability_of_reason(text: str | None) -> float | None:
    """The probability a reranker grade's reason states (``relevant with probability 0.8808``), else None."""
    found = _PROBABILITY.search(text or "")
    return float(found.group(1)) if found else None


def read_fitted_cut_points(path: Path) -> FittedCutPoints:
    """The file :meth:`FittedCutPoints.to_json` wrote; a ConfigError names the file and the field that is wrong."""
    from exam_harness.io.textio import read_json_file  # bounded and checked as every JSON input

    try:
        _, raw = read_json_file(path)
    except InputError as exc:
        raise ConfigError(f"cannot read the fitted cut points: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: fitted cut points are a JSON object")

    def bad(field: str, expected: str) -> ConfigError:
        return ConfigError(f"{path}: field {field!r} must be {expected}")

    for field in ("grader", "model", "fitted_on"):
        if not isinstance(raw.get(field), str) or not raw[field]:
            raise bad(field, "a non-empty string")
    cuts = raw.get("cut_points")
    if not (isinstance(cuts, list) and len(cuts) == 5
            and all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in cuts)
            and cuts == sorted(cuts)):
        raise bad("cut_points", "5 increasing finite numbers (where grades 1..5 begin)")
    min_grade = raw.get("min_grade")
    if not (isinstance(min_grade, int) and not isinstance(min_grade, bool) and 1 <= min_grade <= 5):
        raise bad("min_grade", "an integer 1..5")
    return FittedCutPoints(raw["grader"], raw["model"], tuple(float(c) for c in cuts), min_grade, raw["fitted_on"])
