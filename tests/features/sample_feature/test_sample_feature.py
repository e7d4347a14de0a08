"""Issue 36's done-when: a feature needing a new scoring input, a new option, a gate figure and a subcommand is one
folder (tests/features/sample_feature) and one registration line, and it appears in pytest, ``evaluate`` and
``verdict``.

The project: the marker grader's (tests/helpers.py). Top-k passages of 3 or more words: good's p1 of p1, p2, p4
(1/3), weak's p3, p1, p5 (3/3)."""

from __future__ import annotations

import json

import pytest

from exam_harness.cli import main

pytest_plugins = ["pytester"]

REGISTRATION = 'pytest_plugins = ["tests.features.sample_feature.plugin"]\n'
SHARES = {"good": pytest.approx(1 / 3), "weak": 1.0}


@pytest.fixture
def featured(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The project with the sample feature registered by its one line; the current folder is the project's (the
    command line loads ./conftest.py, as pytest does)."""
    conftest = project.path / "conftest.py"
    conftest.write_text(REGISTRATION + conftest.read_text())
    monkeypatch.chdir(project.path)
    return project


def test_the_feature_s_option_section_and_gate_figure_in_a_pytest_session(featured: pytest.Pytester) -> None:
    result = featured.runpytest("banks", "--exam-long-words=3", "--exam-fail-under=long-share:0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()  # good's share is below 0.5
    result.stdout.fnmatch_lines(["*long passages (>= 3 words): good 0.33, weak 1.00*",
                                 "*FAIL Required long-passage share of 0.5 not reached by run 'good': 0.3333*"])
    report = json.loads((featured.path / "reports" / "exam-report.json").read_text())
    assert report["sections"]["long-passages"] == {"min_words": 3, "share": SHARES}
    gates = {g["run"]: g for g in report["verdict"]["gates"] if g["gate"] == "exam-fail-under"}
    assert {run: g["passed"] for run, g in gates.items()} == {"good": False, "weak": True}
    assert gates["weak"]["value"] == 1.0 and gates["weak"]["measure"] == "long-share"


def test_the_ini_key_sets_the_feature_s_option(featured: pytest.Pytester) -> None:
    ini = featured.path / "tox.ini"  # pytester's makeini
    ini.write_text(ini.read_text() + "\nexam_long_words = 4\n")
    assert featured.runpytest("banks").ret == pytest.ExitCode.OK
    report = json.loads((featured.path / "reports" / "exam-report.json").read_text())
    assert report["sections"]["long-passages"] == {"min_words": 4, "share": {"good": pytest.approx(1 / 3),
                                                                            "weak": pytest.approx(1 / 3)}}


def test_without_the_registration_line_the_option_is_unknown(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-long-words=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --exam-long-words=3*"])


def test_evaluate_computes_the_section_and_verdict_gates_on_its_figure(
        featured: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    out = featured.path / "evaluation.json"
    assert main(["evaluate", "runs/collection.tsv", "runs/good.run", "runs/weak.run", "--bank", "banks/exam.yaml",
                 "--grader", "marker", "--cache", ".cache/grades.sqlite", "--bootstrap", "0", "--no-progress",
                 "--long-words", "3", "--json", str(out)]) == 0
    assert "long passages (>= 3 words): good 0.33, weak 1.00" in capsys.readouterr().out
    assert json.loads(out.read_text())["sections"]["long-passages"] == {"min_words": 3, "share": SHARES}

    assert main(["verdict", str(out), "--fail-under", "long-share:0.5"]) == 1
    printed = capsys.readouterr()
    assert "FAIL Required long-passage share of 0.5 not reached by run 'good': 0.3333" in printed.err
    assert "long-passage share of run 'weak' is 1, at least the required 0.5" in printed.out
    assert main(["verdict", str(out), "--fail-under", "long-share:0.3"]) == 0
    capsys.readouterr()

    # the subcommand the feature adds, listed with the built-in ones
    assert main(["long-passages", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == ["good\t0.3333", "weak\t1.0000"]
    assert main(["--help"]) == 0
    assert "long-passages" in capsys.readouterr().out


def test_verdict_reads_the_figure_of_a_pytest_report_as_the_session_decided(
        featured: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert featured.runpytest("banks", "--exam-long-words=3").ret == pytest.ExitCode.OK
    report = featured.path / "reports" / "exam-report.json"
    assert main(["verdict", str(report), "--fail-under", "good=long-share:0.5"]) == 1
    assert "FAIL Required long-passage share of 0.5 not reached by run 'good'" in capsys.readouterr().err
    assert main(["verdict", str(report), "--fail-under", "weak=long-share:0.9"]) == 0


def test_a_document_without_the_section_fails_the_figure_naming_the_section(
        featured: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    result = featured.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()  # no --exam-long-words: no section
    report = featured.path / "reports" / "exam-report.json"
    assert main(["verdict", str(report), "--fail-under", "long-share:0.5"]) == 1
    assert ("FAIL run 'good' has no long-passage share (the document's 'long-passages' section holds none for it), "
            "so it cannot meet its limit 0.5") in capsys.readouterr().err


def test_a_gate_on_an_unknown_name_is_still_refused_before_grading(featured: pytest.Pytester) -> None:
    result = featured.runpytest("banks", "--exam-fail-under=long-shar:0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "long-shar" in result.stderr.str()
    assert not (featured.path / "graded.log").exists()
