"""Kept documents of schema 4.1 (and 4.0) with a cascade's judge notes read as 4.2 (issue 35's honest cascade).

Before 4.2 a cascade entry stated an unstratified audit's estimated miss rate (``kept``, ``audited``,
``audit_passes``, ``miss_rate``, ``interval``); since, a 95% lower bound of the kept share. A kept entry reads
without a bound invented for it: its figures under ``miss_estimate``, its statement as written, ``pairs`` =
``calls`` + ``filtered``, ``target`` the grader's ``target_recall``, the rest None; every view shows the old line
and a note after it, and the ``cascade-kept`` gate fails on it, saying why.

``tests/golden/cascade-4.1/``: a pytest report and an ``evaluate --json`` document written by the code before
the change (its README says how) and what that code printed for them."""

from __future__ import annotations

import copy
import html
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from exam_harness.cli import main
from exam_harness.report.evaluation_summary import evaluation_html, evaluation_markdown
from exam_harness.report.evaluation_tables import print_evaluation
from exam_harness.report.html import render_html
from exam_harness.report.markdown import escape, render_markdown
from exam_harness.report.terminal import render_to_text
from exam_harness.results.document import read_document, validate_document
from exam_harness.results.evaluation import EvaluationReport
from exam_harness.results.migrate import cascade_before_4_2
from exam_harness.results.read import read_report
from exam_harness.results.schema import SCHEMA_VERSION, ExamReport
from exam_harness.sections.judge_notes import BEFORE_4_2_NOTE, CascadeEstimate, JudgeNotes
from tests.paths import GOLDEN

KEPT = GOLDEN / "cascade-4.1"
DOCUMENTS = {"exam-report": "exam-report.json", "evaluation": "evaluation.json"}
OLD_KEYS = {"kept", "audited", "audit_passes", "miss_rate", "interval"}
NEW_UNRECORDED = ("found", "lost_at_most", "kept_lower_bound", "reached", "filter_seconds", "decider_seconds",
                  "saved_seconds")


def raw_of(name: str) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((KEPT / name).read_text())
    return raw


def old_entries(name: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = raw_of(name)["sections"]["judge-notes"]["cascade"]
    return entries


def with_notes(printed: str) -> str:
    """What a 4.1 document printed with the note after each of its cascade lines."""
    return "".join(line + (BEFORE_4_2_NOTE + "\n" if line.startswith("cascade: ") else "")
                   for line in printed.splitlines(keepends=True))


def notes_of(document: ExamReport | EvaluationReport) -> JudgeNotes:
    notes = document.sections["judge-notes"]
    assert isinstance(notes, JudgeNotes)
    return notes


@pytest.mark.parametrize("kind", DOCUMENTS)
def test_a_kept_4_1_document_with_cascade_notes_reads_as_4_2(kind: str) -> None:
    """Each entry keeps what 4.1 recorded (its statement, its miss-rate figures) and derives only what follows from
    it; the figures 4.1 did not record are None; the migrated document validates against today's schema."""
    name = DOCUMENTS[kind]
    raw = raw_of(name)
    assert raw["schema_version"] == "4.1" and raw["kind"] == kind and SCHEMA_VERSION == "4.2"
    old = old_entries(name)
    assert old and all(set(entry) >= OLD_KEYS and "kept_lower_bound" not in entry for entry in old)
    document = read_document(KEPT / name)
    assert document.kind == kind and document.schema_version == "4.1"  # read as 4.2, kept as written
    entries = notes_of(document).cascade
    assert [e.min_grade for e in entries] == [e["min_grade"] for e in old] == ([4] if kind == "exam-report" else [3, 4])
    for entry, written in zip(entries, old, strict=True):
        assert isinstance(entry, CascadeEstimate)
        assert entry.statement == written["statement"] and "estimated miss rate" in entry.statement
        assert (entry.calls, entry.filtered, entry.pairs) == (written["calls"], written["filtered"], 180)
        assert entry.pairs == entry.calls + entry.filtered
        assert entry.target == raw["settings"]["grader"]["options"]["target_recall"] == 0.95
        assert all(getattr(entry, field) is None for field in NEW_UNRECORDED)
        assert entry.warnings == []
        assert entry.miss_estimate is not None
        assert entry.miss_estimate.model_dump(mode="json") == {key: written[key] for key in OLD_KEYS}
    written_back = document.to_json() if isinstance(document, EvaluationReport) else document.model_dump(mode="json")
    dumped = json.loads(json.dumps(written_back))  # as each front end writes its document
    again = validate_document(dumped)  # what a reader writes back is a valid document of the schema
    assert notes_of(again).cascade == entries
    # the rest of the document is as written
    assert {key: value for key, value in dumped.items() if key != "sections"} == \
        {key: value for key, value in raw.items() if key != "sections"}
    assert {key: value for key, value in dumped["sections"].items() if key != "judge-notes"} == \
        {key: value for key, value in raw["sections"].items() if key != "judge-notes"}
    notes = {key: value for key, value in dumped["sections"]["judge-notes"].items() if key != "cascade"}
    assert notes == {key: value for key, value in raw["sections"]["judge-notes"].items() if key != "cascade"}


def test_the_kept_4_1_report_reads_where_kept_reports_are_read(capsys: pytest.CaptureFixture[str]) -> None:
    """--exam-compare, .exam-history, leaderboard and compare read a kept report with read_report."""
    report = read_report(KEPT / "exam-report.json")
    assert notes_of(report).cascade[0].kept_lower_bound is None
    assert main(["leaderboard", str(KEPT / "exam-report.json")]) == 0
    out = capsys.readouterr().out
    assert old_entries("exam-report.json")[0]["statement"] in out and BEFORE_4_2_NOTE in out
    assert main(["compare", str(KEPT / "exam-report.json"), str(KEPT / "exam-report.json")]) == 0


def test_the_terminal_shows_what_4_1_printed_with_the_note() -> None:
    report = read_document(KEPT / "exam-report.json")
    assert isinstance(report, ExamReport)
    assert render_to_text(report, color=False, width=400) == with_notes((KEPT / "exam-report.txt").read_text())
    evaluation = read_document(KEPT / "evaluation.json")
    assert isinstance(evaluation, EvaluationReport)
    buffer = io.StringIO()
    print_evaluation(evaluation, Console(file=buffer, width=400, color_system=None, highlight=False, markup=False))
    assert buffer.getvalue() == with_notes((KEPT / "evaluation.txt").read_text())
    assert buffer.getvalue().count(BEFORE_4_2_NOTE) == 2  # one per tau's entry


def test_markdown_and_html_show_the_old_line_and_the_note() -> None:
    report = read_document(KEPT / "exam-report.json")
    evaluation = read_document(KEPT / "evaluation.json")
    assert isinstance(report, ExamReport) and isinstance(evaluation, EvaluationReport)
    statement = old_entries("exam-report.json")[0]["statement"]
    markdown = render_markdown(report)
    assert f"{escape(statement)}\n\n{escape(BEFORE_4_2_NOTE)}" in markdown
    page = render_html(report)
    assert f'<p class="note">{html.escape(statement)}</p><p class="note">{html.escape(BEFORE_4_2_NOTE)}</p>' in page
    assert f"{statement}\n{BEFORE_4_2_NOTE}\n" in evaluation_markdown(evaluation)
    assert f"{html.escape(statement)}\n{html.escape(BEFORE_4_2_NOTE)}\n" in evaluation_html(evaluation)
    # a view that does not know the section (a viewer's generic rendering) shows its JSON: the old figures, the
    # unrecorded ones null
    generic = json.dumps(report.model_dump(mode="json")["sections"]["judge-notes"], indent=2)
    assert '"kept_lower_bound": null' in generic and '"miss_rate": 0.0' in generic


@pytest.mark.parametrize("kind", DOCUMENTS)
def test_the_cascade_kept_gate_fails_on_a_4_1_entry_saying_why(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """It has no lower bound: exam-harness verdict fails the gate at any limit, naming the schema, and passes the
    document without the gate."""
    path = str(KEPT / DOCUMENTS[kind])
    assert main(["verdict", path]) == 0
    capsys.readouterr()
    assert main(["verdict", path, "--fail-under", "cascade-kept:0.01"]) == 1
    err = capsys.readouterr().err
    tau = 4 if kind == "exam-report" else 3  # the report's tau; evaluate's first
    assert (f"FAIL cascade-kept: the document's cascade figures at tau={tau} were written as schema 4.1, which stated "
            "an estimated miss rate, not a 95% lower bound of the share of its decider's passes kept, so it cannot "
            "meet 0.01") in err


def test_the_schema_command_prints_4_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "exam-harness result document, schema 4.2"


def test_the_migration_records_nothing_4_1_did_not() -> None:
    """A given threshold (no target_recall) leaves the target None; an entry without an audit sample keeps its
    None miss rate; a 4.0 document migrates alike; a migrated entry is left alone when migrated again, and a
    3.x or 4.2 document is not touched."""
    raw = raw_of("exam-report.json")
    raw["settings"]["grader"]["options"].update(threshold=0.5, target_recall=None)
    entry = raw["sections"]["judge-notes"]["cascade"][0]
    entry.update(audited=0, audit_passes=0, miss_rate=None, interval=None)
    for version in ("4.0", "4.1"):
        migrated = cascade_before_4_2(copy.deepcopy({**raw, "schema_version": version}))
        [new] = migrated["sections"]["judge-notes"]["cascade"]
        assert new["target"] is None and new["pairs"] == 180 and new["kept_lower_bound"] is None
        assert new["miss_estimate"] == {"kept": 155, "audited": 0, "audit_passes": 0, "miss_rate": None,
                                        "interval": None}
        assert cascade_before_4_2(copy.deepcopy(migrated)) == migrated
        validate_document(migrated)
    for version in ("3.5", "4.2"):
        untouched = copy.deepcopy({**raw, "schema_version": version})
        assert cascade_before_4_2(copy.deepcopy(untouched)) == untouched


def test_a_4_2_entry_states_its_bound_and_an_old_one_none(tmp_path: Path) -> None:
    """The schema refuses a 4.2 entry without its bound and an old one claiming a bound beside its miss estimate,
    as a reader of the file says, naming the field."""
    from exam_harness.core.errors import InputError

    entry = {"min_grade": 4, "pairs": 11, "calls": 4, "filtered": 7, "found": 4, "lost_at_most": 7,
             "kept_lower_bound": 4 / 11, "target": None, "reached": None, "statement": "cascade: …"}
    assert CascadeEstimate.model_validate(entry).lines() == ["cascade: …"]
    with pytest.raises(ValueError, match="found, lost_at_most and kept_lower_bound"):
        CascadeEstimate.model_validate({**entry, "kept_lower_bound": None})
    old = {"kept": 4, "audited": 0, "audit_passes": 0, "miss_rate": None}
    with pytest.raises(ValueError, match="recorded no bound"):
        CascadeEstimate.model_validate({**entry, "miss_estimate": old})
    raw = raw_of("exam-report.json")
    raw["schema_version"] = SCHEMA_VERSION
    raw["sections"]["judge-notes"]["cascade"] = [{**entry, "kept_lower_bound": None}]
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="found, lost_at_most and kept_lower_bound") as caught:
        read_report(path)
    assert "sections" in str(caught.value) and str(path) in str(caught.value)
