"""The markdown summary (``--exam-markdown``, ``$GITHUB_STEP_SUMMARY``) as a user reads it: a golden file
of a fixed exam with gates and a reference, plus escaping and the counts it shares with JUnit and JSON.

Regenerate the golden file after an intended change with ``UPDATE_GOLDEN=1 pytest tests/report/test_summaries.py``.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

import tests.paths as tests_paths
from exam_harness.core.models import GraderSpec
from exam_harness.report.markdown import code, escape, render_markdown
from exam_harness.results.gate_checks import Change, GateCheck, Verdicts
from exam_harness.results.schema import (
    CacheSummary,
    ExamReport,
    MeasureInfo,
    Outcomes,
    QueryScore,
    Score,
    Settings,
    SystemScore,
    TestPointOutcome,
)

pytest_plugins = ["pytester"]
GOLDEN = tests_paths.GOLDEN / "summary.md"
REQUIRED_BANK = """\
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: question a}
      - {id: q1/b, text: "question b, with | a pipe", required: true}
      - {id: q1/d, text: question d nobody answers}
  - id: q2
    text: second query
    questions:
      - {id: q2/c, text: question c, required: true}
"""


def _project(project: pytest.Pytester) -> pytest.Pytester:
    (project.path / "banks" / "exam.yaml").write_text(REQUIRED_BANK)
    return project


def test_markdown_summary_matches_golden(project: pytest.Pytester) -> None:
    """The summary of a fixed exam: leaderboard, per-run gates, a regression against a kept report, missed
    required test points with their best passages. A weak run drops between the two sessions."""
    _project(project)
    project.runpytest("banks", "--exam-save=before")
    (project.path / "runs" / "weak.run").write_text("q1 Q0 p3 1 3.0 weak\nq2 Q0 p5 1 1.0 weak\n")
    result = project.runpytest(
        "banks", "--exam-markdown=summary.md", "--exam-fail-under=0.3", "--exam-fail-under=good=0.8",
        "--exam-compare", "--exam-compare-fail=exam-cover:0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = (project.path / "summary.md").read_text()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "summary.md differs from tests/golden/summary.md (UPDATE_GOLDEN=1 to accept)"
    result.stdout.fnmatch_lines(["markdown summary: summary.md"])


def test_github_step_summary_is_appended(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    step = project.path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    project.runpytest("banks")
    project.runpytest("banks")
    text = step.read_text()
    assert text.startswith("earlier step\n")
    assert text.count("## Exam results: EXAM-Cover@20") == 2


def test_missed_counts_agree_across_junit_markdown_and_json(project: pytest.Pytester) -> None:
    """One exam, three views of its misses: JUnit skipped cases with exam_outcome=missed/required-missed
    (failures), the JSON outcomes and the markdown table's columns."""
    _project(project)
    project.runpytest("banks", "--junitxml=junit.xml", "--exam-markdown=summary.md")
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    outcomes: dict[str, int] = {}
    for case in ET.parse(project.path / "junit.xml").getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == "exam_outcome":
                outcomes[prop.get("value", "")] = outcomes.get(prop.get("value", ""), 0) + 1
    json_missed = sum(o["outcome"] == "missed" for o in report["outcomes"])
    json_required = sum(o["outcome"] == "required-missed" for o in report["outcomes"])
    assert outcomes.get("missed", 0) == json_missed > 0
    assert outcomes.get("required-missed", 0) == json_required > 0
    lines = (project.path / "summary.md").read_text().splitlines()
    head = [cell.strip() for cell in next(line for line in lines if line.startswith("| # ")).split("|")]
    rows = [line.split("|") for line in lines if line.startswith(("| 1 ", "| 2 "))]
    missed, required = head.index("missed"), head.index("required missed")  # the columns by name
    assert sum(int(row[missed]) for row in rows) == json_missed
    assert sum(int(row[required]) for row in rows) == json_required


def _report(run: str, text: str | None) -> ExamReport:
    spec = GraderSpec(name="marker", version="1")
    return ExamReport(
        tool_version="0", created="2026-01-01T00:00:00+00:00",
        settings=Settings(grader=spec, k=20, min_grade=4, qrels_m=2, pool="judged", measures=[],
                          label_variants=[], banks=[], runs=[]),
        cache=CacheSummary(path=None, pairs=1, unique_pairs=1, hits=0, misses=1, graded=1, failures=0,
                           grading_seconds=0.0),
        queries=1, test_points=1,
        measures=[MeasureInfo(name="exam-cover(tau=4)@20", title="EXAM-Cover@20"),
                  MeasureInfo(name="n-exam-cover(tau=4,pool=judged,empty=skip)@20", title="n-EXAM@20")],
        systems=[SystemScore(run=run, queries=1, scores={"exam-cover(tau=4)@20": Score(mean=0.0, stderr=0.0)},
                             outcomes=Outcomes(required_missed=1))],
        per_query=[QueryScore(run=run, query_id="q|1", scores={"exam-cover(tau=4)@20": 0.0}, covered=0,
                              test_points=1)],
        outcomes=[TestPointOutcome(run=run, query_id="q|1", test_point_id="t`1", kind="question", required=True,
                                   text=text, outcome="required-missed", best_grade=2, best_passage="p<1>",
                                   reason="`rm -rf`", best_passage_text="<b>**passage**</b> | one")],
    )


def test_names_and_texts_cannot_break_the_markdown() -> None:
    text = render_markdown(_report("evil|run<script>", "**bold** [link](http://x) </details>"))
    assert "<script>" not in text and "evil\\|run&lt;script&gt;" in text
    assert "\\*\\*bold\\*\\* \\[link\\](http:&#8203;//x) &lt;/details&gt;" in text  # no autolink either
    assert "`` `rm -rf` ``" in text  # a code span with a longer fence than the backticks inside
    assert "“&lt;b&gt;\\*\\*passage\\*\\*&lt;/b&gt; \\| one”" in text  # the passage's text, markdown-inert
    assert text.count("<details>") == text.count("</details>") == 1


def test_secret_test_points_show_their_id_only() -> None:
    text = render_markdown(_report("run", None))
    assert "``t`1``" in text


def test_gates_and_changes_are_listed_pass_or_fail() -> None:
    report = _report("run", "t")
    verdicts = Verdicts(
        checks=[GateCheck("run", "exam-cover", 0.5, 0.0), GateCheck("run", "n-exam", 0.0, 0.0)],
        changes=[Change("run", "exam-cover", 0.5, 0.0, 10, 0.001, regressed=True)],
        reference="0001_main",
    )
    text = render_markdown(report, verdicts)
    assert "### Gates: 1 of 2 passed" in text
    assert "| run | EXAM-Cover@20 | 0.0000 | 0.5 | ❌ |" in text
    assert "| run | n-EXAM@20 | 0.0000 | 0 | ✅ |" in text
    assert "| run | EXAM-Cover@20 | 0.5000 | 0.0000 | -0.5000 | 0.001 (significant) | 10 | ❌ regressed |" in text
    assert "— ❌ 1 gate failed, 1 regression, 1 required test point missed" in text


@pytest.mark.parametrize(("raw", "shown"), [("a\nb", "a b"), ("x_y", "x\\_y"), ("#1", "\\#1")])
def test_escape_flattens_and_neutralises(raw: str, shown: str) -> None:
    assert escape(raw) == shown


def test_code_span_fence_is_longer_than_any_backtick_run() -> None:
    assert code("a``b") == "```a``b```"


def test_html_report_is_written_where_asked(project: pytest.Pytester) -> None:
    """``--exam-html DIR`` from the command line: one self-contained file with both runs and, in the
    drill-down, the text of the passage that came closest to a missed test point."""
    _project(project)
    result = project.runpytest("banks", "--exam-html", "html")
    result.stdout.fnmatch_lines(["HTML report: html/index.html"])
    page = (project.path / "html" / "index.html").read_text()
    assert "good" in page and "weak" in page
    assert "nothing useful here" in page  # p3, weak's best passage for the missed q1/b
    assert "http://" not in page and "https://" not in page
