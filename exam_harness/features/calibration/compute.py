"""The calibration section's content from the team's labels, the judges and the scored exam
(docs/calibration.md): which labels each part uses, every judge's figures, the judges' agreement with each
other, the corrected scores.

The judges' figures use the file's sample of pairs (the one holding most labels, when several), else its sample
of test points (each test point's pairs together), else every label with weight 1 (labels of no sample: their
figures describe those pairs). The corrected scores use the sample of test points, else that of pairs; labels of
no sample correct no score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from exam_harness.analysis.label_file import Sample, TeamLabel, labels_of, samples_of
from exam_harness.analysis.label_judges import Judges
from exam_harness.analysis.label_sample import JudgeGrades
from exam_harness.features.calibration.estimators import Design, Estimate
from exam_harness.features.calibration.judges import JudgeFigures, judge_figures, verdict_kappa
from exam_harness.features.calibration.model import (
    Between,
    Calibration,
    CorrectedRun,
    CorrectedScores,
    DesignInfo,
    Figures,
    Interval,
    JudgeCalibration,
    Split,
    Stratum,
)
from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringInput
from exam_harness.measures.result import ExamResult

if TYPE_CHECKING:
    from exam_harness.features.calibration.inputs import TeamLabelInput
    from exam_harness.results.scored import Scored

NO_SAMPLE = "no sample"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _interval(estimate: Estimate) -> Interval:
    return Interval(value=_finite(estimate.value), low=_finite(estimate.low), high=_finite(estimate.high))


def _figures(found: JudgeFigures) -> Figures:
    return Figures(pairs=found.pairs, base_rate=_interval(found.base_rate), tpr=_interval(found.tpr),
                   tnr=_interval(found.tnr), precision=_interval(found.precision), kappa=_interval(found.kappa))


def _largest(samples: Sequence[Sample], unit: str) -> Sample | None:
    chosen = [s for s in samples if s.unit == unit]
    return max(chosen, key=lambda s: (s.labelled, s.id)) if chosen else None


def _info(sample: Sample | None, labels: Sequence[TeamLabel]) -> DesignInfo:
    if sample is None:
        return DesignInfo(sample=None, unit="pair", labelled=len(labels), population=None)
    counts: dict[str, int] = {}
    for stratum, _ in sample.units.values():
        counts[stratum] = counts.get(stratum, 0) + 1
    return DesignInfo(sample=sample.id, unit=sample.unit, labelled=sample.labelled, population=sample.population,
                      strata=[Stratum(name=name, size=size, labelled=counts.get(name, 0))
                              for name, size in sample.sizes.items()])


class _Rows:
    """The labelled pairs a design gives, each with its unit's row in the design."""

    def __init__(self, sample: Sample | None, labels: Sequence[TeamLabel]) -> None:
        if sample is None:
            self.pairs = list(labels)
            self.unit_of = np.arange(len(labels))
            self.design = Design.of([NO_SAMPLE] * len(labels), None)
            return
        self.pairs, unit_of, strata = [], [], []
        for row, (stratum, held) in enumerate(sample.units.values()):
            strata.append(stratum)
            for label in held:
                self.pairs.append(label)
                unit_of.append(row)
        self.unit_of = np.asarray(unit_of, dtype=int)
        self.design = Design.of(strata, sample.sizes)

    def judged(self, judge: JudgeGrades) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The labels, the judge's verdicts (False where it gave no grade) and which pairs it graded."""
        grades = [judge.grades.get(label.pair) for label in self.pairs]
        labels = np.asarray([label.label for label in self.pairs], dtype=bool)
        verdicts = np.asarray([g is not None and g >= judge.min_grade for g in grades], dtype=bool)
        return labels, verdicts, np.asarray([g is not None for g in grades], dtype=bool)


def _splits(rows: _Rows, labels: np.ndarray, verdicts: np.ndarray, graded: np.ndarray, sample: Sample | None
            ) -> list[Split]:
    fields = {"kind": [label.kind for label in rows.pairs], "source": [label.source for label in rows.pairs]}
    if sample is not None:
        strata = list(sample.sizes)
        fields["stratum"] = [label.stratum for label in rows.pairs]
    out = []
    for name, values in fields.items():
        distinct = sorted({v for v in values if v is not None})
        if len(distinct) < 2 and not (name == "kind" and distinct):
            continue
        if name == "stratum":
            distinct = [s for s in strata if s in distinct]
        for value in distinct:
            domain = graded & np.asarray([v == value for v in values], dtype=bool)
            found = judge_figures(labels, verdicts, rows.unit_of, rows.design, domain=domain)
            out.append(Split(field=name, value=value, figures=_figures(found)))
    return out


def _between(judges: Sequence[JudgeGrades]) -> list[Between]:
    out = []
    for a, b in combinations(judges, 2):
        common = sorted(set(a.grades) & set(b.grades))
        va = np.asarray([a.grades[p] >= a.min_grade for p in common], dtype=float)
        vb = np.asarray([b.grades[p] >= b.min_grade for p in common], dtype=float)
        out.append(Between(a=a.name, b=b.name, pairs=len(common),
                           agreement=float(np.mean(va == vb)) if common else None,
                           kappa=verdict_kappa(va, vb)))
    return out


def judges_of(given: TeamLabelInput, scored: Scored) -> Judges:
    """The session's grader (its grades at the plan's minimum grade) and every judge the grade cache holds for the
    exam's pairs, read through the cache's API (none where the grades were replayed or kept in memory). The
    graders are rebuilt from the registry the front end filled (the built-in ones and every plugin's)."""
    from exam_harness.analysis.label_graders import labelled_requests
    from exam_harness.analysis.label_judges import cached_judges, session_judge
    from exam_harness.core.host import active_hook
    from exam_harness.graders.base import GraderConfig
    from exam_harness.graders.registry import default_registry

    grading, plan = scored.grading, scored.plan
    first = session_judge(plan.grader, grading.grades, plan.min_grade)
    if grading.source == "recorded" or given.cache is None:
        return Judges(first)
    registry = default_registry()
    active_hook().pytest_exam_register_graders(registry=registry)
    view = scored.view
    requests = labelled_requests([*grading.grades, *grading.failures], view.banks, view.data)
    return cached_judges(given.cache, registry, requests, first=first, session=plan.grader,
                         config=GraderConfig(model=given.model, options=dict(given.grader_options)), data=view.data)


def calibration(path: str, team: Sequence[TeamLabel], judges: Judges, *, exam: ScoringInput | None = None,
                result: ExamResult | None = None, measures: Sequence[Measure] = ()) -> Calibration:
    """The section's content from the labels of the file shown as ``path`` and the ``judges`` (the session's
    grader first); without ``exam`` and ``result`` no corrected score."""
    from exam_harness.features.calibration.corrected import corrected_measures
    from exam_harness.results.schema import MeasureInfo

    labels = list(team)
    samples = list(samples_of(labels).values())
    notes: list[str] = []
    chosen = _largest(samples, "pair") or _largest(samples, "test-point")
    outside = [label for label in labels if label.sample is None]
    if chosen is None:
        used = outside
    else:
        used = [label for s in [chosen] for _, held in s.units.values() for label in held]
        if outside:
            notes.append(f"{len(outside)} labels of no sample are left out of the judges' figures (they weigh "
                         f"nothing in sample {chosen.id})")
    unused = [s.id for s in samples if s is not chosen]
    rows = _Rows(chosen, used)
    judged = []
    members = set(judges.members)
    for i, judge in enumerate(judges.all):
        y, v, graded = rows.judged(judge)
        figures = judge_figures(y, v, rows.unit_of, rows.design, domain=graded)
        judged.append(JudgeCalibration(judge=judge.name, min_grade=judge.min_grade, first=i == 0,
                                       member=judge.name in members, figures=_figures(figures),
                                       splits=_splits(rows, y, v, graded, chosen)))
    notes += [f"not calibrated: {line}" for line in judges.unprobed]
    content = Calibration(labels=path, pairs=len(labels_of(labels)), design=_info(chosen, used),
                          judges=judged, between=_between(judges.all), notes=notes)
    if exam is None or result is None:
        return content
    scoring = _largest(samples, "test-point") or _largest(samples, "pair")
    if scoring is None:
        content.notes.append("no corrected scores: the labels are no sample (label with exam-harness label, which "
                             "draws one)")
        return content
    unused = [s for s in unused if s != scoring.id]
    found, problem = corrected_measures(exam, result, measures, scoring, labels_of(labels))
    if problem is not None:
        content.notes.append(f"no corrected scores: {problem}")
        return content
    content.scores_design = _info(scoring, [])
    for corrected in found:
        info = MeasureInfo.of(corrected.measure)
        content.corrected.append(CorrectedScores(
            measure=info.name, key=corrected.measure.key, title=info.title, min_grade=info.min_grade,
            units=corrected.units, missing=corrected.missing,
            runs={run: CorrectedRun(raw=raw, corrected=_finite(e.value), low=_finite(e.low), high=_finite(e.high))
                  for run, (raw, e) in corrected.runs.items()}))
    if unused:
        content.notes.append(f"samples not used: {', '.join(unused)}")
    return content
