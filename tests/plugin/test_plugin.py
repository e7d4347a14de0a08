"""The pytest plugin from outside (pytester): collection ids, outcomes, summary, exit codes, gates,
cache behaviour and reports, with a deterministic grader registered from a conftest.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import BANK, COLLECTION, CONFTEST, report_means

pytest_plugins = ["pytester"]

def graded(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "graded.log"
    return log.read_text().splitlines() if log.exists() else []


def test_collect_only_shows_readable_ids(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q", "banks")
    result.stdout.fnmatch_lines(
        [
            "banks/exam.yaml::q1::q1/a[good]",
            "banks/exam.yaml::q1::q1/a[weak]",
            "banks/exam.yaml::q2::q2/c[weak]",
        ]
    )
    assert result.ret == 0
    assert graded(project) == []  # collecting grades nothing


def test_outcomes_summary_and_leaderboard(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "-rA")
    # good answers all 4 test points; weak answers q1/a and q1/n through p1 at rank 2.
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*exam leaderboard*", "*good*", "*weak*", "*6 passed, 2 missed*"])
    assert result.ret == 0
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    covers = report_means(report)
    # good: q1 3/3, q2 1/1 -> 1.0; weak: q1 2/3, q2 0/1 -> mean 1/3
    assert covers["good"] == pytest.approx(1.0)
    assert covers["weak"] == pytest.approx((2 / 3 + 0) / 2)
    outcomes = {s["run"]: s["outcomes"] for s in report["systems"]}
    assert outcomes["weak"]["missed"] == 2 and outcomes["weak"]["answered"] == 2


def test_missed_case_is_reported_with_best_grade(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "-v", "-k", "q2 and weak")
    result.stdout.fnmatch_lines(["*q2/c?weak? MISSED*"])
    assert result.ret == 0


def test_required_miss_fails_the_session(project: pytest.Pytester) -> None:
    (project.path / "banks" / "exam.yaml").write_text(BANK.replace("{id: q2/c, text: question c}", "{id: q2/c, text: question c, required: true}"))
    result = project.runpytest("banks")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*FAILED banks/exam.yaml::q2::q2/c?weak?*best grade 0*"])
    assert result.ret == 1


def test_grading_failure_is_an_error_and_never_a_grade(project: pytest.Pytester) -> None:
    (project.path / "runs" / "collection.tsv").write_text(COLLECTION.replace("another useless passage", "BROKEN passage"))
    result = project.runpytest("banks")
    result.assert_outcomes(passed=6, errors=1)
    result.stdout.fnmatch_lines(["*ERROR*q2/c*weak*", "*grading failed for 1 passage*model server said 500*"])
    assert result.ret == 1
    # The failed pair was not cached: a second session asks the grader again.
    before = [line for line in graded(project) if line.startswith("p5 ")]
    project.runpytest("banks")
    after = [line for line in graded(project) if line.startswith("p5 ")]
    assert len(after) == 2 * len(before) == 2


@pytest.mark.parametrize(("limit", "code"), [("1", 1), ("0", 0), ("0.34", 1), ("0.3", 0)])
def test_fail_under_gate(project: pytest.Pytester, limit: str, code: int) -> None:
    result = project.runpytest("banks", f"--exam-fail-under={limit}")
    assert result.ret == code
    if code:
        result.stdout.fnmatch_lines([f"*Required EXAM-Cover@20 of {float(limit):g} not reached by run 'weak': 0.3333*"])
    else:
        assert "not reached" not in result.stdout.str()


def test_fail_under_from_ini(project: pytest.Pytester) -> None:
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\nexam_fail_under = 0.5\n")
    result = project.runpytest("banks")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*not reached by run 'weak'*"])


def test_second_session_grades_nothing(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    first = graded(project)
    # pool: q1 {p1,p2,p3} x 3 test points + q2 {p4,p5} x 1 = 11 pairs
    assert len(first) == 11
    result = project.runpytest("banks")
    assert graded(project) == first
    result.stdout.fnmatch_lines(["*cache 11 hits / 0 misses (100.0% hits)*"])


def test_editing_one_question_regrades_only_its_pairs(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    first = len(graded(project))
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(BANK.replace("question b", "question b reworded"))
    result = project.runpytest("banks")
    new = graded(project)[first:]
    assert sorted(new) == ["p1 q1/b", "p2 q1/b", "p3 q1/b"]
    result.stdout.fnmatch_lines(["*cache 8 hits / 3 misses*"])


def test_new_run_file_grades_only_new_passages(project: pytest.Pytester) -> None:
    project.runpytest("banks")
    first = len(graded(project))
    (project.path / "runs" / "third.run").write_text("q1 Q0 p1 1 1.0 third\nq2 Q0 p3 1 1.0 third\n")
    project.runpytest("banks")
    assert sorted(graded(project)[first:]) == ["p3 q2/c"]


def test_reports_qrels_parse_back_with_pytrec_eval(project: pytest.Pytester) -> None:
    import pytrec_eval

    project.runpytest("banks")
    reports = project.path / "reports"
    names = sorted(p.name for p in reports.glob("*.qrels"))
    assert names == ["exam-at-least-2-min4.qrels", "exam-count-min4.qrels", "exam-max-grade.qrels"]
    with open(reports / "exam-max-grade.qrels") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    assert qrels["q1"] == {"p1": 5, "p2": 5, "p3": 0}
    with open(reports / "exam-count-min4.qrels") as fh:
        assert pytrec_eval.parse_qrel(fh)["q1"]["p1"] == 2  # covers a and n


def test_json_report_validates_against_schema(project: pytest.Pytester) -> None:
    from exam_harness.results.read import read_report

    project.runpytest("banks")
    report = read_report(project.path / "reports" / "exam-report.json")
    assert report.settings.grader.name == "marker"
    assert report.settings.min_grade == 4
    assert {q.run for q in report.per_query} == {"good", "weak"}
    assert report.cache.misses == 11


def test_unknown_grader_is_a_usage_error_with_suggestion(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-grader", "markr")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown grader 'markr'. Did you mean 'marker'?*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_bad_bank_is_a_usage_error_naming_file_and_line(project: pytest.Pytester) -> None:
    (project.path / "banks" / "exam.yaml").write_text(BANK.replace("weight: 2", "weight: heavy"))
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exam.yaml:8*weight*heavy*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (project.path / "reports").exists()


def test_min_grade_above_grader_scale_is_rejected(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-min-grade", "9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exam-min-grade must be an integer in 1..5, got '9'*"])


def test_user_tests_use_exam_fixtures(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mine="""
        def test_good_beats_weak(exam_scores):
            covers = exam_scores.means("exam-cover")
            assert covers["good"] > covers["weak"]

        def test_every_run_answers_q1(exam_run):
            assert exam_run.top_k("q1", 1)
        """
    )
    result = project.runpytest("test_mine.py", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_every_run_answers_q1?good? PASSED*", "*test_every_run_answers_q1?weak? PASSED*"])


def test_report_hook_reaches_plugins(project: pytest.Pytester) -> None:
    conftest = project.path / "conftest.py"
    conftest.write_text(
        conftest.read_text()
        + "\ndef pytest_exam_report(report, plan):\n"
        "    print('custom reporter saw', len(report.systems), 'systems at tau', plan.min_grade)\n"
    )
    result = project.runpytest("banks", "-s")
    result.stdout.fnmatch_lines(["*custom reporter saw 2 systems at tau 4*"])


def test_deselected_cases_are_not_graded(project: pytest.Pytester) -> None:
    project.runpytest("banks", "-k", "q2")
    assert sorted(graded(project)) == ["p4 q2/c", "p5 q2/c"]


def test_report_dir_none_writes_nothing(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-report-dir", "none")
    assert result.ret == 0
    assert not (project.path / "reports").exists()
    result.stdout.fnmatch_lines(["*exam leaderboard*"])


def test_cases_of_a_bank_named_on_the_command_line(project: pytest.Pytester) -> None:
    other = project.path / "elsewhere"
    other.mkdir()
    Path(other / "extra.yaml").write_text(BANK.replace("q1/", "q1/x").replace("q2/", "q2/x"))
    result = project.runpytest("elsewhere/extra.yaml", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["elsewhere/extra.yaml::q1::q1/xa[good]"])


@pytest.mark.parametrize("workers", ["2", "4"])
def test_xdist_reports_equal_single_process(project: pytest.Pytester, workers: str) -> None:
    single = project.runpytest_subprocess("banks", "--exam-report-dir", "single", "--exam-cache", "one.sqlite")
    assert single.ret == 0
    parallel = project.runpytest_subprocess("banks", "-n", workers, "--exam-report-dir", "parallel", "--exam-cache", "two.sqlite")
    assert parallel.ret == 0, parallel.stdout.str()
    parallel.stdout.fnmatch_lines(["*exam leaderboard*", "*6 passed, 2 missed*"])
    for name in ("exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels"):
        assert (project.path / "single" / name).read_text() == (project.path / "parallel" / name).read_text()
    a, b = (json.loads((project.path / d / "exam-report.json").read_text()) for d in ("single", "parallel"))
    for r in (a, b):
        r.pop("created")
        r["cache"].pop("grading_seconds")
        r["cache"].pop("path")
    assert a == b
    # The controller graded every pair once; the workers only read the cache.
    assert len(graded(project)) == 2 * 11


WORKER_SHARE = """
import os
from exam_harness.pytest_plugins.state import GRADED_KEY

def pytest_runtest_teardown(item):
    graded = item.config.stash.get(GRADED_KEY, None)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if graded is not None:
        with open(f"share-{worker}.txt", "w") as out:
            out.write(" ".join(sorted(b.query.id for b in graded.banks)) + f" {len(graded.grading.grades)}")
"""


def test_xdist_workers_take_only_the_grades_of_their_own_cases(project: pytest.Pytester) -> None:
    """With --dist loadfile each worker runs one bank file: it holds that file's grades, not the exam's."""
    (project.path / "banks" / "other.yaml").write_text(BANK.replace("q1", "q3").replace("q2", "q4"))
    for name in ("good.run", "weak.run"):
        run = project.path / "runs" / name
        run.write_text(run.read_text() + run.read_text().replace("q1 ", "q3 ").replace("q2 ", "q4 "))
    project.makeconftest(CONFTEST + WORKER_SHARE)
    result = project.runpytest_subprocess("banks", "-n", "2", "--dist", "loadfile", "--exam-cache", "c.sqlite")
    assert result.ret == 0, result.stdout.str()
    shares = sorted((project.path / f"share-gw{i}.txt").read_text() for i in range(2))
    assert shares == ["q1 q2 11", "q3 q4 11"]  # 11 of the exam's 22 pairs each
    # graded once, by the controller: other.yaml repeats exam.yaml's texts, and ids are no part of a key
    assert len(graded(project)) == 11


def test_baseline_gate_names_the_significantly_worse_run(project: pytest.Pytester) -> None:
    # 12 queries where 'good' covers everything and 'weak' nothing: weak is significantly worse.
    bank = "queries:\n" + "".join(
        f"  - id: t{i}\n    text: query {i}\n    questions:\n      - {{id: t{i}/x, text: question x}}\n" for i in range(12)
    )
    (project.path / "banks" / "exam.yaml").write_text(bank)
    (project.path / "runs" / "collection.tsv").write_text("id\ttext\nyes\tanswers [x]\nno\tnothing\n")
    (project.path / "runs" / "good.run").write_text("".join(f"t{i} Q0 yes 1 1.0 good\n" for i in range(12)))
    (project.path / "runs" / "weak.run").write_text("".join(f"t{i} Q0 no 1 1.0 weak\n" for i in range(12)))
    result = project.runpytest("banks", "--exam-baseline", "good")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL run 'weak' is significantly worse than baseline 'good'*difference -1.0000*p = *"])
    better = project.runpytest("banks", "--exam-baseline", "weak")
    assert better.ret == 0  # good is better, not worse; the comparison is shown all the same
    better.stdout.fnmatch_lines(["*EXAM-Cover@20 against baseline weak*", "*good*▲ +1.0000*"])
    unknown = project.runpytest("banks", "--exam-baseline", "goood")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*goood*good*"])


def test_analysis_sections_on_request(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-analysis", "spurious", "--exam-analysis", "verify")
    assert result.ret == 0
    text = result.stdout.str()
    assert "spurious" in text.lower() and "verify" in text.lower()
    bad = project.runpytest("banks", "--exam-analysis", "nonsense")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
