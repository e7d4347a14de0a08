"""What a user meets at the edges of the plugin and the ``exam-harness`` command: help, ini keys,
argument passing, exit statuses, the space form of path options, output failures and one id per
test point (issue 16)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from exam_harness.results.schema import SCHEMA_VERSION
from tests.paths import GOLDEN, REPO

pytest_plugins = ["pytester"]

# The console script beside this interpreter, as a user runs it.
EXAM_HARNESS = str(Path(sys.executable).parent / "exam-harness")


def _graded(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "graded.log"
    return log.read_text().splitlines() if log.exists() else []


def _add_ini(project: pytest.Pytester, lines: str) -> None:
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\n" + lines + "\n")


# --- pytest --help ------------------------------------------------------------------------------


def test_pytest_help_shows_every_exam_option(project: pytest.Pytester) -> None:
    """argparse %-formats option help; a literal % (MEASURE:PCT%) crashed ``pytest --help``."""
    result = project.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["*--exam-compare-fail=MEASURE:DROP*", "*MEASURE:PCT% (relative)*",
                                 "*exam_compare_fail (linelist)*"])


def test_pytest_help_works_with_a_bad_ini_file(project: pytest.Pytester) -> None:
    _add_ini(project, "exam_fail_undr = 0.3")
    result = project.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


# --- unknown ini keys ---------------------------------------------------------------------------


def test_a_misspelt_ini_key_is_a_usage_error_with_a_did_you_mean(project: pytest.Pytester) -> None:
    _add_ini(project, "exam_fail_undr = 0.3")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown exam-harness ini option in *tox.ini: 'exam_fail_undr' "
                                 "(did you mean 'exam_fail_under'?)*"])
    assert _graded(project) == []


def test_a_misspelt_key_in_pyproject_toml(project: pytest.Pytester) -> None:
    (project.path / "tox.ini").unlink()
    project.makepyprojecttoml("""
        [tool.pytest.ini_options]
        exam_grader = "marker"
        exam_runs = ["runs"]
        exam_banks = ["banks"]
        exam_fail_undr = ["0.3"]
        exam_cahce = ".cache/grades.sqlite"
    """)
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown exam-harness ini options in *pyproject.toml: 'exam_cahce' (did you mean "
                                 "'exam_cache'?), 'exam_fail_undr' (did you mean 'exam_fail_under'?)*"])


def test_known_ini_keys_and_other_plugins_keys_pass(project: pytest.Pytester) -> None:
    _add_ini(project, "exam_fail_under = 0.3\nexam_grader_options = a=b\nxfail_strict = true")
    assert project.runpytest("banks").ret == pytest.ExitCode.OK


# --- exam-harness exam ARGS ---------------------------------------------------------------------


def test_exam_command_passes_every_argument_to_pytest(project: pytest.Pytester) -> None:
    """Options first (-q, then an --exam- option), -k with its value: all pytest's, none argparse's."""
    result = project.run(EXAM_HARNESS, "exam", "-q", "--exam-fail-under=0.3", "-k", "q1", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*exam leaderboard*", "*5 passed, 2 deselected, 1 missed*"])
    assert "unrecognized arguments" not in result.stderr.str()


def test_exam_command_help_is_pytests(project: pytest.Pytester) -> None:
    result = project.run(EXAM_HARNESS, "exam", "--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--exam-fail-under=*"])


# --- --exam-dry-run -----------------------------------------------------------------------------


def test_a_dry_run_with_the_openai_grader_needs_no_key(project: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = project.runpytest("banks", "--exam-grader=openai", "--exam-model=gpt-4o-mini", "--exam-dry-run")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*exam dry run: 11 pairs, 0 cached; grader 'openai' would be asked 11 pairs in * calls "
                                 "with about * prompt tokens and at most * completion tokens; nothing was sent*", "*8 deselected*"])
    assert "_pytest.outcomes.Exit" not in result.stdout.str() + result.stderr.str()
    assert "Exit:" not in result.stdout.str() + result.stderr.str()
    assert not (project.path / "reports" / "exam-report.json").exists()


def test_the_openai_grader_still_needs_a_key_to_grade(project: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = project.runpytest("banks", "--exam-grader=openai", "--exam-model=gpt-4o-mini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs an API key for api.openai.com*"])


# --- exit statuses ------------------------------------------------------------------------------


def test_a_dead_grading_server_has_its_own_exit_status_in_the_cli(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``exam-harness`` commands end with 75 ("retry later") when the grading infrastructure fails and
    with 4 on a usage error, so CI can tell the two apart (docs/exit-status.md)."""
    import argparse
    import importlib

    from exam_harness import cli
    from exam_harness.core.errors import INFRASTRUCTURE_FAILED, ConfigError, GradingAborted

    # the module the command line imports (an earlier in-process pytester run may have dropped the copy the
    # package's attribute still names: patching that one would patch nothing main calls)
    leaderboard = importlib.import_module("exam_harness.cli.leaderboard")

    def dead(args: argparse.Namespace) -> int:
        raise GradingAborted("5 connection failures in a row", graded=3, remaining=9)

    monkeypatch.setattr(leaderboard, "run", dead)
    assert cli.main(["leaderboard", "x.json"]) == INFRASTRUCTURE_FAILED == 75
    assert "grading stopped: 5 connection failures in a row" in capsys.readouterr().err

    def typo(args: argparse.Namespace) -> int:
        raise ConfigError("no such option")

    monkeypatch.setattr(leaderboard, "run", typo)
    assert cli.main(["leaderboard", "x.json"]) == pytest.ExitCode.USAGE_ERROR


# --- --exam-compare on a first run --------------------------------------------------------------


@pytest.mark.parametrize("ref", [[], ["--exam-compare=main"], ["--exam-compare=0003"]])
def test_compare_with_nothing_kept_warns_and_goes_on(project: pytest.Pytester, ref: list[str]) -> None:
    """A first CI run: nothing kept yet, so there is nothing to compare with; the exam runs, says so."""
    result = project.runpytest("banks", *(ref or ["--exam-compare"]), "--exam-compare-fail=exam-cover:0.1")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*exam leaderboard*", "warning: --exam-compare*: no kept report in *.exam-history to "
                                 "compare with; keep one first with --exam-save NAME or --exam-autosave; this session "
                                 "is not compared and the --exam-compare-fail gates are not checked "
                                 "(--exam-compare-required makes this an error)", "*6 passed, 2 missed*"])
    assert (project.path / "reports" / "exam-report.json").exists()


def test_compare_required_makes_nothing_kept_an_error(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-compare", "--exam-compare-required")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-compare: no kept report in *.exam-history*(--exam-compare-required)"])
    assert _graded(project) == []


def test_a_missing_kept_report_is_still_an_error_when_others_are_kept(project: pytest.Pytester) -> None:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    result = project.runpytest("banks", "--exam-compare=mian")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-compare 'mian': no kept report of that name*0001_main.json*"])


# --- the space form of path options -------------------------------------------------------------


@pytest.fixture
def runs_elsewhere(project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    elsewhere = tmp_path_factory.mktemp("elsewhere") / "runs"
    shutil.copytree(project.path / "runs", elsewhere)
    (project.path / "runs" / "good.run").unlink()  # the project's own runs differ: which ones ran shows
    return elsewhere


def test_space_form_that_moves_the_rootdir_is_refused_with_the_equals_form(project: pytest.Pytester,
                                                                           runs_elsewhere: Path) -> None:
    """From the project root, ``--exam-runs /abs/path`` made pytest choose a rootdir near the path:
    0 items and exit 5. It is refused, naming the ``=`` form."""
    result = project.runpytest("--exam-runs", str(runs_elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exam-runs {runs_elsewhere}: pytest read * as a test path while choosing its "
                                 f"rootdir*instead of {project.path} and {project.path / 'tox.ini'}; write "
                                 f"--exam-runs={runs_elsewhere} instead"])
    assert _graded(project) == []


def test_the_space_form_blames_the_value_that_moves_the_rootdir(project: pytest.Pytester,
                                                                runs_elsewhere: Path) -> None:
    """A space-form value before it that is no path (``--exam-k 20``) is not the cause: the message names the
    option whose value moved the rootdir (issue 37: --exam-assignments outside the folder)."""
    assigned = runs_elsewhere.parent / "bm25.jsonl"
    assigned.write_text('{"qid": "q1", "run_id": "x", "nuggets": [{"text": "n", "assignment": "support"}]}\n')
    result = project.runpytest("--exam-k", "20", "--exam-assignments", str(assigned))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exam-assignments {assigned}: pytest read * as a test path*; write "
                                 f"--exam-assignments={assigned} instead"])


@pytest.mark.parametrize("args", [
    lambda runs: ["banks", "--exam-runs", runs],  # the guard refused this working command
    lambda runs: [f"--exam-runs={runs}"],
    lambda runs: ["--exam-runs", "runs-copy", "banks"],  # a relative path inside the project
])
def test_commands_that_keep_the_rootdir_run(project: pytest.Pytester, runs_elsewhere: Path, args: Any) -> None:
    import shutil

    shutil.copytree(runs_elsewhere, project.path / "runs-copy")
    result = project.runpytest(*args(str(runs_elsewhere)))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*exam leaderboard*", "*good*", "*6 passed, 2 missed*"])


def test_the_option_table_shows_the_equals_form() -> None:
    root = REPO
    table = (root / "docs" / "options.md").read_text()
    assert "| `--exam-runs=PATH` |" in table
    assert "| `--exam-compare[=REF]` |" in table
    assert "| `--exam-dry-run` |" in table
    for document in [root / "README.md", *(root / "docs").glob("*.md")]:
        assert "`--exam-runs PATH`" not in document.read_text(), document.name


# --- outputs that fail after grading ------------------------------------------------------------


def _leaderboard_then(result: pytest.RunResult, line: str) -> None:
    result.stdout.fnmatch_lines(["*exam leaderboard*", "*good*", "*weak*", line])


def test_an_unwritable_step_summary_is_a_warning_after_the_leaderboard(project: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "no-such-folder" / "summary.md"))
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    _leaderboard_then(result, "warning: cannot append the markdown summary to $GITHUB_STEP_SUMMARY=*no-such-folder"
                              "/summary.md: No such file or directory; the exam's verdict stands")
    assert (project.path / "reports" / "exam-report.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_step_summary_that_is_not_a_file_is_not_appended_to(project: pytest.Pytester,
                                                              monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A FIFO without a reader as $GITHUB_STEP_SUMMARY blocked the session forever."""
    import os

    target = project.path / "step-summary"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    # a FIFO without a reader used to block the session: in a subprocess with a (generous) hang check
    result = project.runpytest_subprocess("banks", timeout=120) if kind == "fifo" else project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK
    what = "is not a regular file (a FIFO, socket or device)" if kind == "fifo" else "is a folder"
    _leaderboard_then(result, f"warning: $GITHUB_STEP_SUMMARY={target} {what}; the markdown summary is not "
                              "appended there")


def test_the_step_summary_is_appended_to(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    target = project.path / "step-summary.md"
    target.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.OK
    text = target.read_text()
    assert text.startswith("earlier step\n") and "good" in text and "weak" in text


def test_a_fifo_as_the_markdown_path_is_refused_before_grading(project: pytest.Pytester) -> None:
    import os

    os.mkfifo(project.path / "summary.md")
    result = project.runpytest("banks", "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-markdown summary.md: is not a regular file (a FIFO, socket or device)*"])
    assert _graded(project) == []


def test_an_html_report_that_fails_after_grading_comes_after_the_leaderboard(project: pytest.Pytester,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTML folder passes the check before grading, then cannot be written (here: the writer fails as
    on a full disk): the leaderboard is printed, then a FAIL line; exit status 1; the other outputs stand."""
    import importlib

    # through sys.modules: an earlier in-process run may have left another module object as the package's
    # attribute (pytester forgets the modules a run imported), and the plugin imports from sys.modules
    html = importlib.import_module("exam_harness.report.html")

    def full_disk(*args: object, **kwargs: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(html, "render_html", full_disk)
    result = project.runpytest("banks", "--exam-html=html", "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _leaderboard_then(result, "FAIL cannot write the HTML report into html: No space left on device; the leaderboard "
                              "above is complete and the grades are cached, so a rerun after fixing it grades nothing")
    assert (project.path / "summary.md").exists()
    assert (project.path / "reports" / "exam-report.json").exists()


# --- one id per test point ----------------------------------------------------------------------

LFP = "Why is LFP considered safer than NMC?"


def _lfp_project(project: pytest.Pytester) -> str:
    """A bank whose test point has a generated id (no id written): the id every output must show."""
    import hashlib

    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(bank.read_text() + f"  - id: q3\n    text: third query\n    questions:\n      - {{text: '{LFP}'}}\n")
    (project.path / "runs" / "good.run").write_text(
        (project.path / "runs" / "good.run").read_text() + "q3 Q0 p3 1 1.0 good\n")
    return f"q3/why-is-lfp-considered-safer-than-nmc-{hashlib.md5(LFP.encode()).hexdigest()[:6]}"


def test_one_id_per_test_point_in_every_output(project: pytest.Pytester) -> None:
    import hashlib
    import json
    import xml.etree.ElementTree as ET

    readable = _lfp_project(project)
    generated = f"q3/{hashlib.md5(LFP.encode()).hexdigest()}"
    result = project.runpytest("banks", "-rs", "--junitxml=junit.xml", "--exam-html=html", "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # the terminal's -rs line: the id, with the question text beside it
    result.stdout.fnmatch_lines([f"MISSED banks/exam.yaml::q3::{readable}?good? - missed '{LFP}'*"])
    junit = ET.parse(project.path / "junit.xml").getroot()
    names = [case.get("name") for case in junit.iter("testcase")]
    assert f"{readable}[good]" in names
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    ids = {o["test_point_id"] for o in report["outcomes"] if o["query_id"] == "q3"}
    assert ids == {readable}
    assert report["schema_version"] == SCHEMA_VERSION
    html = next((project.path / "html").glob("*.html")).read_text()
    assert readable in html and generated not in html
    markdown = (project.path / "summary.md").read_text()
    assert f"`{readable}` *{LFP}*" in markdown
    everything = result.stdout.str() + json.dumps(report) + markdown
    assert generated not in everything


def test_query_cases_name_the_same_id(project: pytest.Pytester) -> None:
    readable = _lfp_project(project)
    result = project.runpytest("banks", "--exam-cases=query", "-rs", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    import xml.etree.ElementTree as ET

    properties = [p.get("value") for p in ET.parse(project.path / "junit.xml").getroot().iter("property")
                  if p.get("name") == "exam_test_points"]
    assert any(readable in (value or "") for value in properties)


def test_a_kept_report_of_schema_2_0_is_read_with_the_ids_of_today(project: pytest.Pytester) -> None:
    """Reports kept before 2.1 carry generated ids as query/md5(text): read back, they carry the id the
    pytest case shows, so a kept report and today's CI output name a test point alike."""
    import hashlib
    import json

    from exam_harness.results.read import read_report

    readable = _lfp_project(project)
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    today = json.loads((project.path / "reports" / "exam-report.json").read_text())
    # a report as schema 2.0 wrote it (tests/golden/exam-report-2.0.json), holding this test point's outcome
    # under the id 2.0 gave it
    old = json.loads((GOLDEN / "exam-report-2.0.json").read_text())
    generated = f"q3/{hashlib.md5(LFP.encode()).hexdigest()}"
    lfp = next(o for o in today["outcomes"] if o["query_id"] == "q3")
    old["outcomes"].append({**lfp, "test_point_id": generated})
    path = project.path / "kept-2.0.json"
    path.write_text(json.dumps(old))
    report = read_report(path)
    assert report.schema_version == SCHEMA_VERSION
    assert {o.test_point_id for o in report.outcomes if o.query_id == "q3"} == {readable}
    assert {o.test_point_id for o in report.outcomes if o.query_id == "q1"} == {"q1/a", "q1/b", "q1/n"}


@pytest.mark.slow
def test_a_dry_run_under_xdist_counts_in_one_process(project: pytest.Pytester) -> None:
    """With -n, the dry run stopped the session through pytest.exit: '_pytest.outcomes.Exit' was printed."""
    result = project.runpytest_subprocess("banks", "-n", "2", "--exam-dry-run")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["exam dry run: 11 pairs, 0 cached; grader 'marker' would be asked 11 pairs*",
                                 "*8 deselected*"])
    assert "Exit" not in result.stdout.str() + result.stderr.str()
    assert _graded(project) == []
