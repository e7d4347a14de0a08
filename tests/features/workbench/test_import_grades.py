"""``exam-harness import-grades``: published grades become cache entries the recorded grader replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.models import ExamData
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import default_registry
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from exam_harness.io import load_bank, load_runs

PROMPT = "QuestionSelfRatedUnanswerablePromptWithChoices"


@pytest.mark.slow
@pytest.mark.realdata
def test_imported_grades_replay_without_the_paragraph_file(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dl19 = shared_data / "dl19"
    paragraphs = dl19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
    bank_file = dl19 / "dl19-genq-questions-v1.jsonl.gz"
    cache_path = tmp_path / "grades.sqlite"
    assert main(["import-grades", str(paragraphs), "--bank", str(bank_file), "--cache", str(cache_path)]) == 0
    assert "imported 92600 grades of llm=google/flan-t5-large" in capsys.readouterr().out

    data = load_runs([paragraphs]).data
    bank = load_bank(bank_file)[0]
    pairs = [(pid, tp) for pid in sorted(data.judgments[bank.query.id])[:25] for tp in bank.test_points]
    requests = [GradingRequest(bank.query, tp, data.passages[pid]) for pid, tp in pairs]
    # No paragraph file loaded: the grader can only answer from the cache.
    grader = default_registry().create(
        "recorded", GraderConfig(options={"llm": "google/flan-t5-large", "prompt_class": PROMPT}, data=ExamData())
    )
    cache = GradeCache(cache_path)
    outcome = run_grading_pass(grader, requests, cache)
    cache.close()
    assert outcome.cache_hits == outcome.unique == len(requests) and not outcome.failures
    for pid, tp in pairs:
        assert outcome.grades[(pid, tp.id)] == data.recorded[(pid, tp.id)][0].grade


def test_import_needs_a_bank(tmp_path: Path) -> None:
    from exam_harness.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["import-grades", str(tmp_path / "x.jsonl.gz")])
    assert main(["import-grades", str(tmp_path / "x.jsonl.gz")]) == 4
