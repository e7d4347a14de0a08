"""Corrected scores of an exam (features/calibration/corrected.py): the judge's totals reproduce the document's
scores, labelling every unit gives the labels' own scores for EXAM-Cover, n-EXAM and nugget F, and a sample of
pairs corrects only what rests on one passage per test point."""

from __future__ import annotations

import random

import pytest

from exam_harness.analysis.label_design import sample_order, stratum_counts
from exam_harness.analysis.label_file import Sample, TeamLabel
from exam_harness.features.calibration.corrected import corrected_measures, unit_pairs
from exam_harness.measures.context import ScoringInput
from exam_harness.measures.exam import ExamCover, NExam, NuggetF
from exam_harness.measures.pipeline import score

MEASURES = [ExamCover(k=3, min_grade=4), NExam(k=3, min_grade=4, pool="top-k", empty="skip"),
            NuggetF(k=3, min_grade=4, beta=3.0)]


def _exam(seed: int = 0, *, depth: int = 3) -> tuple[ScoringInput, dict[tuple[str, str], bool]]:
    """Four queries of three test points (two of them nuggets), five runs ranking a pool of six passages each,
    a judge's 0..5 grades and labels that disagree with its verdicts on about a fifth of the pairs."""
    rng = random.Random(seed)
    queries = [f"q{i}" for i in range(4)]
    test_points = {q: [f"{q}/t{j}" for j in range(3)] for q in queries}
    rankings = {f"run{r}": {q: rng.sample([f"{q}-p{i}" for i in range(6)], depth) for q in queries} for r in range(5)}
    grades, labels = {}, {}
    for q in queries:
        for i in range(6):
            for t in test_points[q]:
                grade = rng.choice([0, 0, 0, 2, 4, 5])
                grades[(f"{q}-p{i}", t)] = grade
                labels[(f"{q}-p{i}", t)] = (grade >= 4) != (rng.random() < 0.2)
    nuggets = {q: {test_points[q][0]: 1.0, test_points[q][1]: 0.5} for q in queries}
    return ScoringInput(queries=queries, test_points=test_points, rankings=rankings, grades=grades,
                        nuggets=nuggets, passage_text=lambda pid: "word " * 40), labels


def _sample(exam: ScoringInput, labels: dict[tuple[str, str], bool], unit: str, size: int, seed: int = 0
            ) -> Sample:
    pairs_of = unit_pairs(exam, unit)
    strata = {u: ("answered" if any(exam.grades.get(p, 0) >= 4 for p in pairs) else "not") for u, pairs in
              pairs_of.items()}
    chosen = sample_order(strata, seed)[:size]
    counts = stratum_counts(strata, chosen)
    units = {u: (strata[u], tuple(TeamLabel("", p[1], p[0], labels[p], "s", unit, len(strata), strata[u],
                                            counts[strata[u]].size, counts[strata[u]].labelled,
                                            counts[strata[u]].inclusion) for p in pairs_of[u])) for u in chosen}
    return Sample("s", unit, len(strata), {s: c.size for s, c in counts.items()}, units)


def _truth(exam: ScoringInput, labels: dict[tuple[str, str], bool]) -> dict[str, dict[str, float]]:
    from dataclasses import replace

    truth = replace(exam, grades={p: 5 if v else 0 for p, v in labels.items()})
    return {str(m): dict(r.means) for m, r in zip(MEASURES, score(truth, MEASURES))}


def test_labelling_every_test_point_gives_the_labels_own_scores() -> None:
    exam, labels = _exam()
    result = score(exam, MEASURES)
    found, problem = corrected_measures(exam, result, MEASURES, _sample(exam, labels, "test-point", 12), labels)
    assert problem is None
    truth = _truth(exam, labels)
    for corrected in found:
        assert corrected.missing is None and corrected.units == 12
        for run, (raw, estimate) in corrected.runs.items():
            assert raw == pytest.approx(result[corrected.measure].means[run])
            assert estimate.value == pytest.approx(truth[str(corrected.measure)][run], abs=1e-9)
            assert estimate.low == pytest.approx(estimate.value) and estimate.high == pytest.approx(estimate.value)
    assert any(raw != pytest.approx(e.value) for c in found for raw, e in c.runs.values())  # the labels moved them


def test_a_sample_of_test_points_brackets_the_labels_exam_cover() -> None:
    exam, labels = _exam(3)
    result = score(exam, MEASURES)
    truth = _truth(exam, labels)[str(MEASURES[0])]
    covered = total = 0
    for seed in range(40):
        found, _ = corrected_measures(exam, result, MEASURES[:1], _sample(exam, labels, "test-point", 6, seed), labels)
        for run, (_raw, estimate) in found[0].runs.items():
            assert estimate.low is not None and estimate.high is not None and estimate.low <= estimate.high
            covered += estimate.low - 1e-9 <= truth[run] <= estimate.high + 1e-9
            total += 1
    assert covered / total >= 0.9


def test_a_sample_of_pairs_corrects_no_ranking_of_several_passages_and_says_why() -> None:
    exam, labels = _exam()
    found, problem = corrected_measures(exam, score(exam, MEASURES), MEASURES, _sample(exam, labels, "pair", 30),
                                        labels)
    assert problem is None
    assert all(c.missing is not None and "--unit test-point" in c.missing and not c.runs for c in found)


def test_a_sample_of_pairs_corrects_answers_of_one_passage() -> None:
    exam, labels = _exam(depth=1)
    pairs = len(unit_pairs(exam, "pair"))
    result = score(exam, MEASURES[:1])
    found, _ = corrected_measures(exam, result, MEASURES[:1], _sample(exam, labels, "pair", pairs), labels)
    truth = _truth(exam, labels)[str(MEASURES[0])]
    assert found[0].missing is None
    assert {run: e.value for run, (_raw, e) in found[0].runs.items()} == pytest.approx(truth)


def test_a_sample_of_another_pool_corrects_nothing() -> None:
    from dataclasses import replace

    exam, labels = _exam()
    other = replace(exam, grades={p: g for p, g in exam.grades.items() if p[0] != "q0-p5"})  # a smaller pool
    sample = _sample(other, labels, "pair", 10)
    found, problem = corrected_measures(exam, score(exam, MEASURES), MEASURES, sample, labels)
    assert found == [] and problem is not None and "another pool" in problem
