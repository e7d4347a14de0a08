"""Project conftest: the example exam's configuration lives in pyproject.toml ([tool.pytest.ini_options]).

This file also shows how a team adds its own grader without packaging a plugin: implement the
``pytest_exam_register_graders`` hook. Try it with ``make exam PYTEST_ARGS='--exam-grader lexical'``.
"""

from __future__ import annotations

from collections.abc import Sequence

from exam_harness.core.models import Grade, GraderSpec
from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest
from exam_harness.graders.registry import GraderRegistry


class LexicalGrader(Grader):
    """Grade = how much of the test point's wording the passage contains (rapidfuzz token set ratio)."""

    name = "lexical"

    def __init__(self, config: GraderConfig) -> None:
        self.config = config

    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version="1", options={"scorer": "token_set_ratio"}, default_min_grade=3)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        from rapidfuzz import fuzz

        results: list[GradeResult] = []
        for request in requests:
            ratio = fuzz.partial_token_set_ratio(request.test_point.text.lower(), request.passage.text.lower())
            results.append(Grade(grade=min(5, int(ratio // 20)), grader=self.name, raw_response=f"{ratio:.1f}"))
        return results


def pytest_exam_register_graders(registry: GraderRegistry) -> None:
    registry.register("lexical", LexicalGrader, "example grader from conftest.py: rapidfuzz word overlap")
