"""Batch grading (grader option ``batch=true``) against a fake server with the Files and Batches API:
batch grades equal synchronous grades grade for grade; a kill between submit and collect loses
nothing; malformed answers store no grade and are sent again; failed and expired jobs are sent again;
files for ``vllm run_batch`` have the documented shape; ``exam-harness grade --batch`` and a pytest
session with pending jobs (exit status 75)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.exam.inputs import ExamInputs
from exam_harness.extensions import cli_registries
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.openai import OpenAIGrader
from exam_harness.grading.batches import BatchPending
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome, exam_requests, run_grading_pass
from exam_harness.llm.batch import OUTPUT_FIELDS, REQUEST_FIELDS, RESPONSE_FIELDS, BatchState
from tests.fake_batch_server import FakeBatchServer
from tests.fake_openai_server import _prompt_of
from tests.paths import REPO

pytest_plugins = ["pytester"]
# The documented fields (vLLM's examples/offline_inference/openai/openai_batch.md and its protocol's
# BatchRequestInput / BatchRequestOutput / BatchResponseData; OpenAI's Batch API request input and output)
DOCUMENTED_REQUEST = ("custom_id", "method", "url", "body")
DOCUMENTED_OUTPUT = ("id", "custom_id", "response", "error")
DOCUMENTED_RESPONSE = ("status_code", "request_id", "body")
pytest.importorskip("openai")
ROOT = REPO


def responder(prompt: str) -> str:
    """A grade 0..5 that depends on the whole prompt, so every pair has its own."""
    return str(zlib.crc32(prompt.encode()) % 6)


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer(responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def example() -> tuple[Any, list[GradingRequest]]:
    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    inputs.load_runs([ROOT / "runs" / "strong-ranker.run", ROOT / "runs" / "weak-ranker.run",
                      ROOT / "runs" / "collection.tsv"])
    banks = inputs.load_bank_file(ROOT / "banks" / "example.yaml")
    return inputs.data, exam_requests(inputs.data, banks, k=5, pool="top-k")


def grader(server: FakeBatchServer, **extra: str) -> OpenAIGrader:
    options = {"base_url": server.base_url, "model": "fake-model", "api_key": "test", "backoff_base": "0.001",
               "backoff_max": "0.002", **extra}
    return OpenAIGrader(GraderConfig(model=None, options=options))


def synchronous(server: FakeBatchServer, requests: list[GradingRequest], tmp_path: Path) -> GradingOutcome:
    cache = GradeCache(tmp_path / "sync.sqlite")
    try:
        return run_grading_pass(grader(server), requests, cache)
    finally:
        cache.close()


def batch_pass(server: FakeBatchServer, requests: list[GradingRequest], path: Path, **extra: str) -> GradingOutcome:
    """One pass of a fresh grader over a freshly opened cache: what a new process does (by default one that
    does not wait for its jobs: batch_wait=0)."""
    cache = GradeCache(path)
    try:
        return run_grading_pass(grader(server, batch="true", **{"batch_wait": "0", **extra}), requests, cache)
    finally:
        cache.close()


def uploaded_ids(server: FakeBatchServer, index: int) -> set[str]:
    return {json.loads(line)["custom_id"] for line in server.record.uploads[index].splitlines()}


def test_batch_grades_equal_synchronous_grades(server: FakeBatchServer, example: Any, tmp_path: Path) -> None:
    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    sync_calls = len(server.requests)
    assert expected.grades and not expected.failures
    server.script("in_progress")
    with pytest.raises(BatchPending, match="grade --batch collect"):
        batch_pass(server, requests, tmp_path / "batch.sqlite")
    server.finish()
    got = batch_pass(server, requests, tmp_path / "batch.sqlite")
    assert got.grades == expected.grades
    assert got.answers == expected.answers
    assert not got.failures
    assert len(server.requests) == sync_calls  # the batch passes made no synchronous call
    assert len(server.record.uploads) == 1
    again = batch_pass(server, requests, tmp_path / "batch.sqlite")
    assert again.graded == 0 and again.grades == expected.grades and len(server.record.uploads) == 1


def test_a_kill_between_submit_and_collect_loses_nothing(server: FakeBatchServer, example: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    path = tmp_path / "batch.sqlite"
    server.script("in_progress")
    with pytest.raises(BatchPending):
        batch_pass(server, requests, path)
    server.finish()

    def killed(self: BatchState) -> None:
        raise KeyboardInterrupt  # the process dies after the grades are stored, before the state is saved

    monkeypatch.setattr(BatchState, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        batch_pass(server, requests, path)
    monkeypatch.undo()
    got = batch_pass(server, requests, path)
    assert got.grades == expected.grades
    assert len(server.record.uploads) == 1  # nothing was sent twice


def test_a_job_written_but_not_created_is_sent_on_the_next_pass(server: FakeBatchServer, example: Any,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from exam_harness.core.errors import InfrastructureError
    from exam_harness.llm import batch as files

    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    path = tmp_path / "batch.sqlite"

    def refused(client: Any, state: BatchState, job: Any) -> None:
        raise RuntimeError("HTTP 500 on /v1/files")

    monkeypatch.setattr(files, "submit", refused)
    with pytest.raises(InfrastructureError, match="HTTP 500 on /v1/files"):
        batch_pass(server, requests, path)
    monkeypatch.undo()
    assert [job.batch_id for job in BatchState(path).jobs] == [None]  # the file is known, no job was made
    # sends the written file, which this server answers at once: collected in the same pass
    got = batch_pass(server, requests, path)
    assert got.grades == expected.grades and len(server.record.uploads) == 1
    assert not BatchState(path).jobs


def test_malformed_answers_store_no_grade_and_are_sent_again(server: FakeBatchServer, example: Any,
                                                            tmp_path: Path) -> None:
    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    path = tmp_path / "batch.sqlite"
    server.script("completed", "in_progress")  # the job sending them again runs until finish()
    with pytest.raises(BatchPending):
        batch_pass(server, requests, path)
    first = sorted(uploaded_ids(server, 0))
    spoiled = dict(zip(first[:3], ("no_choices", "not_json", "off_scale")))
    server.malformed.update(spoiled)
    # the job completed at once, but its answers were made when it was created: make them again spoiled
    server.jobs["batch_1"].status = "in_progress"
    server.finish()
    with pytest.raises(BatchPending, match=r"^3 pairs are waiting"):
        batch_pass(server, requests, path)
    assert uploaded_ids(server, 1) == set(spoiled)  # exactly the malformed ones, sent again
    cache = GradeCache(path)
    try:
        stored = cache.get_many(first)
    finally:
        cache.close()
    assert set(first) - set(stored) == set(spoiled)  # no grade stored for a malformed answer
    server.malformed.clear()
    server.finish()
    got = batch_pass(server, requests, path)
    assert got.grades == expected.grades


@pytest.mark.parametrize("ending", ["failed", "expired"])
def test_failed_and_expired_jobs_are_sent_again(server: FakeBatchServer, example: Any, tmp_path: Path,
                                               ending: str) -> None:
    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    path = tmp_path / "batch.sqlite"
    server.script(ending, partial=4)
    with pytest.raises(BatchPending):
        batch_pass(server, requests, path)
    sent = uploaded_ids(server, 0)
    got_back = 4 if ending == "expired" else 0  # an expired job's finished lines are kept
    with pytest.raises(BatchPending, match=f"^{len(sent) - got_back} pairs are waiting"):
        batch_pass(server, requests, path)
    assert len(uploaded_ids(server, 1)) == len(sent) - got_back
    got = batch_pass(server, requests, path)
    assert got.grades == expected.grades


def test_vllm_run_batch_files_have_the_documented_shape(server: FakeBatchServer, example: Any,
                                                       tmp_path: Path) -> None:
    _, requests = example
    expected = synchronous(server, requests, tmp_path)
    calls = len(server.requests)
    path = tmp_path / "batch.sqlite"
    with pytest.raises(BatchPending, match="1 batch job"):
        batch_pass(server, requests, path, batch_target="vllm")
    state = BatchState(path)
    (job,) = state.jobs
    lines = [json.loads(line) for line in (state.folder / job.name).read_text().splitlines()]
    assert len({line["custom_id"] for line in lines}) == len(lines) > 0
    for line in lines:
        # vLLM's BatchRequestInput: custom_id, method, url, body (the OpenAI batch file format)
        assert tuple(line) == DOCUMENTED_REQUEST == REQUEST_FIELDS
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"]["model"] == "fake-model" and line["body"]["messages"][-1]["role"] == "user"
    # what vllm run_batch writes: BatchRequestOutput (id, custom_id, response, error), the response
    # BatchResponseData (status_code, request_id, body)
    answers = []
    for number, line in enumerate(lines):
        body = server.answer_body(line["url"], line["body"], _prompt_of(line["url"], line["body"]), None)
        response = dict(zip(DOCUMENTED_RESPONSE, (200, f"vllm-batch-{number}", body), strict=True))
        answers.append(json.dumps(dict(zip(DOCUMENTED_OUTPUT, (f"vllm-{number}", line["custom_id"], response, None),
                                           strict=True))))
    assert (OUTPUT_FIELDS, RESPONSE_FIELDS) == (DOCUMENTED_OUTPUT, DOCUMENTED_RESPONSE)
    state.output_path(job).write_text("\n".join(answers) + "\n")
    got = batch_pass(server, requests, path, batch_target="vllm")
    assert got.grades == expected.grades
    assert len(server.requests) == calls and not server.record.uploads  # nothing went to a server


def test_nugget_assignment_is_refused_in_batch_mode(server: FakeBatchServer, example: Any, tmp_path: Path) -> None:
    from exam_harness.core.errors import ConfigError

    _, requests = example
    with pytest.raises(ConfigError, match="several pairs in one prompt"):
        batch_pass(server, requests, tmp_path / "batch.sqlite", prompt="nugget-assignment")


def test_grade_batch_commands(server: FakeBatchServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    cache = tmp_path / "grades.sqlite"
    args = ["grade", str(ROOT / "runs" / "strong-ranker.run"), str(ROOT / "runs" / "collection.tsv"), "--bank",
            str(ROOT / "banks" / "example.yaml"), "--grader", "openai", "--cache", str(cache), "--no-progress"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", "batch=true"):
        args += ["--grader-option", option]
    server.script("in_progress")
    assert main([*args, "--batch", "submit"]) == 0
    assert "waiting in 1 job" in capsys.readouterr().out
    assert main([*args, "--batch", "status"]) == 0
    assert "in_progress" in capsys.readouterr().out
    assert main([*args, "--batch", "collect"]) == 75  # still running
    server.finish()
    assert main([*args, "--batch", "collect"]) == 0
    out = capsys.readouterr().out
    assert "0 pairs waiting" in out and "no batch jobs waiting" in out
    assert main(args) == 0  # everything is in the cache now
    assert "graded 0 pairs" in capsys.readouterr().out
    assert not server.requests


BANK = """\
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: question a}
      - {id: q1/b, text: question b}
"""
COLLECTION = "id\ttext\np1\tGRADE=5 a passage that answers everything\np2\tGRADE=2 a weak passage\n"
RUNS = {"good.run": "q1 Q0 p1 1 2.0 good\n", "weak.run": "q1 Q0 p2 1 2.0 weak\n"}


def session_args(server: FakeBatchServer, *extra: str) -> list[str]:
    args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai", "--exam-no-progress"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", *extra):
        args += ["--exam-grader-option", option]
    return args


def test_a_session_with_pending_batch_jobs_exits_75_and_scores_once_collected(pytester: pytest.Pytester) -> None:
    from tests.fake_openai_server import grade_marker_responder
    from tests.helpers import report_means, write_project

    project = write_project(pytester, BANK, COLLECTION, RUNS)
    with FakeBatchServer(grade_marker_responder) as server:
        server.script("in_progress")
        first = project.runpytest(*session_args(server, "batch=true", "batch_wait=0"))
        assert first.ret == 75, first.stdout.str()
        first.stdout.fnmatch_lines(["*4 pairs are waiting in 1 batch job*grade --batch collect*"])
        server.finish()
        second = project.runpytest(*session_args(server, "batch=true"))
        assert second.ret == 0, second.stdout.str()
        assert not server.requests  # scored from the cache: no synchronous call
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert report_means(report) == {"good": 1.0, "weak": 0.0}


def test_the_dry_run_prints_the_synchronous_and_the_batch_price(pytester: pytest.Pytester) -> None:
    from tests.helpers import write_project

    project = write_project(pytester, BANK, COLLECTION, RUNS)
    with FakeBatchServer() as server:
        result = project.runpytest(*session_args(server, "batch=true", "price_prompt=1", "price_completion=2"),
                                   "--exam-dry-run")
    assert result.ret == 0, result.stdout.str()
    line = next(line for line in result.outlines if line.startswith("exam dry run:"))
    found = re.search(r"about (\d+) prompt tokens and at most (\d+) completion tokens, at most \$([\d.]+) "
                      r"synchronously, \$([\d.]+) as batch jobs; nothing was sent$", line)
    assert found, line
    prompt, completion = int(found[1]), int(found[2])
    assert float(found[3]) == pytest.approx((prompt * 1 + completion * 2) / 1000, abs=0.005)
    assert float(found[4]) == pytest.approx((prompt * 0.5 + completion * 1) / 1000, abs=0.00005)  # half price
    assert not server.record.uploads and not server.requests

