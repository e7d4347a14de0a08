"""``exam-harness verdict REPORT.json [gate options]`` reaches the verdict and the exit status of the
session that wrote the document, decided by the one pure ``decide`` (exam_harness/results/verdict.py):
for a pass, a gate failure, a regression and an incomplete run; and from an ``evaluate`` document.
``evaluate`` writes every writer's files (exam_harness/report/writers.py), read back here."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.report.writers import report_set_names
from exam_harness.results.document import read_document
from exam_harness.results.schema import ExamReport, Verdict
from exam_harness.results.verdict import Checks, decide
from tests.helpers import COLLECTION, in_tree_writers, write_exam

pytest_plugins = ["pytester"]


def _same_verdict(project: pytest.Pytester, session: pytest.RunResult, capsys: pytest.CaptureFixture[str],
                  *options: str) -> list[str]:
    """Run ``verdict`` on the session's report with ``options``: its exit status is the session's and it
    says every check the session's report holds, with the same message; returns the FAIL lines."""
    path = project.path / "reports" / "exam-report.json"
    saved = Verdict.model_validate(json.loads(path.read_text())["verdict"])
    capsys.readouterr()
    code = main(["verdict", str(path), *options])
    said = capsys.readouterr()
    assert code == session.ret, said.out + said.err
    assert said.out.splitlines()[-1].startswith(f"verdict: {'passed' if saved.passed else 'failed'} "
                                                f"({len(saved.gates)} check")
    printed = [line for line in (said.out + said.err).splitlines()
               if not line.startswith("verdict: ") and " exam case" not in line]  # failed cases: said apart
    assert printed == [g.message for g in saved.gates]
    return [line for line in printed if line.startswith("FAIL")]


def test_a_passing_session(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    session = project.runpytest("banks", "--exam-fail-under=0.2")
    assert session.ret == pytest.ExitCode.OK
    assert _same_verdict(project, session, capsys, "--fail-under", "0.2") == []


def test_a_gate_failure(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    session = project.runpytest("banks", "--exam-fail-under=0.5", "--exam-fail-under=good=nugget-f:0.1")
    assert session.ret == pytest.ExitCode.TESTS_FAILED
    failed = _same_verdict(project, session, capsys, "--fail-under", "0.5", "--fail-under", "good=nugget-f:0.1")
    assert len(failed) == 1 and "not reached by run 'weak'" in failed[0]
    # without the gate the same document passes: the verdict is the options', not the one stored
    assert main(["verdict", str(project.path / "reports" / "exam-report.json")]) == 0


def test_a_regression_against_a_kept_report(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert project.runpytest("banks", "--exam-save=main").ret == pytest.ExitCode.OK
    (project.path / "runs" / "weak.run").write_text("q1 Q0 p3 1 3.0 weak\nq2 Q0 p5 1 1.0 weak\n")
    session = project.runpytest("banks", "--exam-compare=main", "--exam-compare-fail=exam-cover:0.1")
    assert session.ret == pytest.ExitCode.TESTS_FAILED
    failed = _same_verdict(project, session, capsys, "--compare", "main", "--compare-fail", "exam-cover:0.1")
    assert len(failed) == 1 and failed[0].startswith("FAIL run 'weak' regressed on EXAM-Cover@20 against 0001_main")


def test_the_baseline_gate(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    session = project.runpytest("banks", "--exam-baseline=good", "--exam-resamples=500")
    assert _same_verdict(project, session, capsys, "--baseline", "good", "--resamples", "500") == []


def test_an_incomplete_run(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    (project.path / "runs" / "collection.tsv").write_text(COLLECTION.replace("answers [a] and [n]", "BROKEN [a]"))
    session = project.runpytest("banks")
    assert session.ret == pytest.ExitCode.TESTS_FAILED
    failed = _same_verdict(project, session, capsys)
    assert {line.split("run ")[1].split(" ")[0] for line in failed} == {"'good'", "'weak'"}
    assert all("rest on pairs that could not be graded" in line for line in failed)


def test_decide_is_pure(project: pytest.Pytester) -> None:
    """The same document and checks give the same verdict, and deciding leaves the document as it was."""
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    document = read_document(project.path / "reports" / "exam-report.json")
    assert isinstance(document, ExamReport)
    before = document.model_dump()
    from exam_harness.config.gates import parse_threshold

    checks = Checks(thresholds=(parse_threshold("0.5"),))
    first = decide(document, checks)
    assert decide(document, checks) == first and not first.passed
    assert document.model_dump() == before


def test_usage_errors_exit_4(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    report = str(project.path / "reports" / "exam-report.json")
    assert main(["verdict", report, "--fail-under", "no-such-measure:0.5"]) == 4
    assert main(["verdict", report, "--compare", "latest", "--compare-required"]) == 4
    assert "--compare-required" in capsys.readouterr().err
    assert main(["verdict", str(project.path / "runs" / "weak.run")]) == 4
    assert main(["verdict", report, "--compare-fail", "exam-cover:0.1"]) == 4
    assert "--compare-fail needs --compare [REF]" in capsys.readouterr().err


# --- evaluate: every writer, and a verdict from its document -------------------------------------------


def test_evaluate_writes_every_writer_and_its_document_takes_a_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    exam, official = write_exam(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code = main(["evaluate", str(exam), "--official", str(official), "--k", "2", "--min-grade", "3", "4",
                 "--bootstrap", "0", "--per-query", "--report-dir", "out", "--markdown", "summary.md",
                 "--html", "html", "--plot", "plots", "--export-workbench", "exam.jsonl.gz", "--json", "doc.json"])
    assert code == 0, capsys.readouterr().err
    out = tmp_path / "out"
    # the report set: every writer not written on request, as pytest's, with its manifest
    assert sorted(p.name for p in out.iterdir()) == [
        ".exam-report-set.json", "evaluation.json", "exam-at-least-2-min3.qrels", "exam-at-least-2-min4.qrels",
        "exam-count-min3.qrels", "exam-count-min4.qrels", "exam-max-grade.qrels"]
    assert report_set_names(in_tree_writers()) == ["qrels", "json", "trec-rag", "trec-rag-judgments", "trec-rag-answers"]
    document = json.loads((out / "evaluation.json").read_text())
    assert document == json.loads((tmp_path / "doc.json").read_text())  # --json: the same writer's file
    assert document["kind"] == "evaluation" and {s["run"] for s in document["systems"]} == {"A", "B", "C"}
    qrels = (out / "exam-count-min4.qrels").read_text().splitlines()
    assert qrels and all(len(line.split()) == 4 for line in qrels)
    markdown = (tmp_path / "summary.md").read_text()
    assert markdown.startswith("## exam-harness evaluate: 3 runs, tau 3, 4") and "Correlation" in markdown
    assert step.read_text() == markdown  # appended to $GITHUB_STEP_SUMMARY
    html = (tmp_path / "html" / "index.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "Correlation" in html
    assert {p.name for p in (tmp_path / "plots").iterdir()} == {"leaderboards.png", "leaderboards.svg"}
    assert (tmp_path / "plots" / "leaderboards.png").read_bytes().startswith(b"\x89PNG")
    with gzip.open(tmp_path / "exam.jsonl.gz", "rt", encoding="utf-8") as lines:
        assert {json.loads(line)[0] for line in lines} == {"q1", "q2"}
    # the verdict from evaluate's document: thresholds on its first tau's EXAM-Cover
    capsys.readouterr()
    assert main(["verdict", str(out / "evaluation.json"), "--fail-under", "0.3"]) == 1
    said = capsys.readouterr()
    assert "FAIL Required EXAM-Cover@2 of 0.3 not reached by run 'C': 0.2500" in said.err
    assert said.out.splitlines()[-1].startswith("verdict: failed (3 checks, 1 failed)")
    assert main(["verdict", str(out / "evaluation.json"), "--fail-under", "0.1", "--baseline", "A",
                 "--resamples", "200"]) == 0


def test_a_track_score_gated_over_grades_that_are_not_assignments_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A…W come from nugget-assignment grades only: a gate on A over self-ratings names that, not only that
    the report lacks A."""
    exam, _ = write_exam(tmp_path / "data")
    doc = tmp_path / "doc.json"
    assert main(["evaluate", str(exam), "--k", "2", "--bootstrap", "0", "--report-dir", "none", "--json", str(doc)]) == 0
    capsys.readouterr()
    assert main(["verdict", str(doc), "--fail-under", "A:0.4"]) == 1
    printed = " ".join(capsys.readouterr())  # the failures on stderr, the summary line on stdout
    assert "FAIL A is a TREC RAG track score, computed from nugget-assignment grades only" in printed
    assert "grader 'recorded' gave grades that are not nugget assignments" in printed
    assert "prompt=nugget-assignment" in printed
