"""Outputs pinned before the one-core refactor: they must stay equal while the code is reshaped.

* ``exam-harness evaluate --json`` on DL19 with the recorded FLAN-T5 grades at tau 3, 4 and 5
  (realdata; every number compared to 1e-12);
* the example exam's JSON report and qrels files (``banks/`` x ``runs/`` with the embedding grader;
  the cosines its answers quote compared to a stated tolerance, see MODEL_OUTPUT_KEYS).

Regenerate only after an intended change: ``UPDATE_GOLDEN=1 pytest tests/realdata/test_pinned_outputs.py``,
and review the diff like code. Intended changes so far: the example report gained keys (schema 2.0:
outcomes, grade_counts, incomplete markers, decided_by; every earlier value equal), and the default
embedding grader decides test points with gold answers by the answer key (8 of 210 pairs: 6 outcomes
move to grade 5, 2 of them from missed to answered; 3 qrels lines per file change accordingly); and the
DL19 trec_eval measures order runs as trec_eval does (--tie-order score, the default): nine runs with
tied scores move (MRR up to 0.0116, nDCG@10 up to 0.0015); with --tie-order rank every figure equals the
earlier golden file to 1e-12 (checked when the default changed); schema 2.1 added the session's
verdict and each run's count of grades read by a fallback rule (keys only; every value equal); and the
example report became schema 3.0 (scores keyed by measure name): the 2.0 golden, read through
results/migrate.py, equals it to 1e-12; and schema 3.2 made ``evaluate``'s document the report's result core
in its own envelope: the DL19 document pinned before, rebuilt from today's, equals it to 1e-12
(``dl19-evaluate-recorded-before-3.2.json.gz``, kept for that check), while the example report gained
``kind`` and each measure's ``min_grade`` and ``k`` (keys only; every value equal); and it gained ``cost``
(an LLM grader's tokens and cost, docs/cost.md; null for the embedding grader: the key only); and the default embedding grader became version 5 (issue 20: sentence
windows, a support model with the query signal, an answer model for test points with gold answers, reasons as
answers): the example's grades, qrels lines and answers change, its ranking (strong > rag > weak) holds; and
trec_eval measures over EXAM-Qrels give a run of generated answers no value (issue 27): the generated run
``rag-generator`` lost its P, MAP, nDCG, R-prec and MRR keys in ``systems[]`` and ``per_query[]``, every other
value and every qrels line equal; and schema 4.1 moved ``evaluate``'s remaining optional parts (official
leaderboard and correlations, significance, agreement, external qrels) into ``sections``: the DL19 golden,
written as 4.0 and read through results/migrate.py, equals today's document to 1e-12 (the file is unchanged);
and the warning for required test points judged by the embedding grader alone no longer promises the cascade
at a fraction of the calls (issue 35: it sends what its filter cannot rule out, on a small pool every pair): the
example report's one line of that warning changed, every other value equal.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.results.migrate import evaluation_to_sections
from tests.built_once import built_once
from tests.helpers import evaluation_boards
from tests.paths import GOLDEN, REPO

TOLERANCE = 1e-12

# Model outputs the report writes as text: the embedding grader's ``answer`` (a cosine rounded to 4
# decimals, or a reason quoting it). The cosine of one pair differs by ~1e-7 across CPUs and library
# builds, and rounding can turn that into one unit of the 4th decimal ('0.3365' vs '0.3364'), so each
# decimal number in such a text may differ from the pinned one by MODEL_TEXT_TOLERANCE (1e-4 and a
# margin for the float subtraction); the words around the numbers, and integers, are compared exactly.
MODEL_OUTPUT_KEYS = frozenset({"answer", "reason"})  # "answer" until schema 3.1
MODEL_TEXT_TOLERANCE = 1.000001e-4
_DECIMAL = re.compile(r"[-+]?\d+\.\d+(?:[eE][-+]?\d+)?")


def assert_model_text_close(actual: Any, expected: Any, where: str) -> None:
    """``actual`` equals the pinned model-output text ``expected``, its decimal numbers to within
    MODEL_TEXT_TOLERANCE (see MODEL_OUTPUT_KEYS)."""
    if not isinstance(expected, str):
        assert_close(actual, expected, where)
        return
    assert isinstance(actual, str), f"{where}: {actual!r} != {expected!r}"
    assert _DECIMAL.split(actual) == _DECIMAL.split(expected), f"{where}: {actual!r} != {expected!r}"
    for got, pinned in zip(_DECIMAL.findall(actual), _DECIMAL.findall(expected), strict=True):
        assert abs(float(got) - float(pinned)) <= MODEL_TEXT_TOLERANCE, (
            f"{where}: {actual!r} != {expected!r} (numbers differ by more than {MODEL_TEXT_TOLERANCE:.0e})")


def assert_close(actual: Any, expected: Any, where: str = "$") -> None:
    """Equal JSON documents, numbers compared to TOLERANCE (absolute), the model-output texts of
    MODEL_OUTPUT_KEYS by :func:`assert_model_text_close`, everything else exactly."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {type(actual).__name__}"
        assert sorted(actual) == sorted(expected), f"{where}: keys {sorted(set(actual) ^ set(expected))} differ"
        for key in expected:
            compare = assert_model_text_close if key in MODEL_OUTPUT_KEYS else assert_close
            compare(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: lists differ in length"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, f"{where}[{i}]")
    elif isinstance(expected, float) or (isinstance(expected, int) and isinstance(actual, float)):
        assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{where}: not a number"
        assert math.isclose(actual, expected, rel_tol=0.0, abs_tol=TOLERANCE), f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def _golden_json(name: str, document: dict[str, Any]) -> dict[str, Any]:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_bytes(gzip.compress((json.dumps(document, indent=1, sort_keys=True) + "\n").encode(), mtime=0))
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 once"
    pinned: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return pinned


@pytest.mark.parametrize(
    ("actual", "expected", "close"),
    [
        ("0.3365", "0.3364", True),  # one unit of the 4th decimal: a rounding that moved
        ("0.3366", "0.3364", False),
        ("cosine 0.3365 < 0.4", "cosine 0.3364 < 0.4", True),
        ("cosine 0.3365 < 0.5", "cosine 0.3364 < 0.4", False),
        ("cosine 0.3364 >= 0.4", "cosine 0.3364 < 0.4", False),  # the words are exact
        ("gold answer found 2", "gold answer found 1", False),  # integers are exact
        ("0.3364", 0.3364, False),
        (None, None, True),
    ],
)
def test_model_output_texts_compare_with_a_stated_tolerance(actual: Any, expected: Any, close: bool) -> None:
    if close:
        assert_close({"answer": actual}, {"answer": expected})
    else:
        with pytest.raises(AssertionError):
            assert_close({"answer": actual}, {"answer": expected})


@pytest.mark.realdata
def test_dl19_evaluate_json_is_pinned(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(shared_data / "dl19")
    out = tmp_path / "dl19.json"
    code = main([
        "evaluate", "dl19-graded-flan-t5-large-selfrating.jsonl.gz", "--official", "official-leaderboard.json",
        "--min-grade", "3", "4", "5", "--json", str(out), "--brief", "--no-progress",
    ])
    assert code == 0
    document = json.loads(out.read_text())
    for key in ("created", "tool_version", "schema_version"):
        document.pop(key)
    document["grading"]["grading_seconds"] = 0.0
    # pinned as schema 4.0 wrote it (optional parts at the top and in leaderboards[]): read as 4.1 reads it
    assert_close(document, evaluation_to_sections(_golden_json("dl19-evaluate-recorded.json.gz", document)))
    # the document before schema 3.2 (its own leaderboards, not the report's result core): every number
    # it held, rebuilt from today's document, is equal to 1e-12
    before = json.loads(gzip.decompress((GOLDEN / "dl19-evaluate-recorded-before-3.2.json.gz").read_bytes()))
    assert_close(_as_before_3_2(document), before)
    # the queries n-EXAM leaves out at tau 5 (no passage of the pool covers a test point) are named
    (n_exam5,) = [b for b in evaluation_boards(document) if b["measure"] == "n-exam-cover@20" and b["min_grade"] == 5]
    assert len(n_exam5["dropped"]) == 3 and n_exam5["queries"] == 40


def _as_before_3_2(document: dict[str, Any]) -> dict[str, Any]:
    """``evaluate``'s document as it was written before schema 3.2, rebuilt from today's: one leaderboard
    per measure with its runs' means and standard errors, the grader inside the grading summary."""
    boards = []
    for board in evaluation_boards(document):
        old = {key: board[key] for key in ("measure", "label", "min_grade", "relevance_level", "queries", "systems",
                                             "stderr", "ci", "correlation", "significance") if key in board}
        boards.append(old)
    grading = document["grading"]
    settings = {key: value for key, value in document["settings"].items() if key != "grader"}
    settings["nugget_f"] = settings["nugget_f"] or None  # written as null when off
    return {
        "leaderboards": boards, "agreement": document["sections"]["agreement"]["tables"],
        "official": document["sections"]["correlations"]["official"],
        "collection": document["collection"], "settings": settings,
        "grading": {"source": grading["source"], "pairs": grading["pairs"], "unique_pairs": grading["unique_pairs"],
                    "cache_hits": grading["hits"], "graded": grading["graded"], "failures": grading["failures"],
                    "seconds": grading["grading_seconds"], "failure_examples": grading["failure_examples"],
                    "grader": {"name": "recorded", "model": document["settings"]["grader"]["model"],
                               "prompt_class": document["settings"]["grader"]["prompt_class"]}},
    }


def _run_example_cold(root: Path) -> None:
    import subprocess
    import sys

    for folder in ("banks", "runs"):
        shutil.copytree(REPO / folder, root / folder)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(REPO / "conftest.py", root / "conftest.py")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "banks", "-p", "no:cacheprovider", "-q", "--exam-cache", "none"],
        cwd=root, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def example_reports(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The example exam run once per test run, cold, in a copy of the repo's banks/, runs/ and configuration
    (the tests only read its reports)."""
    return built_once(tmp_path_factory, worker_id, "pinned-example", _run_example_cold) / "reports"


@pytest.mark.slow
def test_example_exam_report_is_pinned(example_reports: Path) -> None:
    report = json.loads((example_reports / "exam-report.json").read_text())
    for key in ("created", "tool_version", "schema_version"):
        report.pop(key)
    report["cache"]["grading_seconds"] = 0.0
    assert_close(report, _golden_json("example/exam-report.json.gz", report))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["exam-max-grade.qrels", "exam-count-min4.qrels", "exam-at-least-2-min4.qrels"])
def test_example_exam_qrels_are_pinned(example_reports: Path, name: str) -> None:
    text = (example_reports / name).read_text()
    golden = GOLDEN / "example" / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
