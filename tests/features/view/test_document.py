"""What the viewer shows of a document, without the screens (document.py): the columns, the order of runs and
test points, the sections; on the DL19 evaluation document too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.features.view.document import Viewed, headings, open_document
from exam_harness.results.schema import MeasureInfo
from tests.features.view.example import Example


def test_headings_name_the_tau_and_label_where_the_document_has_several() -> None:
    measures = [MeasureInfo(name="exam-cover(tau=3)@20", title="EXAM-Cover@20", min_grade=3),
                MeasureInfo(name="exam-cover(tau=4)@20", title="EXAM-Cover@20", min_grade=4),
                MeasureInfo(name="P(label=count,tau=4)@20", title="P@20", label="count", min_grade=4),
                MeasureInfo(name="P(label=max-grade,tau=4)@20", title="P@20", label="max-grade", min_grade=4)]
    assert headings(measures) == ["EXAM-Cover@20 τ3", "EXAM-Cover@20 τ4", "P@20 τ4 count", "P@20 τ4 max-grade"]
    one = [MeasureInfo(name="a", title="X"), MeasureInfo(name="b", title="X")]
    assert headings(one) == ["X (a)", "X (b)"]  # never two columns of one heading


def test_runs_points_and_sections_of_the_example(example: Example) -> None:
    raw = json.loads(example.report.read_text())
    viewed = Viewed(open_document(example.report))
    first = raw["measures"][0]["name"]
    means = {s["run"]: s["scores"][first]["mean"] for s in raw["systems"]}
    assert viewed.runs() == sorted(means, key=lambda r: -means[r])
    points = viewed.points("weak-ranker", "tides")
    kinds = [o.outcome for o in points]
    assert kinds == sorted(kinds, key=lambda k: {"required-missed": 0, "missed": 1}.get(k, 3))  # missed first
    assert {o.test_point_id for o in points} == {o["test_point_id"] for o in raw["outcomes"]
                                                 if o["run"] == "weak-ranker" and o["query_id"] == "tides"}
    assert sorted(s.name for s in viewed.sections()) == sorted(raw["sections"])
    assert all(s.section is not None for s in viewed.sections())
    assert viewed.flaky is None  # no repeats


@pytest.mark.slow
@pytest.mark.realdata
def test_the_dl19_evaluation_document(shared_data: Path, tmp_path: Path) -> None:
    """evaluate on DL19's published grades: 37 runs, 63 measures (three taus), every heading distinct; no test
    point outcomes, and per-query scores with --per-query."""
    from exam_harness.cli import main

    d = shared_data / "dl19"
    out = tmp_path / "dl19.json"
    assert main(["evaluate", str(d / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"), "--official",
                 str(d / "official-leaderboard.json"), "--min-grade", "3", "4", "5", "--per-query",
                 "--json", str(out)]) == 0
    viewed = Viewed(open_document(out))
    assert len(viewed.runs()) == 37 and len(viewed.measures) == 63
    assert len(set(viewed.headings)) == 63
    official = json.loads((d / "official-leaderboard.json").read_text())
    ranked = [r for r in viewed.runs() if r in official]
    assert ranked == viewed.runs()[: len(ranked)]  # the official leaderboard's order where it has the run
    assert len(viewed.queries(ranked[0])) == 43 and not viewed.has_outcomes()
    assert viewed.verdict()[0]
