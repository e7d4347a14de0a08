"""Ids from other teams' files never become paths (issue 39, finding 2; issue 37, item 9): one id rule
(exam_harness/core/ids.py) applied where each reader reads a run id, naming the file, line and field, before
anything is graded or written; and a last guard where a writer makes a file name from one. AutoJudge
Reports: tests/features/autojudge/test_report_ids.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exam_harness.cli import main
from exam_harness.core.errors import InputError, OutputError
from tests.helpers import files_under, outside
from tests.paths import SHARED_DATA
from tests.trec_rag_data import ANSWERS_2024, ANSWERS_2025, NUGGETS, write_lines

HOSTILE_RUN_IDS = ["../../x", "..", "a/b", "a\\b", ".hidden", "r" * 5000, "é" * 150]


def assignment_line(run: str) -> dict[str, object]:
    return {"query": "what causes tides", "qid": "t1", "answer_text": "moon gravity", "response_length": 2,
            "run_id": run, "nuggets": [{"text": "moon gravity", "importance": "vital", "assignment": "support"}]}


@pytest.mark.parametrize("run", HOSTILE_RUN_IDS, ids=lambda r: r[:12])
def test_a_hostile_run_id_in_an_assignment_file_writes_nothing_outside_the_output_folder(
        tmp_path: Path, run: str, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "a" / "b"
    given_file = write_lines(work / "team.jsonl", [assignment_line(run)])
    before = files_under(tmp_path)
    assert main(["evaluate", "--assignments", str(given_file), "--trec-rag-dir", str(work / "track"),
                 "--json", str(work / "out.json")]) == 4
    err = capsys.readouterr().err
    assert f"{given_file}:1: run_id must" in err and "[field 'run_id'" in err
    assert outside(tmp_path, before, work / "track") == {}
    assert not (work / "track").exists() or not any((work / "track").iterdir())  # refused before writing


@pytest.mark.parametrize("fmt", ["2024", "2025"])
@pytest.mark.parametrize("run", ["../../x", "r" * 5000], ids=["dotdot", "long"])
def test_a_hostile_run_id_in_an_answer_file_is_refused_before_grading(
        tmp_path: Path, fmt: str, run: str, capsys: pytest.CaptureFixture[str]) -> None:
    """It crashed after grading with a raw ValueError from the report writer (a 5,000-character id too)."""
    work = tmp_path / "a" / "b"
    rows = json.loads(json.dumps(ANSWERS_2024 if fmt == "2024" else ANSWERS_2025))
    for row in rows:
        (row if fmt == "2024" else row["metadata"])["run_id"] = run
    answers = write_lines(work / "runs" / "answers.jsonl", rows)
    bank = write_lines(work / "banks" / "nuggets.jsonl", NUGGETS)
    before = files_under(tmp_path)
    assert main(["evaluate", str(answers), "--bank", str(bank), "--grader", "answer-key", "--cache", "none",
                 "--report-dir", str(work / "out"), "--no-progress"]) == 4
    err = capsys.readouterr().err
    field = "run_id" if fmt == "2024" else "metadata.run_id"
    assert f"{answers}:1: run_id must" in err and f"[field '{field}'" in err
    assert "Traceback" not in err
    assert outside(tmp_path, before, work / "out") == {}


def test_a_run_tag_that_is_a_path_in_a_trec_run_file_is_refused_with_its_line(tmp_path: Path) -> None:
    from exam_harness.io.runs import load_runs

    run = tmp_path / "team.run"
    run.write_text("q1 Q0 d1 1 2.0 ok\nq1 Q0 d2 1 2.0 ../../x\n")
    with pytest.raises(InputError, match=r"team\.run:2: .*run name must not contain a path separator"):
        load_runs([run])


@pytest.mark.parametrize("run", HOSTILE_RUN_IDS, ids=lambda r: r[:12])
def test_the_writers_last_guard_makes_no_path_of_an_id(run: str) -> None:
    """A run name that reached a writer without passing a reader is an OutputError, never a path."""
    from exam_harness.features.trec_rag.answers import rag_answer_files
    from exam_harness.features.trec_rag.writers import per_run_files, rag_answers_name

    with pytest.raises(OutputError, match="cannot name a file after"):
        per_run_files({run: {"t1": {}}}, {})
    with pytest.raises(OutputError, match="cannot name a file after"):
        rag_answers_name(run)
    from exam_harness.core.answers import CitedAnswer, CitedSentence

    with pytest.raises(OutputError, match="cannot name a file after"):
        rag_answer_files([CitedAnswer(run=run, query_id="q", query="", references=(), sentences=(CitedSentence("A."),))])


@pytest.mark.slow
@given(st.text(max_size=300), st.sampled_from([".jsonl", ".metrics.jsonl", ".assignments.jsonl"]))
def test_every_name_the_rule_accepts_is_one_plain_file_name(name: str, suffix: str) -> None:
    from exam_harness.core.ids import MAX_NAME_BYTES, file_name, name_problem

    if name_problem(name, "run") is not None:
        return
    made = file_name(name, suffix, prefix="trec-rag-")
    assert Path(made).name == made and os.path.basename(made) == made
    assert "/" not in made and "\\" not in made and not made.startswith(".") and made not in (".", "..")
    assert len(made.encode("utf-8")) <= 255 and len(name.encode("utf-8")) <= MAX_NAME_BYTES


@pytest.mark.realdata
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")
@pytest.mark.parametrize("track", ["dl19", "dl20", "car"])
def test_every_official_run_name_of_the_published_tracks_obeys_the_rule(track: str) -> None:
    """The rule refuses paths, not real run tags: all 111 official runs of DL19, DL20 and CAR Y3 pass it."""
    from exam_harness.core.ids import name_problem

    names = list(json.loads((SHARED_DATA / track / "official-leaderboard.json").read_text()))
    assert names and [name for name in names if name_problem(name, "run") is not None] == []
