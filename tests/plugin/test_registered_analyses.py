"""A conftest.py analysis (hook ``pytest_exam_register_analyses``): listed and run by ``exam-harness analyze NAME``
and printed by pytest's ``--exam-analysis NAME``, as the built-in ones and the agreement feature's are; a name no
analysis registers is refused by both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, write_bank, write_exam

pytest_plugins = ["pytester"]

# An analysis counting the graded pairs per grade: on the command line and as pytest's section.
ANALYSIS_CONFTEST = '''
from rich.table import Table
from exam_harness.api import add_graded_arguments

def grade_counts(outcome):
    counts = {}
    for grade in outcome.grades.values():
        counts[grade] = counts.get(grade, 0) + 1
    return dict(sorted(counts.items()))

def counts_table(counts):
    table = Table(title="pairs per grade")
    table.add_column("grade")
    table.add_column("pairs")
    for grade, n in counts.items():
        table.add_row(str(grade), str(n))
    return table

class GradeCounts:
    help = "Graded pairs per grade."
    in_pytest = True

    def add_arguments(self, parser):
        add_graded_arguments(parser)

    def run(self, args, session):
        view, outcome = session.shown()
        counts = grade_counts(outcome)
        session.console.print(counts_table(counts))
        session.write_json({str(g): n for g, n in counts.items()})
        return session.finish(outcome)

    def section(self, exam):
        return "exam: grade counts", [counts_table(grade_counts(exam.outcome))]

def pytest_exam_register_analyses(registry):
    registry.register("grade-counts", GradeCounts(), "grade counts")
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_exam(tmp_path / "data")
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST + ANALYSIS_CONFTEST)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_analyze_lists_and_runs_a_conftest_analysis(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--help"]) == 0
    listing = capsys.readouterr().out
    assert "grade-counts" in listing and "Graded pairs per grade." in listing
    assert "bank edit impact, grade counts." in " ".join(main_help(capsys).split())
    bank = write_bank(folder / "kw.jsonl", KEYWORD_BANK)
    code = main(["analyze", "grade-counts", "data/exam.jsonl.gz", "--bank", str(bank), "--grader", "keyword",
                 "--k", "2", "--no-progress", "--json", "counts.json"])
    assert code == 0, capsys.readouterr().err
    assert "pairs per grade" in capsys.readouterr().out
    # the keyword grader on the hand-made exam: 16 pairs, 7 of them holding their test point's keyword
    assert json.loads((folder / "counts.json").read_text()) == {"0": 9, "5": 7}


def main_help(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--help"]) == 0
    return capsys.readouterr().out


def test_pytest_prints_a_conftest_analysis_and_refuses_a_command_line_one(project: pytest.Pytester) -> None:
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text() + ANALYSIS_CONFTEST)
    result = project.runpytest("banks", "--exam-analysis", "grade-counts", "--exam-analysis", "agreement")
    result.stdout.fnmatch_lines(["*exam: grade counts*", "*pairs per grade*",
                                 "*exam: agreement with human judgments*"])
    grid = project.runpytest("banks", "--exam-analysis", "grid")  # one query's grid: the command line's alone
    assert grid.ret == pytest.ExitCode.USAGE_ERROR
    grid.stderr.fnmatch_lines(["*--exam-analysis: unknown analysis 'grid'*grade-counts*"])
