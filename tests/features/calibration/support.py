"""What tests elsewhere share with the calibration panel's tests: a lenient and a strict grader."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from exam_harness.core.models import Grade, GraderSpec
from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest


class Judge(Grader):
    """A fake judge reading its grade from the passage's text: ``truth=1 lenient=4 strict=3``."""

    asked: ClassVar[dict[str, int]] = {}

    def __init__(self, config: GraderConfig) -> None:
        self.config = config

    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version="1", default_min_grade=4)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        Judge.asked[self.name] = Judge.asked.get(self.name, 0) + len(requests)
        fields = [dict(part.split("=") for part in r.passage.text.split()[1:]) for r in requests]
        return [Grade(grade=int(f[self.name]), grader=self.name) for f in fields]


class Lenient(Judge):
    name = "lenient"  # passes a fifth of the non-answering pairs, at grade 4


class Strict(Judge):
    name = "strict"  # gives a third of the answering pairs 3, below its minimum grade
