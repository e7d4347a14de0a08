"""The calibration section's content (features/calibration/compute.py): which labels its parts use, the judges'
figures split by the fields the label file carries, the judges against each other."""

from __future__ import annotations

from exam_harness.analysis.label_file import TeamLabel
from exam_harness.analysis.label_judges import Judges
from exam_harness.analysis.label_sample import JudgeGrades
from exam_harness.features.calibration.compute import calibration


def _labels() -> list[TeamLabel]:
    """Eight pairs of one stratum, four of each kind; the judge passes every 'word-for-word' pair and none other."""
    out = []
    for i in range(8):
        kind = "word-for-word" if i < 4 else "other-words"
        out.append(TeamLabel("q", "q/t", f"p{i}", True, "pairs/seed=0/x", "pair", 80, "grade 3", 80, 8, 0.1,
                             source="passage", kind=kind))
    return out


def test_the_figures_split_by_kind_and_the_judges_meet_each_other() -> None:
    labels = _labels()
    judge = JudgeGrades("embedding", {lab.pair: 5 if lab.kind == "word-for-word" else 0 for lab in labels}, 4)
    other = JudgeGrades("openai (m)", {lab.pair: 5 for lab in labels}, 4)
    content = calibration("labels.jsonl", labels, Judges(judge, [other]))
    first = content.judges[0]
    assert first.first and first.figures.tpr.value == 0.5 and content.design.sample == "pairs/seed=0/x"
    by_kind = {s.value: s.figures for s in first.splits if s.field == "kind"}
    assert by_kind["word-for-word"].tpr.value == 1.0 and by_kind["other-words"].tpr.value == 0.0
    assert content.judges[1].figures.tpr.value == 1.0
    (between,) = content.between
    assert (between.a, between.b, between.pairs, between.agreement) == ("embedding", "openai (m)", 8, 0.5)
    assert content.corrected == [] and content.scores_design is None  # no exam given: no corrected score


def test_labels_of_no_sample_weigh_one_and_correct_nothing() -> None:
    labels = [TeamLabel("q", "q/t", f"p{i}", i % 2 == 0) for i in range(6)]
    judge = JudgeGrades("embedding", {lab.pair: 5 for lab in labels}, 4)
    content = calibration("old.jsonl", labels, Judges(judge))
    assert content.design.sample is None and content.design.labelled == 6
    assert content.judges[0].figures.precision.value == 0.5
