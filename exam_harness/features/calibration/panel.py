"""The ``panel`` grader: several registered judges grade each pair, and an aggregation of their verdicts is the
panel's grade (docs/calibration.md, "Panels").

``--exam-grader panel --exam-grader-option members=openai,openai,embedding --exam-grader-option
"member_options=model=m1;base_url=http://a/v1|model=m2;base_url=http://b/v1|"``: the members by name, their
options as ``key=value;key=value`` groups separated by ``|`` in the members' order (``model`` is the member's
model; a member given none takes ``--exam-model``). Aggregations (option ``aggregate``), each member's verdict
being its grade >= its minimum grade (option ``min_grades``, default each member's own):

- ``majority`` (default): more than half the members pass the pair;
- ``unanimous``: every member passes it;
- ``weighted``: the weighted mean of the members' grades, each over its top grade (option ``weights``, default
  1 each), is at least ``threshold`` (default 0.5): a confident member outweighs an unsure one.

The panel's grade is 1 (passes) or 0; its reason names each member's grade. Each member grades through the grade
cache as itself, under its own cache key: a member reused alone, or in another panel, finds its grades there,
and the calibration section measures each member against the team's labels and against the others
(features/calibration/judges.py). A pair a member could not grade is one the panel could not grade. The members'
tokens are not the panel's cost section's: each member's grades carry them in the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from exam_harness.config.options import choice, number, optional
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, GraderSpec, TestPoint
from exam_harness.graders.base import (
    GradeFailure,
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.graders.cascade import parse_sub_options

VERSION = "1"
AGGREGATIONS = ("majority", "unanimous", "weighted")
Pair = tuple[str, str]


def _names(raw: str) -> list[str]:
    names = [part.strip() for part in raw.split(",") if part.strip()]
    if len(names) < 2:
        raise ValueError("must name at least two graders, separated by commas")
    return names


def _groups(raw: str) -> list[dict[str, str]]:
    """``k=v;k=v|k=v`` -> one dict per member (an empty group: no options), each as the cascade reads its
    judges' options."""
    return [parse_sub_options(group) for group in raw.split("|")]


def _numbers(raw: str) -> list[float]:
    try:
        values = [float(part) for part in raw.split(",")]
    except ValueError:
        raise ValueError("must be numbers separated by commas") from None
    if any(not v >= 0 for v in values) or not any(values):
        raise ValueError("must be numbers >= 0, not all 0")
    return values


def _grades(raw: str) -> list[int]:
    try:
        return [int(part) for part in raw.split(",")]
    except ValueError:
        raise ValueError("must be whole grades separated by commas") from None


class PanelGrader(Grader):
    name = "panel"
    options = (
        GraderOption("members", None, "the member graders by name, separated by commas, e.g. openai,openai,embedding "
                     "(required: no default)", optional(_names)),
        GraderOption("member_options", None, "each member's options as key=value;key=value, members separated by '|' "
                     "in their order; 'model' is the member's model (default: none)", optional(_groups)),
        GraderOption("aggregate", "majority", "majority (more than half the members pass), unanimous (all pass) or "
                     "weighted (the weighted mean of grade / top grade reaches threshold) (default: majority)",
                     choice(*AGGREGATIONS)),
        GraderOption("weights", None, "weighted: each member's weight, separated by commas (default: 1 each)",
                     optional(_numbers)),
        GraderOption("threshold", 0.5, "weighted: the weighted mean a pass needs, 0..1 (default: 0.5)", number(0, 1)),
        GraderOption("min_grades", None, "each member's minimum grade of a pass, separated by commas (default: each "
                     "member's own)", optional(_grades)),
    )

    def __init__(self, config: GraderConfig) -> None:
        values = read_grader_options(self.name, self.options, config.options)
        names: list[str] | None = values["members"]
        if not names:
            raise ConfigError("grader 'panel' needs its members: --exam-grader-option members=openai,embedding (any "
                              "registered graders, at least two)")
        if self.name in names:
            raise ConfigError("grader 'panel': a member cannot be a panel")
        groups: list[dict[str, str]] = values["member_options"] or []
        if len(groups) > len(names):
            raise ConfigError(f"grader 'panel': member_options holds {len(groups)} groups for {len(names)} members")
        registry = config.registry
        if registry is None:
            from exam_harness.graders.registry import default_registry

            registry = default_registry()
        self.members: list[Grader] = []
        try:
            for i, member in enumerate(names):
                options = dict(groups[i]) if i < len(groups) else {}
                model = options.pop("model", None) or config.model
                self.members.append(registry.create(member, replace(config, model=model, options=options)))
        except BaseException:
            self.close()
            raise
        self.aggregate: str = values["aggregate"]
        self.weights: list[float] = values["weights"] or [1.0] * len(names)
        specs = [m.spec() for m in self.members]
        self.min_grades: list[int] = values["min_grades"] or [s.default_min_grade for s in specs]
        for what, given in (("weights", self.weights), ("min_grades", self.min_grades)):
            if len(given) != len(names):
                raise ConfigError(f"grader 'panel': {what} gives {len(given)} values for {len(names)} members")
        for spec, tau in zip(specs, self.min_grades):
            if not 1 <= tau <= spec.max_grade:
                raise ConfigError(f"grader 'panel': member {spec.name}'s minimum grade {tau} is outside "
                                  f"1..{spec.max_grade}")
        self.threshold: float = values["threshold"]
        self.cache_path: Path | None = config.cache
        self._cache: Any = None  # the grade cache the members grade through, opened on first use
        self._grades: list[dict[Pair, int]] = [{} for _ in self.members]
        self._failures: list[dict[Pair, str]] = [{} for _ in self.members]

    # --- identity -------------------------------------------------------------------------------------------
    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version=VERSION, options={
            "members": [m.spec().fingerprint() for m in self.members], "aggregate": self.aggregate,
            "weights": self.weights, "threshold": self.threshold, "min_grades": self.min_grades},
            max_grade=1, default_min_grade=1)

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for member in self.members:
            merged.update(member.cache_payload(request))
        return merged

    def supports(self, test_point: TestPoint) -> str | None:
        for member in self.members:
            reason = member.supports(test_point)
            if reason is not None:
                return f"panel member {member.name}: {reason}"
        return None

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int] | None:
        found = [e for m in self.members if (e := m.estimate(requests)) is not None]
        return (sum(e[0] for e in found), sum(e[1] for e in found)) if found else None

    def probe(self) -> None:
        for member in self.members:
            member.probe()

    def stop_reason(self) -> str | None:
        return next((why for m in self.members if (why := m.stop_reason()) is not None), None)

    def close(self) -> None:
        for member in getattr(self, "members", []):
            member.close()
        if getattr(self, "_cache", None) is not None:
            self._cache.close()
            self._cache = None

    # --- grading --------------------------------------------------------------------------------------------
    def _store(self) -> Any:
        if self._cache is None:
            from exam_harness.grading.cache import GradeCache

            self._cache = GradeCache(self.cache_path)
        return self._cache

    def _grade_members(self, requests: Sequence[GradingRequest]) -> None:
        """Each member's grades of ``requests`` it has not given yet, through the cache under its own keys."""
        from exam_harness.grading.passes import chunk_size_for, run_grading_pass

        for i, member in enumerate(self.members):
            todo = [r for r in requests if (r.passage.id, r.test_point.id) not in self._grades[i]
                    and (r.passage.id, r.test_point.id) not in self._failures[i]]
            if not todo:
                continue
            outcome = run_grading_pass(member, todo, self._store(), chunk_size=chunk_size_for(member, None))
            self._grades[i].update(outcome.grades)
            self._failures[i].update(outcome.failures)

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        self._grade_members(requests)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        self._grade_members(requests)
        return [self._verdict((r.passage.id, r.test_point.id)) for r in requests]

    def _verdict(self, pair: Pair) -> GradeResult:
        grades = []
        for i, member in enumerate(self.members):
            if pair in self._failures[i]:
                return GradeFailure(f"panel member {member.name}: {self._failures[i][pair]}")
            if pair not in self._grades[i]:
                return GradeFailure(f"panel member {member.name} returned no grade")
            grades.append(self._grades[i][pair])
        passes = [g >= tau for g, tau in zip(grades, self.min_grades)]
        if self.aggregate == "unanimous":
            passed, said = all(passes), f"{sum(passes)} of {len(passes)} members pass, all needed"
        elif self.aggregate == "majority":
            passed, said = 2 * sum(passes) > len(passes), f"{sum(passes)} of {len(passes)} members pass"
        else:
            tops = [m.spec().max_grade for m in self.members]
            share = sum(w * g / top for w, g, top in zip(self.weights, grades, tops)) / sum(self.weights)
            passed, said = share >= self.threshold, f"weighted mean {share:.3f}, {self.threshold:g} needed"
        members = ", ".join(f"{m.name} {g} {'>=' if ok else '<'} {tau}"
                            for m, g, ok, tau in zip(self.members, grades, passes, self.min_grades))
        return Grade(grade=int(passed), grader=self.name, raw_response=f"panel {self.aggregate}: {said} ({members})",
                     details={"members": grades, "passes": sum(passes)})
