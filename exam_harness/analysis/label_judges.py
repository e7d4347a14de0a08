"""The judges a team calibrates against its labels (docs/calibration.md): the session's grader, the members of a
grader made of graders (a panel's: its spec's options list ``members``), and every other grader whose grades the
grade cache holds for the exam's pairs, read through the cache's API (nothing is graded).

Members are rebuilt from the session grader's own options, so their cached grades are found under the options
they graded with (a member's cache key is its own); every other grader the cache names is found as
analysis/label_graders.py finds it, with the reason where it cannot be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from exam_harness.analysis.label_file import Pair
from exam_harness.analysis.label_sample import JudgeGrades
from exam_harness.core.models import ExamData, GraderSpec
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry


@dataclass
class Judges:
    """The first judge (the session's grader) and the others, each with its grades of the pairs looked up."""

    first: JudgeGrades
    others: list[JudgeGrades] = field(default_factory=list)
    members: list[str] = field(default_factory=list)  # the names among ``others`` of the first judge's members
    unprobed: list[str] = field(default_factory=list)  # "grader (model): why its grades were not looked up"

    @property
    def all(self) -> list[JudgeGrades]:
        return [self.first, *self.others]


def judge_name(name: str, model: str | None, prompt: str | None) -> str:
    said = ", ".join(part for part in (model, f"prompt {prompt}" if prompt else None) if part)
    return f"{name} ({said})" if said else name


def session_judge(spec: GraderSpec, grades: Mapping[Pair, int], min_grade: int) -> JudgeGrades:
    return JudgeGrades(judge_name(spec.name, spec.model, spec.prompt_class), dict(grades), min_grade)


def cached_judges(cache: Path | None, registry: GraderRegistry, requests: Mapping[Pair, GradingRequest], *,
                  first: JudgeGrades, session: GraderSpec, config: GraderConfig, data: ExamData | None) -> Judges:
    """``first`` and every judge whose grades the cache at ``cache`` holds for ``requests`` (a panel session's
    members first). No cache file (grades in memory only) holds no other judge."""
    from exam_harness.analysis.label_graders import cached_concordance, cached_grades
    from exam_harness.grading.cache import GradeCache

    found = Judges(first)
    if cache is None or not Path(cache).exists():
        return found
    store = GradeCache(cache)
    try:
        known: list[str] = []
        if "members" in session.options:  # a grader made of graders: its members are judges of their own
            panel = registry.create(session.name, replace(config, data=data, dry_run=True, registry=registry))
            try:
                members = getattr(panel, "members", ())
                for member, tau in zip(members, getattr(panel, "min_grades", [m.spec().default_min_grade
                                                                               for m in members])):
                    spec = member.spec()
                    known.append(spec.fingerprint())
                    name = judge_name(spec.name, spec.model, spec.prompt_class)
                    if any(j.name == name for j in found.others):
                        name += f" #{len(found.others) + 1}"
                    found.others.append(JudgeGrades(name, cached_grades(member, requests, store), int(tau)))
                    found.members.append(name)
            finally:
                panel.close()
        rows = cached_concordance(store, registry, requests, {}, data=data, session=session, session_config=config,
                                known=known)
    finally:
        store.close()
    found.others += [JudgeGrades(judge_name(r.grader, r.model, r.prompt), r.grades, r.min_grade) for r in rows.rows]
    found.unprobed = list(rows.unprobed)
    return found
