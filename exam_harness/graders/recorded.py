"""Replays published grades (Workbench ``exam_grades``) instead of asking a model.

Grades come from the Workbench paragraph files among the runs. When a file holds several grading
runs, choose one with the grader options ``llm=`` and ``prompt_class=``; a pair without a recorded
grade is a grading error, never a guessed grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_kinds import recorded_scale
from exam_harness.core.models import Grade, GraderSpec, RecordedGrade
from exam_harness.graders.base import (
    GradeFailure,
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)

VERSION = "1"


class RecordedGrader(Grader):
    name = "recorded"
    options = (
        GraderOption("llm", None, "model of the grading run to replay (default: --exam-model, else the only one in "
                     "the files)"),
        GraderOption("prompt_class", None, "prompt class of the grading run to replay (default: the only one in "
                     "the files)"),
    )

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        self.llm: str | None = values["llm"] or config.model
        self.prompt_class: str | None = values["prompt_class"]
        self.recorded = config.data.recorded if config.data is not None else {}
        if not self.recorded and (self.llm is None or self.prompt_class is None):
            raise ConfigError(
                "grader 'recorded' replays Workbench exam_grades, but no loaded run file has any; "
                "add a graded Workbench paragraph file to the runs, name grades imported into the cache with "
                "--exam-grader-option llm=... --exam-grader-option prompt_class=..., or choose another grader "
                "(--exam-grader NAME; exam-harness evaluate: --grader NAME, e.g. --grader embedding)"
            )
        if self.recorded and (self.llm is None or self.prompt_class is None):
            # One grading run in the data: take its identity, so grades match those imported into a cache.
            runs = {(g.llm, g.prompt_class) for grades in self.recorded.values() for g in grades}
            matching = {r for r in runs if (self.llm in (None, r[0])) and (self.prompt_class in (None, r[1]))}
            if len(matching) == 1:
                self.llm, self.prompt_class = next(iter(matching))

    def spec(self) -> GraderSpec:
        max_grade, tau = recorded_scale(self.prompt_class)
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.llm,
            prompt_class=self.prompt_class,
            max_grade=max_grade,
            default_min_grade=tau,
        )

    def uses_cache(self) -> bool:
        # Replaying a loaded paragraph file is a lookup; without one, grades come from an imported cache.
        return not self.recorded

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        return {"passage_id": request.passage.id, "test_point_id": request.test_point.id}

    def _choose(self, candidates: list[RecordedGrade]) -> RecordedGrade | str:
        chosen = [
            c
            for c in candidates
            if (self.llm is None or c.llm == self.llm)
            and (self.prompt_class is None or c.prompt_class == self.prompt_class)
        ]
        if not chosen:
            return "no recorded grade matches " + ", ".join(
                f"{k}={v}" for k, v in (("llm", self.llm), ("prompt_class", self.prompt_class)) if v
            )
        kinds = {(c.llm, c.prompt_class) for c in chosen}
        if len(kinds) > 1:
            listed = "; ".join(f"llm={llm} prompt_class={pc}" for llm, pc in sorted(kinds, key=str))
            return f"several recorded grading runs ({listed}); choose one with --exam-grader-option prompt_class=..."
        return chosen[0]

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        results: list[GradeResult] = []
        for request in requests:
            candidates = self.recorded.get((request.passage.id, request.test_point.id))
            if not candidates:
                missing = f"no recorded grade for passage {request.passage.id} on {request.test_point.id}"
                results.append(GradeFailure(missing))
                continue
            chosen = self._choose(candidates)
            if isinstance(chosen, str):
                results.append(GradeFailure(chosen))
                continue
            results.append(
                Grade(
                    grade=chosen.grade,
                    grader=self.name,
                    raw_response=chosen.answer,
                    extracted_answer=chosen.answer,
                    details={"llm": chosen.llm, "prompt_class": chosen.prompt_class},
                )
            )
        return results
