"""Built once on real data (issue 26, item 3): a pytest session replaying DL19's recorded FLAN-T5 grades
(``--exam-grader recorded`` over the genq question bank the grades were made for) and ``exam-harness
evaluate`` over the same files give documents whose measures, scores per run and per query, incomplete
markers and sections are equal field by field. Six of the 43 queries (all 37 runs) keep the session short."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from tests.report.support import _core

pytest_plugins = ["pytester"]

GRADED = "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
BANK = "dl19-genq-questions-v1.jsonl.gz"
QUERIES = 6


def _first_queries(source: Path, target: Path, query_of: Callable[[Any], str], keep: set[str] | None) -> set[str]:
    """The lines of ``source`` whose query is in ``keep`` (the first QUERIES lines when None), written to
    ``target``; returns their queries."""
    lines = gzip.decompress(source.read_bytes()).decode("utf-8").splitlines()
    kept = lines[:QUERIES] if keep is None else [line for line in lines if query_of(json.loads(line)) in keep]
    target.write_bytes(gzip.compress(("\n".join(kept) + "\n").encode("utf-8")))
    return {query_of(json.loads(line)) for line in kept}


@pytest.mark.slow
@pytest.mark.realdata
def test_pytest_and_evaluate_give_the_same_document_on_dl19_recorded_grades(
        shared_data: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    dl19 = shared_data / "dl19"
    queries = _first_queries(dl19 / GRADED, pytester.path / GRADED, lambda line: line[0], None)
    assert len(queries) == QUERIES
    assert _first_queries(dl19 / BANK, pytester.path / BANK, lambda line: line["query_id"], queries) == queries
    pytester.makeini(f"[pytest]\nexam_banks = {BANK}\nexam_runs = {GRADED}\nexam_report_dir = reports\n")
    session = pytester.runpytest(BANK, "-p", "no:cacheprovider", "--exam-grader", "recorded", "--exam-cache", "none",
                                 "--exam-min-grade", "3")
    assert session.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), session.stdout.str()  # misses fail
    report = json.loads((pytester.path / "reports" / "exam-report.json").read_text())
    assert report["partial"] is None and report["cache"]["failures"] == 0  # every pair has its recorded grade
    monkeypatch.chdir(pytester.path)
    out = pytester.path / "evaluation.json"
    assert main(["evaluate", GRADED, "--bank", BANK, "--grader", "recorded", "--cache", "none", "--min-grade", "3",
                 "--per-query", "--bootstrap", "0", "--no-progress", "--brief", "--json", str(out)]) == 0
    evaluation = json.loads(out.read_text())
    assert len(evaluation["systems"]) == 37 and len(evaluation["per_query"]) == 37 * QUERIES
    assert _core(report) == _core(evaluation)
