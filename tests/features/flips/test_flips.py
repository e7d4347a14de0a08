"""Issue 28, item 6: the test points that flipped against the kept report (answered -> missed and back),
with both sides' best passages and reasons: a pure function of two reports, ``exam-harness compare``'s
table and pytest's ``--exam-compare`` section."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.features.flips.flips import flip_counts, flips
from exam_harness.results.read import read_report

pytest_plugins = ["pytester"]

# the weak run loses p1 (which answered q1/a and q1/n) and gains p2 (q1/b) on q1
WORSE_WEAK = "q1 Q0 p3 1 3.0 weak\nq1 Q0 p2 2 2.0 weak\nq2 Q0 p5 1 1.0 weak\n"


@pytest.fixture
def two_reports(project: pytest.Pytester) -> tuple[Path, Path]:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    (project.path / "runs" / "weak.run").write_text(WORSE_WEAK)
    project.runpytest("banks")
    return project.path / ".exam-history" / "0001_main.json", project.path / "reports" / "exam-report.json"


def test_flips_lists_lost_then_gained_points_with_both_sides(two_reports: tuple[Path, Path]) -> None:
    old, new = (read_report(p) for p in two_reports)
    found = flips(old, new)
    assert [(f.run, f.test_point_id, f.lost) for f in found] == [
        ("weak", "q1/a", True), ("weak", "q1/n", True), ("weak", "q1/b", False)]
    assert flip_counts(found) == {"weak": (2, 1)}
    lost = found[0]
    assert lost.before.best_passage == "p1" and lost.after.best_passage in ("p2", "p3")
    assert flips(old, old) == []  # nothing flips against itself


def test_compare_prints_the_flipped_points(two_reports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["compare", str(two_reports[0]), str(two_reports[1])]) == 0
    out = capsys.readouterr().out
    assert "Flipped test points from 0001_main.json to exam-report.json: weak -2 +1" in out
    assert "answered → missed" in out and "missed → answered" in out and "p1 (grade" in out


def test_pytest_compare_section_lists_the_flipped_points(project: pytest.Pytester) -> None:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    (project.path / "runs" / "weak.run").write_text(WORSE_WEAK)
    result = project.runpytest("banks", "--exam-compare")
    result.stdout.fnmatch_lines(["*Flipped test points against 0001_main.json: weak -2 +1*"])


def test_the_flipped_points_are_a_section_of_every_output(project: pytest.Pytester) -> None:
    """The flips against the kept report are a section of the result document: the JSON lists them with both
    sides, the markdown summary and the HTML report show them."""
    import json

    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert "flips" not in report["sections"]  # compared with nothing: no section
    (project.path / "runs" / "weak.run").write_text(WORSE_WEAK)
    project.runpytest("banks", "--exam-compare", "--exam-markdown", "summary.md", "--exam-html", "html")
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    section = report["sections"]["flips"]
    assert section["reference"] == "0001_main.json"
    assert [(f["run"], f["test_point_id"], f["lost"]) for f in section["flips"]] == [
        ("weak", "q1/a", True), ("weak", "q1/n", True), ("weak", "q1/b", False)]
    assert section["flips"][0]["before"]["best_passage"] == "p1"
    assert section["flips"][0]["after"]["outcome"] in ("missed", "required-missed")
    markdown = (project.path / "summary.md").read_text()
    assert "flipped test points against 0001\\_main.json: weak -2 +1" in markdown
    assert "| weak | q1/a" in markdown and "answered → missed" in markdown and "missed → answered" in markdown
    page = "".join(p.read_text() for p in (project.path / "html").rglob("*.html"))
    assert 'id="flips"' in page and "weak -2 +1" in page and "q1/n" in page and "answered → missed" in page
