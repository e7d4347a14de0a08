"""EXAM-Qrels measures (trec_eval over qrels derived from grades) say nothing of a run of generated answers
(issue 27, item 4): such a run gets no value for them, in the JSON report, per query, the terminal's table,
evaluate's tables and document, never a 0 in their place; a gate on one for such a run says why; the ranked
runs of the same exam keep theirs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import evaluation_boards, report_means, report_values, table_rows

pytest_plugins = ["pytester"]

EXAM_HARNESS = str(Path(sys.executable).parent / "exam-harness")
# the marker grader covers q1/a and q1/b with this answer, q2/c with the next: a good answer
ANSWERS = "".join(json.dumps(row) + "\n" for row in (
    {"query_id": "q1", "run": "gen", "response": "It answers [a] and [b]."},
    {"query_id": "q2", "run": "gen", "response": "It answers [c]."}))
QRELS_MEASURES = ("P@20", "map", "ndcg@10", "mrr")


@pytest.fixture
def mixed(project: pytest.Pytester) -> pytest.Pytester:
    """The marker project's two ranked runs and one run of generated answers."""
    (project.path / "runs" / "gen.responses.jsonl").write_text(ANSWERS)
    return project


def _report(project: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return report


def test_a_generated_run_gets_no_qrels_measure_in_the_report_or_the_table(mixed: pytest.Pytester) -> None:
    result = mixed.runpytest("banks", "-p", "no:cacheprovider", *(f"--exam-measures={m}" for m in QRELS_MEASURES),
                             "--exam-html", "html")
    report = _report(mixed)
    gen = next(s for s in report["systems"] if s["run"] == "gen")
    assert gen["generated"] is True
    for measure in QRELS_MEASURES:
        means = report_means(report, measure)
        assert set(means) == {"good", "weak"}, measure  # the ranked runs keep theirs; no 0 for the answers
        values = report_values(report, measure)
        assert [v for (run, _q), v in values.items() if run == "gen"] == [None, None], measure
        assert all(v is not None for (run, _q), v in values.items() if run != "gen"), measure
    assert not any(name.startswith(("P(", "map(", "ndcg(", "mrr(")) for name in gen["scores"])
    assert report_means(report, "exam-cover")["gen"] == pytest.approx((2 / 3 + 1) / 2)  # the exam's measures stay
    rows = table_rows(result.stdout.str(), "EXAM-Qrels measures")
    assert rows["gen"] and set(rows["gen"]) == {"–"}, rows
    assert all(cell != "–" for cell in rows["good"]), rows
    page = (mixed.path / "html" / "index.html").read_text()
    dashes = {run: len(re.findall(r'data-v="">–</td>', re.search(rf'<tr class="run-row" data-run="{run}">(.*?)</tr>',
                                                                   page, re.S).group(1)))  # type: ignore[union-attr]
              for run in ("gen", "good")}
    assert dashes == {"gen": len(QRELS_MEASURES) * 3, "good": 0}  # each measure for each of the 3 label variants


def test_a_gate_on_a_qrels_measure_names_why_a_generated_run_has_no_value(mixed: pytest.Pytester) -> None:
    summary = mixed.path / "summary.md"
    result = mixed.runpytest("banks", "-p", "no:cacheprovider", "--exam-measures", "P@20",
                             "--exam-fail-under", "P@20:0.05", "--exam-fail-under", "gen=P@20:0.05",
                             "--exam-markdown", str(summary))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL P@20 is not scored for generated answers (it measures a ranking of "
                                 "passages, over EXAM-Qrels), and run 'gen' is a run of generated answers, so it "
                                 "cannot meet its threshold 0.05*"])
    checks = {(c["run"], c["gate"]): c for c in _report(mixed)["verdict"]["gates"]
              if c["gate"] == "exam-fail-under"}
    assert set(checks) == {("gen", "exam-fail-under"), ("good", "exam-fail-under"), ("weak", "exam-fail-under")}
    assert checks[("gen", "exam-fail-under")]["value"] is None and not checks[("gen", "exam-fail-under")]["passed"]
    assert checks[("good", "exam-fail-under")]["passed"]
    gate_rows = [line for line in summary.read_text().splitlines() if line.startswith("| gen | P@20")]
    assert gate_rows == ["| gen | P@20 | – | 0.05 | ❌ |"]


def test_a_threshold_for_every_run_gates_only_the_ranked_runs_on_a_qrels_measure(mixed: pytest.Pytester) -> None:
    mixed.runpytest("banks", "-p", "no:cacheprovider", "--exam-measures", "P@20", "--exam-fail-under", "P@20:0.0")
    checks = [c for c in _report(mixed)["verdict"]["gates"] if c["gate"] == "exam-fail-under"]
    assert sorted(c["run"] for c in checks) == ["good", "weak"]
    assert all(c["passed"] for c in checks)


def test_evaluate_gives_a_generated_run_no_qrels_measure(mixed: pytest.Pytester) -> None:
    out = mixed.path / "evaluation.json"
    result = mixed.run(EXAM_HARNESS, "evaluate", "--bank", "banks/exam.yaml", "--grader", "marker", "--cache",
                       "none", "--report-dir", "none", "--no-progress", "--min-grade", "4", "--labels", "max-grade",
                       "--measures", "P@20", "--per-query", "--json", str(out), "runs/collection.tsv",
                       "runs/good.run", "runs/weak.run", "runs/gen.responses.jsonl")
    assert result.ret == 0, result.stderr.str()
    boards = {b["measure"]: b for b in evaluation_boards(json.loads(out.read_text()))}
    assert set(boards["P@20"]["systems"]) == {"good", "weak"}
    assert set(boards["P@20"]["per_query"]) == {"good", "weak"}
    assert set(boards["exam-cover@20"]["systems"]) == {"gen", "good", "weak"}
    rows = table_rows(result.stdout.str(), "Leaderboards at grade ≥ 4")
    titles = [cell.strip() for cell in result.stdout.str().splitlines()[
        next(i for i, line in enumerate(result.stdout.str().splitlines()) if line.startswith("Leaderboards")) + 2
    ].strip("┃").split("┃")]
    at = titles.index("P@20") - 1  # the first title is the run column's
    assert rows["gen"][at] == "–" and rows["good"][at] != "–", (titles, rows)


def test_an_allowed_drop_on_a_qrels_measure_leaves_a_generated_run_out(mixed: pytest.Pytester) -> None:
    """Neither report holds a value for the generated run: there is no change to check, and no failed check."""
    mixed.runpytest("banks", "-p", "no:cacheprovider", "--exam-measures=P@20")
    before = mixed.path / "before.json"
    before.write_text((mixed.path / "reports" / "exam-report.json").read_text())
    mixed.runpytest("banks", "-p", "no:cacheprovider", "--exam-measures=P@20", f"--exam-compare={before}",
                    "--exam-compare-fail=P@20:0.1")
    checks = [c for c in _report(mixed)["verdict"]["gates"] if c["gate"] == "exam-compare-fail"]
    assert sorted(c["run"] for c in checks) == ["good", "weak"]
    assert all(c["passed"] for c in checks), checks


def test_an_exam_of_generated_answers_alone_plans_no_qrels_measure(mixed: pytest.Pytester) -> None:
    for name in ("good.run", "weak.run"):
        (mixed.path / "runs" / name).unlink()
    result = mixed.runpytest("banks", "-p", "no:cacheprovider", "--exam-measures=P@20", "--exam-fail-under=P@20:0.05")
    report = _report(mixed)
    assert [s["run"] for s in report["systems"]] == ["gen"]
    names = [m["name"] for m in report["measures"]]
    assert "exam-cover(tau=4)@20" in names and not [n for n in names if n.startswith("P(")], names
    assert "EXAM-Qrels measures" not in result.stdout.str()
    # no EXAM-Qrels either: every one would be an empty file (a generated answer is no collection passage)
    assert not list((mixed.path / "reports").glob("*.qrels")) and ".qrels" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL P@20 is not scored for generated answers (it measures a ranking of "
                                 "passages, over EXAM-Qrels), and run 'gen' is a run of generated answers*"])


def test_evaluate_against_a_generated_baseline_compares_only_the_measures_it_has(mixed: pytest.Pytester) -> None:
    out = mixed.path / "evaluation.json"
    result = mixed.run(EXAM_HARNESS, "evaluate", "--bank", "banks/exam.yaml", "--grader", "marker", "--cache",
                       "none", "--report-dir", "none", "--no-progress", "--labels", "max-grade", "--measures", "P@20",
                       "--baseline", "gen", "--json", str(out), "--", "runs/collection.tsv", "runs/good.run",
                       "runs/weak.run", "runs/gen.responses.jsonl")
    assert result.ret == 0, result.stderr.str()  # was: "baseline run not found" (P@20 holds no value of gen)
    significance = json.loads(out.read_text())["sections"]["significance"]  # schema 4.1: a section
    tested = {m["measure"].split("(")[0]: m["runs"] for m in significance["measures"]}
    assert "P" not in tested and significance["baseline"] == "gen"
    assert set(tested["exam-cover"]) == {"good", "weak"}


QRELS_FILES = ("exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels")


def test_a_generated_run_changes_neither_the_written_qrels_nor_the_ranked_runs_values(project: pytest.Pytester) -> None:
    """A generated answer's segment is no passage of the collection: the written qrels hold none, and the
    ranked runs' MAP, nDCG and R-prec are those of the exam without the generated run (before, each answer
    segment was a relevant passage no ranking could retrieve, and lowered them)."""
    measures = [f"--exam-measures={m}" for m in ("map", "ndcg@10", "rprec")]
    project.runpytest("banks", "-p", "no:cacheprovider", *measures)
    alone_report = _report(project)
    alone = {name: (project.path / "reports" / name).read_text() for name in QRELS_FILES}
    (project.path / "runs" / "gen.responses.jsonl").write_text(ANSWERS)
    project.runpytest("banks", "-p", "no:cacheprovider", *measures)
    report = _report(project)
    assert {s["run"] for s in report["systems"]} == {"gen", "good", "weak"}
    for name in QRELS_FILES:
        text = (project.path / "reports" / name).read_text()
        assert text == alone[name] and text, name
        assert "gen-" not in text, name
    for measure in ("map", "ndcg@10", "rprec"):
        assert report_means(report, measure) == report_means(alone_report, measure), measure
        assert report_means(report, measure)["good"] > 0, measure  # the comparison says something


def test_evaluate_writes_qrels_without_generated_segments(mixed: pytest.Pytester) -> None:
    common = ["evaluate", "--bank", "banks/exam.yaml", "--grader", "marker", "--cache", "none", "--report-dir",
              "none", "--no-progress", "--min-grade", "4", "--measures", "map", "--qrels-dir"]
    runs = ["runs/collection.tsv", "runs/good.run", "runs/weak.run"]
    alone = mixed.run(EXAM_HARNESS, *common, "alone", *runs)
    with_gen = mixed.run(EXAM_HARNESS, *common, "mixed", *runs, "runs/gen.responses.jsonl")
    assert alone.ret == with_gen.ret == 0, alone.stderr.str() + with_gen.stderr.str()
    names = sorted(p.name for p in (mixed.path / "alone").glob("*.qrels"))
    assert names and names == sorted(p.name for p in (mixed.path / "mixed").glob("*.qrels"))
    for name in names:
        text = (mixed.path / "mixed" / name).read_text()
        assert text == (mixed.path / "alone" / name).read_text() and "gen-" not in text, name
