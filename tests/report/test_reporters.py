"""Plugin reporters (``pytest_exam_register_reporters``): a file given as a text or as an iterable of
text pieces is written with the built-in reports; anything else fails the session with a message
naming the reporter and the file, the leaderboard printed and the previous reports kept."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers import CONFTEST, report_means

pytest_plugins = ["pytester"]


def with_reporter(pytester: pytest.Pytester, content: str) -> None:
    """The project's conftest plus a reporter ``csv`` whose one file ``leaderboard.csv`` is ``content``."""
    pytester.makeconftest(CONFTEST + textwrap.dedent(f"""

        class CsvReporter:
            def files(self, out):
                return {{"leaderboard.csv": {content}}}


        def pytest_exam_register_reporters(registry):
            registry.register("csv", CsvReporter(), "the leaderboard as CSV")
        """))


def test_a_reporters_pieces_are_written(project: pytest.Pytester) -> None:
    with_reporter(project, '("run,cover\\n", *(f"{run},{cover:.3f}\\n" for run, cover in out.document.means("exam-cover").items()))')
    result = project.runpytest("banks")
    assert result.ret == 0, result.stdout.str()
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    expected = "run,cover\n" + "".join(f"{run},{cover:.3f}\n" for run, cover in report_means(report).items())
    assert (project.path / "reports" / "leaderboard.csv").read_text() == expected
    assert [line.split(",")[0] for line in expected.splitlines()] == ["run", "good", "weak"]


@pytest.mark.parametrize(("content", "said"), [
    ('b"run,cover\\n"', "gave the content of 'leaderboard.csv' as bytes"),
    ('["run,cover\\n", 7]', "gave a piece of 'leaderboard.csv' as int"),
])
def test_a_reporter_giving_other_than_text_fails_the_session(project: pytest.Pytester, content: str,
                                                             said: str) -> None:
    assert project.runpytest("banks").ret == 0  # a full set of reports, before the reporter is added
    before = (project.path / "reports" / "exam-report.json").read_text()
    with_reporter(project, content)
    result = project.runpytest("banks")
    assert result.ret == 1
    output = result.stdout.str()
    assert "Traceback" not in output + result.stderr.str()
    result.stdout.fnmatch_lines([f"FAIL cannot write the reports into *reports: writer 'csv' {said}; a writer's "
                                 "files() maps each file name to a text (str), an iterable of text pieces or a Binary*"])
    assert "EXAM-Cover@20" in output  # the leaderboard is printed all the same
    assert (project.path / "reports" / "exam-report.json").read_text() == before
    assert not (project.path / "reports" / "leaderboard.csv").exists()
