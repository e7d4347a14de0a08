"""Issue 39, findings 9 and 11: a plugin section is contained as a writer is. Its code that raises or gives
the wrong type leaves that section out of that output, named in a warning, and every other output is
written (the leaderboard, the JSON report, markdown, HTML); what it declares wrongly (a placement that is
none, a name of the report's own such as ``verdict``) is refused where it is registered, before any case
runs. What it shows cannot drive the terminal (escapes are shown escaped, as ``exam-harness leaderboard``
shows a kept report's names), and a ``NaN`` it holds never makes the report something other than JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from tests.helpers import CONFTEST

pytest_plugins = ["pytester"]

# A section whose parts are each replaced by a case's code (no __future__ annotations: see test_sections.py)
PLUGIN = '''
from pydantic import BaseModel


class Counted(BaseModel):
    runs: int
    share: float = 0.5


class CountedSection:
    name = "NAME"
    title = "Counted runs"
    model = Counted
    placement = "PLACEMENT"

    def compute(self, scored):
        COMPUTE
        return Counted(runs=len(scored.runs))

    def terminal(self, content):
        TERMINAL
        return [f"counted runs: {content.runs}"]

    def markdown(self, content, escape):
        MARKDOWN
        return f"### Counted runs\\n\\n{content.runs}"

    def html(self, content):
        HTML
        return f'<section id="NAME"><h2>Counted runs</h2><p>{content.runs}</p></section>'


def pytest_exam_register_sections(registry):
    registry.register("NAME", CountedSection())
'''


def plugin(*, name: str = "counted", placement: str = "after", compute: str = "pass", terminal: str = "pass",
           markdown: str = "pass", html: str = "pass") -> str:
    return CONFTEST + (PLUGIN.replace("NAME", name).replace("PLACEMENT", placement).replace("COMPUTE", compute)
                       .replace("TERMINAL", terminal).replace("MARKDOWN", markdown).replace("HTML", html))


def _session(project: pytest.Pytester, conftest: str) -> pytest.RunResult:
    project.makeconftest(conftest)
    return project.runpytest("banks", "--exam-markdown", "summary.md", "--exam-html", "html")


def _json(path: Path) -> Any:
    def no_constant(value: str) -> Any:
        raise ValueError(f"{value} is not JSON")

    return json.loads(path.read_text(), parse_constant=no_constant)


BROKEN = {
    "compute raises": ({"compute": "raise RuntimeError('boom')"}, "the document",
                       "its compute() raised RuntimeError: boom"),
    "compute returns a dict": ({"compute": "return {'runs': 2}"}, "the document",
                               "its compute() gave dict, expected an instance of its model Counted or None"),
    "terminal returns an int": ({"terminal": "return 3"}, "the terminal",
                                "its terminal() gave int, expected a list of lines or rich renderables"),
    "markdown raises": ({"markdown": "raise KeyError('runs')"}, "markdown", "its markdown() raised KeyError"),
    "html returns bytes": ({"html": "return b'<section></section>'"}, "HTML",
                           "its html() gave bytes, expected a text (str)"),
}


@pytest.mark.parametrize(("broken", "output", "said"), BROKEN.values(), ids=BROKEN.keys())
def test_a_failing_section_is_left_out_of_its_output_named_and_the_rest_written(
        project: pytest.Pytester, broken: dict[str, str], output: str, said: str) -> None:
    result = _session(project, plugin(**broken))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*exam leaderboard*", f"warning: section 'counted' left out of {output}: {said}*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    report = _json(project.path / "reports" / "exam-report.json")
    assert ("counted" in report["sections"]) == (output != "the document")
    markdown = (project.path / "summary.md").read_text()
    page = (project.path / "html" / "index.html").read_text()
    assert "exam leaderboard" in result.stdout.str() and "EXAM-Cover" in markdown and 'id="leaderboard"' in page
    shown = {"the terminal": "counted runs: 2" in result.stdout.str(), "markdown": "### Counted runs" in markdown,
             "HTML": '<section id="counted">' in page}
    for where, present in shown.items():  # left out where it failed, shown wherever else it could be
        assert present == (output not in (where, "the document")), where


@pytest.mark.parametrize(("declared", "said"), [
    ({"placement": "sideways"}, "section 'counted': placement 'sideways' is none of before, after"),
    ({"name": "verdict"}, "section 'verdict': the name 'verdict' is the report's own"),
])
def test_a_section_declared_wrongly_is_refused_where_it_is_registered(project: pytest.Pytester,
                                                                      declared: dict[str, str], said: str) -> None:
    result = _session(project, plugin(**declared))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*{said}*"])
    assert not (project.path / "graded.log").exists()  # refused before any case was graded
    assert "Traceback" not in result.stderr.str()


CLEAR_SCREEN = "\\x1b[2J\\x1b[H\\x1b[32mALL GATES PASSED\\x1b[0m"


def test_a_section_s_terminal_lines_are_shown_escaped(project: pytest.Pytester) -> None:
    result = _session(project, plugin(terminal=f"return ['{CLEAR_SCREEN}']"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    out = result.stdout.str()
    assert "\x1b[2J" not in out and "\x1b[32m" not in out
    assert "\\x1b[2J\\x1b[H\\x1b[32mALL GATES PASSED\\x1b[0m" in out  # shown, as its escapes


def test_leaderboard_shows_a_kept_report_s_terminal_escapes_escaped(project: pytest.Pytester, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    document = json.loads((project.path / "reports" / "exam-report.json").read_text())
    hostile = "weak\x1b[2J\x1b[32mALL-GATES-PASSED"
    for row in (*document["systems"], *document["per_query"], *document["outcomes"]):
        if row["run"] == "weak":
            row["run"] = hostile
    document["partial"] = "\x1b]0;owned\x07 a title"
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["leaderboard", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "weak\\x1b[2J\\x1b[32mALL-GATES-PASSED" in out and "\\x1b]0;owned\\x07 a title" in out


def test_a_section_holding_nan_is_left_out_of_the_json_which_stays_json(project: pytest.Pytester,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    result = _session(project, plugin(compute="return Counted(runs=2, share=float('nan'))"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["warning: section 'counted' left out of exam-report.json: its sections.counted.share "
                                 "is nan, which JSON cannot hold (no NaN or infinity)*"])
    path = project.path / "reports" / "exam-report.json"
    report = _json(path)  # JSON: no bare NaN
    assert "counted" not in report["sections"] and report["systems"]
    assert "counted runs: 2" in result.stdout.str()  # the other outputs still show it
    capsys.readouterr()
    assert main(["verdict", str(path)]) == 0  # and the report reads back


def test_the_json_writer_writes_any_other_nan_as_null_naming_the_field() -> None:
    from exam_harness.results.json_writer import json_text
    from exam_harness.results.left_out import taken

    taken()
    text = json_text({"a": [1.0, float("nan")], "b": {"c": float("inf")}}, "x.json", sort_keys=True)
    assert json.loads(text) == {"a": [1.0, None], "b": {"c": None}}
    assert taken() == ["warning: x.json: a.1 (nan), b.c (inf) not a finite number, written as null (JSON has no NaN "
                       "or infinity)"]


def test_a_section_s_own_figures_are_drawn_and_one_that_fails_is_left_out_named() -> None:
    """``evaluate --plot`` writes the figures of the sections that draw their own (``images``): one whose images
    raise or are not bytes draws none, named in a warning, and the others' are kept."""
    from pydantic import BaseModel

    from exam_harness.core.registry import Registry
    from exam_harness.results.left_out import taken
    from exam_harness.results.sections import Section, section_images

    class Empty(BaseModel):
        pass

    class Drawing:
        title = "Drawing"
        model: type[BaseModel] = Empty

        def __init__(self, name: str, images: Any) -> None:
            self.name, self._images = name, images

        def compute(self, scored: Any) -> None:
            return None

        def terminal(self, content: Any) -> list[str]:
            return []

        def markdown(self, content: Any, escape: Any) -> str:
            return ""

        def html(self, content: Any) -> str:
            return ""

        def images(self, content: Any) -> Any:
            return self._images()

    def raising() -> dict[str, bytes]:
        raise RuntimeError("no backend")

    registry: Registry[Section] = Registry("section")
    registry.register("drawn", Drawing("drawn", lambda: {"drawn.png": b"\x89PNG"}))
    registry.register("broken", Drawing("broken", raising))
    registry.register("texts", Drawing("texts", lambda: {"texts.svg": "<svg/>"}))
    taken()
    images = section_images({"drawn": Empty(), "broken": Empty(), "texts": Empty()}, registry)
    assert images == {"drawn.png": b"\x89PNG"}
    warnings = taken()
    assert any("'broken' left out of the plots" in w and "RuntimeError: no backend" in w for w in warnings)
    assert any("'texts' left out of the plots" in w and "file names to bytes" in w for w in warnings)
