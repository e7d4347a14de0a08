"""The viewer on a report with the team's labels (issue 40: "the corrected scores and intervals where team labels
exist"): a pytest session given ``--exam-team-labels`` (the calibration feature) over the marker project, its
labels drawn by ``exam-harness label``; the leaderboard shows each corrected score and its 95% interval beside the
raw one at 80×24, the highlighted cell says what corrects it, and the sections screen draws the calibration
section as the terminal summary does. Values are checked against the report read as plain JSON."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.features.view.document import Opened, Viewed, open_document
from tests.features.view.viewing import User, as_user, flat, viewer

pytest_plugins = ["pytester"]

RUNS = ["runs/collection.tsv", "runs/good.run", "runs/weak.run"]


def labelled_report(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, unit: str, size: int) -> Path:
    """The marker project's report of a session given labels of ``size`` ``unit``s, each pair labelled as not
    answering (the team disagrees with every pass of the judge)."""
    monkeypatch.chdir(project.path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n" * 40))
    assert main(["label", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker", "--cache", ".cache/grades.sqlite",
                 "--no-progress", "--unit", unit, "--size", str(size)]) == 0
    result = project.runpytest("banks", "-p", "no:cacheprovider", "--exam-team-labels=labels.jsonl")
    assert "Corrected scores at grade" in result.stdout.str() or unit == "pair", result.stdout.str()
    return project.path / "reports" / "exam-report.json"


def calibration(report: Path) -> Any:
    return json.loads(report.read_text(encoding="utf-8"))["sections"]["calibration"]


def cell(found: Any) -> str:
    return f"{found['corrected']:.3f} [{found['low']:.2f}, {found['high']:.2f}]"


def test_the_leaderboard_shows_each_corrected_score_beside_the_raw_one(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    report = labelled_report(project, monkeypatch, "test-point", 2)
    content = calibration(report)
    cover = next(c for c in content["corrected"] if c["key"].startswith("exam-cover"))
    good = cover["runs"]["good"]
    assert good["corrected"] < good["raw"] and good["low"] < good["high"]  # labels that move the score, a spread

    async def scenario(user: User) -> None:
        board = user.screen
        assert "EXAM-Cover@20 corrected" in board  # the column beside the raw one, on screen at 80 columns
        for run, found in cover["runs"].items():
            row = flat(next(line for line in board.splitlines() if line.split()[:1] == [run]))
            assert f"{found['raw']:.3f}" in row and cell(found) in row
        viewed = user.app.viewed
        raw = flat(await user.press(*["down"] * viewed.runs().index("good"), "right"))
        assert (f"corrected by the team's labels: {good['corrected']:.4f}, 95% interval "
                f"[{good['low']:.4f}, {good['high']:.4f}]") in raw
        shown = flat(await user.press("right"))
        assert f"good · EXAM-Cover@20 corrected = {cover['measure']} corrected by the team's labels labels.jsonl " \
               f"(2 labelled test-points of {content['scores_design']['population']})" in shown
        assert (f"corrected {good['corrected']:.4f}, 95% interval [{good['low']:.4f}, {good['high']:.4f}]; raw "
                f"(the judge's) {good['raw']:.4f}") in shown

    as_user(viewer(report), scenario)


async def every_page(user: User) -> str:
    """The screen scrolled from top to bottom, page by page, as one text."""
    pages = [user.screen]
    for _ in range(40):
        page = await user.press("pagedown")
        if page == pages[-1]:
            break
        pages.append(page)
    return "\n".join(pages)


def test_the_sections_screen_draws_the_calibration_section_as_the_terminal_summary(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    report = labelled_report(project, monkeypatch, "test-point", 2)
    content = calibration(report)

    async def scenario(user: User) -> None:
        await user.press("s")
        shown = flat(await every_page(user))
        assert "Calibration against the team's labels [calibration]" in shown
        assert "Judges against the team's labels labels.jsonl" in shown and content["design"]["sample"] in shown
        assert "Corrected scores at grade ≥ 4" in shown
        assert '"judges"' not in shown  # its own rendering, not its JSON

    as_user(viewer(report), scenario)


def test_a_measure_the_labels_do_not_correct_says_why(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample of pairs corrects no EXAM-Cover over rankings of several passages: no corrected column, and the
    raw cell says why, in the section's words."""
    report = labelled_report(project, monkeypatch, "pair", 4)
    cover = next(c for c in calibration(report)["corrected"] if c["key"].startswith("exam-cover"))
    assert cover["missing"]
    viewed = Viewed(open_document(report))
    assert not any(c.corrected is not None and c.index == 0 for c in viewed.columns)
    assert f"not corrected by the team's labels: {cover['missing']}" in viewed.cell_details("good", 0)


def test_the_section_as_read_where_the_calibration_feature_is_not_registered(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document whose calibration section is plain JSON (read where the feature is blocked) shows the same
    corrected columns."""
    report = labelled_report(project, monkeypatch, "test-point", 2)
    opened = open_document(report)
    typed = Viewed(opened)
    document = opened.document.model_copy(deep=True)
    document.sections["calibration"] = calibration(report)
    as_read = Viewed(Opened(report, document))
    assert [c.heading for c in as_read.columns] == [c.heading for c in typed.columns]
    assert len(typed.columns) == len(typed.measures) + 3  # EXAM-Cover, n-EXAM, nugget F corrected
    for run in typed.runs():
        assert [as_read.column_text(run, c) for c in as_read.columns] == [typed.column_text(run, c)
                                                                          for c in typed.columns]


def test_an_evaluate_document_s_corrected_scores_stand_beside_its_measures(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    labelled_report(project, monkeypatch, "test-point", 2)
    assert main(["evaluate", *RUNS, "--bank", "banks/exam.yaml", "--grader", "marker", "--cache", ".cache/grades.sqlite",
                 "--no-progress", "--report-dir", "none", "--team-labels", "labels.jsonl", "--json", "ev.json"]) == 0
    document = project.path / "ev.json"
    viewed = Viewed(open_document(document))
    corrected = [c for c in viewed.columns if c.corrected is not None]
    entries = [c for c in calibration(document)["corrected"] if not c["missing"]]
    assert entries and [c.corrected.measure for c in corrected if c.corrected] == [e["measure"] for e in entries]
    for column, entry in zip(corrected, entries, strict=True):
        assert viewed.measures[column.index].name == entry["measure"]  # beside its own measure
        for run, found in entry["runs"].items():
            assert viewed.column_text(run, column) == cell(found)
