"""``evaluate``'s optional parts as sections (issue 26, item 2): the correlations with the official leaderboard,
significance against a baseline, agreement with the judgments, the external qrels' leaderboards and the TREC RAG
assignment agreement live under ``sections`` of the JSON document, and every view shows them where it did.

``tests/golden/evaluate-4.0/``: documents written by ``evaluate --json`` at schema 4.0 (before the change; the
hand-made exam with --official, --baseline, --min-answers, --qrels and --per-query, and the TREC RAG exam
against human assignments) and what ``evaluate`` printed for them (full and --brief, 400 columns)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from exam_harness.cli import main
from exam_harness.report.evaluation_tables import print_evaluation
from exam_harness.results.document import read_document
from exam_harness.results.evaluation import EvaluationReport
from tests.helpers import write_exam
from tests.paths import GOLDEN

KEPT = GOLDEN / "evaluate-4.0"
OLD_KEYS = {"official", "agreement", "min_answers", "direct_agreement", "external_qrels", "trec_rag_agreement"}
TITLES = [  # in the order evaluate prints them
    "Correlation with the official leaderboard", "Leaderboards at grade ≥ 3", "Leaderboards at grade ≥ 4",
    "Against baseline 'A' at grade ≥ 3", "Grades × human judgments", "Min answers = m",
    "Qrels file.qrels (level 1)", "Leaderboards over qrels files: correlation with the official leaderboard",
]


def printed(document: EvaluationReport, *, brief: bool = False) -> str:
    buffer = io.StringIO()
    print_evaluation(document, Console(file=buffer, width=400, color_system=None, highlight=False, markup=False),
                     brief=brief)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "sections"), [
    ("hand-made", {"correlations", "significance", "agreement", "external-qrels"}),
    ("trec-rag-human", {"trec-rag", "cost", "trec-rag-agreement"}),
])
def test_a_kept_4_0_evaluation_document_reads_as_4_1(name: str, sections: set[str]) -> None:
    """Its top-level parts and each leaderboard's correlation and significance become sections, typed by the
    registered sections, and it prints as it printed when it was written, full and brief."""
    raw = json.loads((KEPT / f"{name}.json").read_text())
    assert raw["schema_version"] == "4.0" and OLD_KEYS & set(raw)
    document = read_document(KEPT / f"{name}.json")
    assert isinstance(document, EvaluationReport)
    assert set(document.sections) == sections
    assert all(not isinstance(content, dict) for content in document.sections.values())  # typed
    written = document.to_json()
    assert not OLD_KEYS & set(written)
    assert all("correlation" not in stats and "significance" not in stats for stats in written["leaderboards"])
    assert printed(document) == (KEPT / f"{name}.txt").read_text()
    assert printed(document, brief=True) == (KEPT / f"{name}-brief.txt").read_text()


def test_the_evaluate_sections_in_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same exam and options as the kept 4.0 document: the JSON holds the parts under ``sections`` with the
    same content the 4.0 document held, and the terminal, markdown and HTML show them in the order they did."""
    path, official = write_exam(tmp_path / "data")
    qrels = tmp_path / "data" / "file.qrels"
    qrels.write_text("q1 0 p1 2\nq1 0 p2 1\nq2 0 p5 2\nq2 0 p6 1\n")
    out, markdown, html = tmp_path / "ev.json", tmp_path / "ev.md", tmp_path / "html"
    args = ["evaluate", str(path), "--official", str(official), "--min-grade", "3", "4", "--k", "2",
            "--measures", "P@2", "mrr", "--bootstrap", "50", "--baseline", "A", "--min-answers", "1", "2",
            "--qrels", str(qrels), "--per-query", "--no-progress"]
    assert main([*args, "--json", str(out), "--markdown", str(markdown), "--html", str(html)]) == 0
    terminal = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert set(doc["sections"]) == {"correlations", "significance", "agreement", "external-qrels"}
    assert not OLD_KEYS & set(doc)
    kept_document = read_document(KEPT / "hand-made.json")
    assert isinstance(kept_document, EvaluationReport)
    kept = json.loads(json.dumps(kept_document.to_json())
                      .replace("/tmp/h26fix/data", str(tmp_path / "data")))  # where the kept one read its files
    for name in doc["sections"]:
        assert doc["sections"][name] == kept["sections"][name], name
    assert doc["sections"]["external-qrels"]["official"] == json.loads(official.read_text())
    # the views: the terminal, the markdown summary and the HTML page show each part where evaluate did
    html_text = next(html.glob("*.html")).read_text()
    for text in (terminal, markdown.read_text(), html_text.replace("&#x27;", "'")):
        where = [text.index(title) for title in TITLES]
        assert where == sorted(where)
    document = read_document(out)
    assert isinstance(document, EvaluationReport)
    assert printed(document) == (KEPT / "hand-made.txt").read_text()
    capsys.readouterr()
    assert main([*args, "--brief"]) == 0
    brief = capsys.readouterr().out
    assert "Leaderboards at grade" not in brief and "Qrels file.qrels" not in brief
    where = [brief.index(title) for title in TITLES if title in printed(document, brief=True)]
    assert len(where) == 5 and where == sorted(where)  # no leaderboards, no qrels leaderboards
