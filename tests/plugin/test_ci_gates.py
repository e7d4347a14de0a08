"""A CI gate that never lies (issue 9), as a user sees it through pytest: failed grades are never scores,
an exam with nothing in common is an error, gate values are checked, thresholds per run and measure,
regressions against a kept report, partial sessions kept apart, options checked before grading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import COLLECTION

pytest_plugins = ["pytester"]


def _graded(project: pytest.Pytester) -> list[str]:
    log = project.path / "graded.log"
    return log.read_text().splitlines() if log.exists() else []


def _report(project: pytest.Pytester, folder: str = "reports") -> dict[str, Any]:
    report: dict[str, Any] = json.loads((project.path / folder / "exam-report.json").read_text())
    return report


# --- 1. truthful outcomes -----------------------------------------------------------------------


def test_failed_grades_stay_out_of_qrels_and_mark_scores_incomplete(project: pytest.Pytester) -> None:
    """p1 cannot be graded (the grader fails on it): its pairs are no qrels line, the runs that rank it
    have incomplete scores in the JSON, the terminal says so and the session fails naming them."""
    (project.path / "runs" / "collection.tsv").write_text(COLLECTION.replace("answers [a] and [n]", "BROKEN [a]"))
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*! incomplete: 3 pairs could not be graded*",
        "FAIL incomplete exam: 3 pairs could not be graded; the scores of runs 'good', 'weak' rest on them*",
    ])
    qrels = (project.path / "reports" / "exam-max-grade.qrels").read_text().split("\n")
    assert not [line for line in qrels if " p1 " in line]
    report = _report(project)
    assert {s["run"]: s["incomplete_queries"] for s in report["systems"]} == {"good": ["q1"], "weak": ["q1"]}
    assert {(r["run"], r["query_id"]) for r in report["per_query"] if r["incomplete"]} == {("good", "q1"),
                                                                                            ("weak", "q1")}
    assert report["cache"]["failures"] == 3
    assert all(s["grade_counts"].get("failed") for s in report["systems"])


def test_runs_sharing_no_query_with_the_banks_are_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "runs" / "good.run").write_text("Q1 Q0 p1 1 3.0 good\nquery-2 Q0 p4 1 1.0 good\n")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*1 of 2 runs share no query with the banks*run 'good' answers 'Q1', 'query-2' (near matches: 'Q1' ~ 'q1'*"
        "The banks ask 'q1', 'q2'.*"])
    assert _graded(project) == []  # nothing was graded


@pytest.mark.parametrize("value", ["nan", "inf", "1.5", "-0.1", "high", "good="])
def test_gate_values_are_checked(project: pytest.Pytester, value: str) -> None:
    result = project.runpytest("banks", f"--exam-fail-under={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-fail-under*"])
    assert _graded(project) == []


def test_a_nan_gate_in_the_ini_file_is_rejected(project: pytest.Pytester) -> None:
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\nexam_fail_under = nan\n")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exam_fail_under*'nan' must be a finite number in 0..1*"])


def test_partial_sessions_write_apart_marked_partial(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    full = (project.path / "reports" / "exam-report.json").read_text()
    result = project.runpytest("banks", "-k", "q1")
    result.stdout.fnmatch_lines(["*reports: reports/partial/*"])
    assert (project.path / "reports" / "exam-report.json").read_text() == full  # the full exam's report stands
    partial = _report(project, "reports/partial")
    assert partial["partial"] == "6 of 8 cases ran (-k 'q1')"
    assert _report(project)["partial"] is None


# --- 2. fail fast -------------------------------------------------------------------------------


def test_path_options_in_the_space_form(project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``--exam-cache PATH`` with a space: pytest takes PATH for a test path while it chooses its
    rootdir; when that moves the rootdir away from the project it is explained instead of losing the
    project config, and when it does not (``banks`` keeps it) the command runs (tests/plugin/test_front_ends.py
    has the other cases)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "grades.sqlite"
    elsewhere.write_bytes(b"")
    result = project.runpytest("--exam-cache", str(elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exam-cache {elsewhere}: pytest read * as a test path*write "
                                 f"--exam-cache={elsewhere} instead*"])
    kept = project.runpytest("banks", "--exam-cache", str(elsewhere))
    assert kept.ret == pytest.ExitCode.OK, kept.stderr.str()
    inside = project.runpytest("banks", "--exam-cache", ".cache/other.sqlite")
    assert inside.ret == pytest.ExitCode.OK
    assert (project.path / ".cache" / "other.sqlite").exists()


@pytest.mark.parametrize(("option", "message"), [
    ("--exam-baseline=god", "--exam-baseline: no run named 'god'. Did you mean 'good'? Runs: good, weak"),
    ("--exam-fail-under=wek=0.5", "--exam-fail-under wek=exam-cover:0.5: no run named 'wek'. Did you mean 'weak'?*"),
    ("--exam-compare=old/0007_main.json", "*--exam-compare*old/0007_main.json*no such report file*"),
    ("--exam-compare-fail=exam-cover:0.1", "--exam-compare-fail needs --exam-compare [[]REF[]]*"),
])
def test_options_that_need_only_the_inputs_are_checked_before_grading(project: pytest.Pytester, option: str,
                                                                     message: str) -> None:
    result = project.runpytest("banks", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])
    assert _graded(project) == []
    assert not (project.path / "reports" / "exam-report.json").exists()


def test_an_unwritable_report_folder_is_found_before_grading(project: pytest.Pytester) -> None:
    (project.path / "reports").write_text("a file where the report folder should be")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-report-dir reports: exists and is not a folder*"])
    assert _graded(project) == []


# --- 3. per-run gates and regression gates ------------------------------------------------------


@pytest.mark.parametrize(("gates", "failing"), [
    (["0.5"], ["weak"]),
    (["0.5", "weak=0.3"], []),  # the baseline kept on purpose has its own, lower threshold
    (["0.5", "weak=0.4"], ["weak"]),
    (["0.5", "good=1"], ["weak"]),
    (["n-exam:0.2"], []),
    (["good=nugget-f:0.9", "weak=ndcg@10:0.9"], ["weak"]),
])
def test_thresholds_per_run_and_measure(project: pytest.Pytester, gates: list[str], failing: list[str]) -> None:
    result = project.runpytest("banks", *(f"--exam-fail-under={g}" for g in gates))
    lines = [line for line in result.stdout.lines if line.startswith("FAIL")]
    assert sorted({line.split("run '")[1].split("'")[0] for line in lines}) == failing
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if failing else pytest.ExitCode.OK)


def test_thresholds_from_the_ini_file(project: pytest.Pytester) -> None:
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\nexam_fail_under =\n    0.5\n    weak=0.3\n")
    assert project.runpytest("banks").ret == pytest.ExitCode.OK


def test_compare_catches_a_drop_and_ignores_noise(project: pytest.Pytester) -> None:
    """A kept report, then: the same exam (no change: passes), a weak run that lost a passage (a drop of
    0.1667 beyond the allowed 0.1: fails, both the drop and its paired test are reported)."""
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    assert (project.path / ".exam-history" / "0001_main.json").exists()
    same = project.runpytest("banks", "--exam-compare", "--exam-compare-fail=exam-cover:0.1")
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()
    assert not [line for line in same.stdout.lines if line.startswith("FAIL")]
    same.stdout.fnmatch_lines(["*EXAM-Cover@20, n-EXAM@20 against 0001_main.json*"])

    (project.path / "runs" / "weak.run").write_text("q1 Q0 p3 1 3.0 weak\nq2 Q0 p5 1 1.0 weak\n")
    dropped = project.runpytest("banks", "--exam-compare=main", "--exam-compare-fail=exam-cover:0.1")
    assert dropped.ret == pytest.ExitCode.TESTS_FAILED
    dropped.stdout.fnmatch_lines([
        "FAIL run 'weak' regressed on EXAM-Cover@20 against 0001_main.json: 0.3333 -> 0.0000 (-0.3333; allowed drop "
        "exam-cover:0.1); paired test over 2 queries p = *, not significant at alpha 0.05"])
    relative = project.runpytest("banks", "--exam-compare=0001", "--exam-compare-fail=exam-cover:100%")
    assert relative.ret == pytest.ExitCode.OK  # a drop within the relative allowance


def test_autosave_keeps_numbered_reports(project: pytest.Pytester) -> None:
    project.runpytest("banks", "--exam-autosave")
    project.runpytest("banks", "--exam-autosave")
    kept = sorted(p.name for p in (project.path / ".exam-history").iterdir())
    assert [name[:5] for name in kept] == ["0001_", "0002_"]
    assert json.loads((project.path / ".exam-history" / kept[0]).read_text())["systems"]


def test_baseline_prints_every_difference_even_when_none_is_significant(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-baseline=good")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*against baseline 'good'*", "*weak*"])


# --- 4. say what was missed ---------------------------------------------------------------------


def test_question_text_in_ids_and_messages_but_never_for_secret_banks(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text("queries:\n  - id: q2\n    text: second query\n    questions:\n      - Which module creates "
                    "virtual environments?\n")
    shown = project.runpytest("banks", "-v", "-rs")
    shown.stdout.fnmatch_lines([
        "banks/exam.yaml::q2::q2/which-module-creates-virtual-environments-*[[]weak[]] MISSED*",
        "MISSED banks/exam.yaml::q2::q2/which-module-creates-*[[]weak[]] - missed 'Which module creates virtual "
        "environments?': best grade 0 (passage p5 'another useless passage', reason '0') < min grade 4 in the run's top 20"])
    outcomes = _report(project)["outcomes"]
    assert {o["text"] for o in outcomes} == {"Which module creates virtual environments?"}

    bank.write_text("secret: true\n" + bank.read_text())
    hidden = project.runpytest("banks", "-v", "-rs", "-l", "--junitxml=junit.xml")
    everything = hidden.stdout.str() + hidden.stderr.str() + (project.path / "junit.xml").read_text()
    everything += (project.path / "reports" / "exam-report.json").read_text()
    assert "virtual" not in everything.lower() and "which-module" not in everything
    hidden.stdout.fnmatch_lines(["banks/exam.yaml::q2::q2/*[[]weak[]] MISSED*"])
    assert {o["text"] for o in _report(project)["outcomes"]} == {None}


def test_json_report_lists_each_runs_outcome_per_test_point(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    outcomes = {(o["run"], o["test_point_id"]): o for o in _report(project)["outcomes"]}
    assert len(outcomes) == 8
    missed = outcomes[("weak", "q2/c")]
    assert (missed["outcome"], missed["best_grade"], missed["best_passage"], missed["text"]) == (
        "missed", 0, "p5", "question c")
    assert outcomes[("good", "q2/c")]["outcome"] == "answered"


def test_space_form_keeps_working_for_paths_inside_the_project(project: pytest.Pytester) -> None:
    (project.path / "out").mkdir()
    result = project.runpytest("banks", "--exam-report-dir", "out")
    assert result.ret == pytest.ExitCode.OK
    assert Path(project.path / "out" / "exam-report.json").exists()
