"""Sections (issue 26, item 2): an optional part of every output is one module and one registry line; a
plugin adds one with the ``pytest_exam_register_sections`` hook and every output shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import CONFTEST
from tests.paths import GOLDEN
from tests.report.support import PLUGIN

pytest_plugins = ["pytester"]

# good ranks p1, p2 (q1) and p4 (q2), all marked; weak ranks p3, p1 and p5, one marked
EXPECTED = {"per_run": {"good": 3, "weak": 1}}


def test_a_conftest_section_appears_in_every_output(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing but the conftest.py is touched: the terminal summary, the JSON report, markdown, HTML,
    ``evaluate``'s output and ``evaluate --json`` show the plugin's section, computed the same way."""
    project.makeconftest(CONFTEST + PLUGIN)
    result = project.runpytest("banks", "--exam-markdown", "summary.md", "--exam-html", "html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*exam leaderboard*", "marked passages: good 3, weak 1"])
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert report["sections"]["marked-passages"] == EXPECTED
    markdown = (project.path / "summary.md").read_text()
    assert "### Marked passages\n\n| run | marked |\n|:--|--:|\n| good | 3 |\n| weak | 1 |" in markdown
    html = (project.path / "html" / "index.html").read_text()
    assert '<a href="#marked-passages">Marked passages</a>' in html  # the navigation leads to it
    assert "<section id=\"marked-passages\"><h2>Marked passages</h2><table><tr><td>good</td><td>3</td></tr>" in html

    monkeypatch.chdir(project.path)  # the CLI loads ./conftest.py, as pytest does
    capsys.readouterr()
    out = project.path / "evaluation.json"
    assert main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "marker", "--cache", ".cache/grades.sqlite", "--bootstrap", "0", "--no-progress",
                 "--json", str(out)]) == 0
    assert "marked passages: good 3, weak 1" in capsys.readouterr().out.splitlines()
    assert json.loads(out.read_text())["sections"]["marked-passages"] == EXPECTED

    # read back where the plugin is registered, the section is typed by it (gates and views read it)
    from exam_harness.extensions import cli_registries
    from exam_harness.results.read import read_report
    from exam_harness.results.sections import active_sections, reset_sections

    assert "marked-passages" not in active_sections()  # the command's plugins ended with it
    cli_registries(project.path)  # what a command run in the folder does first
    try:
        kept = read_report(project.path / "reports" / "exam-report.json")
    finally:
        reset_sections()
    assert type(kept.sections["marked-passages"]).__name__ == "MarkedPassages"
    assert kept.sections["marked-passages"].per_run == EXPECTED["per_run"]


def test_a_section_no_registry_names_is_kept_as_read_and_shown_nowhere(tmp_path: Path) -> None:
    from exam_harness.report.markdown import render_markdown
    from exam_harness.report.terminal import render_to_text
    from exam_harness.results.read import read_report

    golden = json.loads((GOLDEN / "exam-report.json").read_text())
    golden.update(tool_version="0.1.0", created="2026-11-23T00:00:00+00:00",
                  sections={"someone-elses": {"rows": [1, 2]}})
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(golden))
    report = read_report(path)
    assert report.sections == {"someone-elses": {"rows": [1, 2]}}
    assert report.model_dump(mode="json")["sections"] == {"someone-elses": {"rows": [1, 2]}}
    assert "someone-elses" not in render_markdown(report) + render_to_text(report, color=False)


def test_the_builtin_sections_are_one_line_each() -> None:
    """The core's sections, one registry line each; the in-tree features' come through their hooks, in the places
    documents and views have always shown them (judge variance, agreement, significance, TREC RAG's, cost, flips, the live systems', the
    external qrels'), calibration first (its corrected scores beside the leaderboards)."""
    from exam_harness.results.sections import Section, active_sections, builtin_sections, reset_sections

    registry = builtin_sections()
    assert registry.names() == ["decided-by", "judge-notes", "correlations"]
    for section in registry.values():
        assert isinstance(section, Section)
    reset_sections()
    # the features' sections (calibration, live-systems, system-costs, trec-rag, cost, judge-variance, flips, significance,
    # external-qrels, trec-rag-agreement) where documents and views have always shown them
    assert active_sections().names() == ["calibration", "live-systems", "system-costs", "decided-by", "judge-notes",
                                         "trec-rag", "cost", "judge-variance", "flips", "correlations",
                                         "significance", "agreement", "external-qrels", "trec-rag-agreement"]


def test_a_session_s_plugin_sections_end_with_the_session(project: pytest.Pytester) -> None:
    """A report built after a session whose conftest.py registered a section (pytester runs in-process) is
    built with the built-in sections only."""
    from exam_harness.results.sections import active_sections

    project.makeconftest(CONFTEST + PLUGIN)
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    assert "marked-passages" not in active_sections()


def test_a_plugin_section_placed_before_shows_before_the_leaderboards(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``placement = "before"``: the pytest summary, markdown and HTML and ``evaluate``'s output show the section
    before the leaderboards; not declared ``brief``, ``evaluate --brief`` leaves it out."""
    project.makeconftest(CONFTEST + PLUGIN.replace('    model = MarkedPassages\n',
                                                   '    model = MarkedPassages\n    placement = "before"\n'))
    result = project.runpytest("banks", "--exam-markdown", "summary.md", "--exam-html", "html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    summary = result.stdout.str()
    summary = summary[summary.index("exam leaderboard"):]
    assert summary.index("marked passages: good 3, weak 1") < summary.index("EXAM-Cover")
    markdown = (project.path / "summary.md").read_text()
    assert markdown.index("### Marked passages") < markdown.index("| # | run |")
    html = (project.path / "html" / "index.html").read_text()
    assert html.index('<section id="marked-passages">') < html.index('id="leaderboard"')

    monkeypatch.chdir(project.path)
    args = ["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
            "--grader", "marker", "--cache", ".cache/grades.sqlite", "--bootstrap", "0", "--no-progress"]
    capsys.readouterr()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.index("marked passages: good 3, weak 1") < printed.index("Leaderboards at grade")
    assert main([*args, "--brief"]) == 0
    assert "marked passages" not in capsys.readouterr().out


def test_a_section_without_placement_or_brief_is_shown_after_and_not_kept_brief() -> None:
    """Sections written before placement existed (and third-party ones) keep working: after, not brief."""
    from exam_harness.results.sections import Section, active_sections, builtin_sections, kept_brief, placement_of

    class Old:
        name, title, model = "old", "Old", dict

    section: Section = Old()  # type: ignore[assignment]
    assert placement_of(section) == "after" and not kept_brief(section)
    registry = builtin_sections()
    assert placement_of(registry.get("correlations")) == "before" and kept_brief(registry.get("correlations"))
    cost = active_sections().get("cost")  # the cost feature's
    assert placement_of(cost) == "after" and not kept_brief(cost)
    Old.placement = "beside"  # type: ignore[attr-defined]
    from exam_harness.results.left_out import taken

    taken()
    assert placement_of(section) is None  # left out of the views, said (the registry refuses it: issue 39, finding 9)
    assert any("placement 'beside' is none of before, after" in line for line in taken())
