"""The ``trec-rag-answers`` writer (issue 27, item 5): both front ends write each run of cited answers as a
TREC RAG 2025 answer file with segment-id citations (ragnarok's ``rag25_validation.py --format 2``), which
the project's own 2025 reader takes with no error and no warning; nothing for runs without citations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.features.trec_rag.answers import check_rag_answers
from exam_harness.features.trec_rag.writers import rag_answers_name
from tests.helpers import KEYWORD_CONFTEST
from tests.trec_rag_data import ANSWERS_2024, ANSWERS_2025, write_exam, write_lines

pytest_plugins = ["pytester"]

# a run of generated answers without citations: it gets no answer file
PLAIN = [{"query_id": "t1", "run": "plain", "response": "The moon gravity pulls the sea."}]
# a live system's cited answer as its recording writes it: a cited run like the TREC RAG files
LIVE = [{"query_id": "t1", "run": "live", "response": "Moon gravity. Sun gravity.", "references": ["d7", "d8"],
         "answer": [{"text": "Moon gravity.", "citations": [1]}, {"text": "Sun gravity.", "citations": [0, 1]}]}]
# the segment ids each answer's sentences cite, from the input files (2024: indexes into references)
CITED = {
    ("rag24", "t1"): [["d1"], ["d2", "d1"]], ("rag24", "2"): [["d3"], []],
    ("rag25", "t1"): [["d4", "d2"]], ("rag25", "2"): [["d3"]], ("live", "t1"): [["d8"], ["d7", "d8"]],
}


def _exam(root: Path) -> None:
    write_exam(root)
    write_lines(root / "runs" / "plain.responses.jsonl", PLAIN)
    write_lines(root / "runs" / "live.responses.jsonl", LIVE)
    (root / "conftest.py").write_text(KEYWORD_CONFTEST)


def _check_written(folder: Path) -> None:
    """The three cited runs' answer files (none for the uncited one) read back by the project's 2025 reader with
    no warning, each line the 2025 shape, each citation the segment id the input cited."""
    names = sorted(p.name for p in folder.glob("trec-rag-*.answers.jsonl"))
    assert names == [rag_answers_name("live"), rag_answers_name("rag24"), rag_answers_name("rag25")]
    for run, topics in (("rag24", {"t1", "2"}), ("rag25", {"t1", "2"}), ("live", {"t1"})):
        path = folder / rag_answers_name(run)
        part, check = check_rag_answers(path)
        assert part.warnings == [] and check.warnings == [], part.warnings
        assert check.citation_kind is not None and check.citation_kind[0] == "segment id"
        rows: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            meta = row["metadata"]
            assert meta["run_id"] == run and {"team_id", "narrative_id", "type", "narrative", "prompt"} <= set(meta)
            cited = [sentence["citations"] for sentence in row["answer"]]
            assert cited == CITED[(run, meta["narrative_id"])]
            assert all(c in row["references"] for sentence in cited for c in sentence)
        assert set(part.answers[run]) == topics
    given = {(str(r["metadata"]["narrative_id"]), r["metadata"]["type"]) for r in ANSWERS_2025}
    back = {(r["metadata"]["narrative_id"], r["metadata"]["type"])
            for r in map(json.loads, (folder / rag_answers_name("rag25")).read_text().splitlines())}
    assert back == given  # the 2025 file's own metadata is kept
    assert [r["topic"] for r in ANSWERS_2024] == [
        json.loads(line)["metadata"]["narrative"]
        for line in (folder / rag_answers_name("rag24")).read_text().splitlines()]


def test_the_pytest_session_writes_each_cited_run_in_the_2025_format(pytester: pytest.Pytester) -> None:
    _exam(pytester.path)
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\nexam_report_dir = reports\n"
                     "exam_grader = keyword\nexam_cache = none\n")
    result = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str() + result.stderr.str()  # missed nuggets are failures
    _check_written(pytester.path / "reports")


def test_evaluate_writes_each_cited_run_in_the_2025_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _exam(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["evaluate", "runs/rag24.jsonl", "runs/rag25.jsonl", "runs/plain.responses.jsonl",
                 "runs/live.responses.jsonl", "--bank",
                 "banks/nuggets.jsonl", "--grader", "keyword", "--cache", "none", "--no-progress", "--report-dir",
                 "out"])
    assert code == 0, capsys.readouterr().err
    _check_written(tmp_path / "out")
    assert rag_answers_name("rag24") in json.loads((tmp_path / "out" / ".exam-report-set.json").read_text())["files"]
