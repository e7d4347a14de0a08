"""Batch jobs are paid for once and read as one set (issue 39, findings 4 and 5; issue 38, item 5):

* a process SIGKILLed while its job is being created (or its file uploaded) leaves a rerun that finds the
  job (the file) on the server by its tag, and creates (uploads) nothing again: docs/batch.md's "sends
  nothing twice";
* a request a job answers twice is one answer when both lines agree, and no grade, said with its custom id,
  when they differ (OpenAI and vllm targets), never the last line winning in silence;
* a session waits for its jobs in one process (looking with backoff, saying their progress, bounded by
  ``batch_wait``; ``batch_wait=0`` stops at once with exit status 75 and the collect command);
* batch grades are priced at the batch rate: this session's, the cached grades' and each run's figures.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.exam.inputs import ExamInputs
from exam_harness.extensions import cli_registries
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.openai import OpenAIGrader
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome, exam_requests, run_grading_pass
from exam_harness.llm.batch import BatchState
from tests.fake_batch_server import FakeBatchServer
from tests.fake_openai_server import _prompt_of
from tests.paths import REPO

pytest.importorskip("openai")
pytest_plugins = ["pytester"]


def responder(prompt: str) -> str:
    return str(zlib.crc32(prompt.encode()) % 6)


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer(responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def requests() -> list[GradingRequest]:
    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    inputs.load_runs([REPO / "runs" / "strong-ranker.run", REPO / "runs" / "collection.tsv"])
    banks = inputs.load_bank_file(REPO / "banks" / "example.yaml")
    return exam_requests(inputs.data, banks, k=5, pool="top-k")


def options(server: FakeBatchServer, **extra: str) -> dict[str, str]:
    return {"base_url": server.base_url, "model": "fake-model", "api_key": "test", "backoff_base": "0.001",
            "backoff_max": "0.002", **extra}


def one_pass(server: FakeBatchServer, requests: list[GradingRequest], path: Path, **extra: str) -> GradingOutcome:
    """What one process does: a fresh grader over a freshly opened cache."""
    cache = GradeCache(path)
    try:
        return run_grading_pass(OpenAIGrader(GraderConfig(model=None, options=options(server, **extra))), requests,
                                cache)
    finally:
        cache.close()


def expected_grades(server: FakeBatchServer, requests: list[GradingRequest], tmp_path: Path) -> dict[Any, int]:
    got = one_pass(server, requests, tmp_path / "sync.sqlite")
    server.requests.clear()
    assert got.grades and not got.failures
    return got.grades


def cli_args(server: FakeBatchServer, cache: Path) -> list[str]:
    args = ["grade", str(REPO / "runs" / "strong-ranker.run"), str(REPO / "runs" / "collection.tsv"), "--bank",
            str(REPO / "banks" / "example.yaml"), "--grader", "openai", "--cache", str(cache), "--no-progress"]
    for key, value in options(server, batch="true").items():
        args += ["--grader-option", f"{key}={value}"]
    return args


KILLED = "import sys; from exam_harness.cli import main; sys.exit(main(sys.argv[1:]))"


def killed_while(server: FakeBatchServer, what: str, args: list[str]) -> None:
    """Run ``exam-harness grade ... --batch submit`` in a child and SIGKILL it once the server has done ``what``
    (stored the upload, created the job) and before its answer reaches the child."""
    server.stall(what)  # type: ignore[arg-type]
    with subprocess.Popen([sys.executable, "-c", KILLED, *args, "--batch", "submit"], env={**_env()},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        try:
            assert server.stalled.wait(120), "the child never reached the server"
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        finally:
            server.release.set()
    assert child.returncode == -signal.SIGKILL


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.mark.slow
@pytest.mark.parametrize("what", ["create", "upload"])
def test_a_kill_while_a_job_is_sent_never_pays_for_it_twice(server: FakeBatchServer, requests: list[GradingRequest],
                                                            tmp_path: Path, what: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    expected = expected_grades(server, requests, tmp_path)
    cache = tmp_path / "batch.sqlite"
    killed_while(server, what, cli_args(server, cache))
    assert len(server.record.uploads) == 1 and len(server.record.created) == (1 if what == "create" else 0)
    (job,) = BatchState(cache).jobs
    assert job.batch_id is None  # the child died before the state file could name the job
    # what a user does next: the same submit again, then collect
    assert main([*cli_args(server, cache), "--batch", "submit"]) == 0, capsys.readouterr().err
    assert main([*cli_args(server, cache), "--batch", "collect"]) == 0, capsys.readouterr().err
    assert len(server.record.uploads) == 1 and len(server.record.created) == 1  # found again, not sent again
    assert not server.requests  # no synchronous call
    assert one_pass(server, requests, cache, batch="true", batch_wait="0").grades == expected


@pytest.mark.slow
def test_a_server_without_listings_gets_the_job_again_and_says_why(server: FakeBatchServer,
                                                                   requests: list[GradingRequest], tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The documented limit: a server that lists no batches cannot say what a killed process sent."""
    from exam_harness.cli import main

    server.lists = False
    cache = tmp_path / "batch.sqlite"
    killed_while(server, "create", cli_args(server, cache))
    with caplog.at_level("WARNING", logger="exam_harness.batch"):
        assert main([*cli_args(server, cache), "--batch", "submit"]) == 0
    assert len(server.record.created) == 2 and "lists nothing at /v1/batches (HTTP 404)" in caplog.text


# -- duplicate answers -----------------------------------------------------------------------------------------
def exchange_once(server: FakeBatchServer, requests: list[GradingRequest], path: Path, **extra: str) -> Any:
    """One exchange with the jobs (collect, then submit what no job carries), as ``grade --batch`` makes it."""
    from exam_harness.grading.batches import exchange
    from exam_harness.grading.passes import group_by_key

    grader = OpenAIGrader(GraderConfig(model=None, options=options(server, batch="true", **extra)))
    cache = GradeCache(path)
    try:
        found = cache.get_grades(group_by_key(grader, requests, {}), answers=False)
        todo = {key: group[0] for key, group in group_by_key(grader, requests, {}).items() if key not in found}
        return exchange(grader, todo, path, cache.put_many)
    finally:
        cache.close()


def stored(path: Path, keys: list[str]) -> set[str]:
    cache = GradeCache(path)
    try:
        return set(cache.get_many(keys))
    finally:
        cache.close()


def test_a_request_answered_twice_alike_is_one_grade_and_differently_is_none(
        server: FakeBatchServer, requests: list[GradingRequest], tmp_path: Path) -> None:
    expected = expected_grades(server, requests, tmp_path)
    path = tmp_path / "batch.sqlite"
    server.script("in_progress")
    assert exchange_once(server, requests, path).pending
    ids = sorted(json.loads(line)["custom_id"] for line in server.record.uploads[0].splitlines())
    same, differing = ids[0], ids[1]
    server.duplicated.update({same: "same", differing: "differing"})
    server.script("in_progress")  # the job sending the differing one again waits
    server.finish()
    done = exchange_once(server, requests, path)
    assert list(done.pending) == [differing]  # sent again, in a new job
    assert [p for p in done.problems if differing in p] == [
        next(p for p in done.problems if f"custom_id {differing} is answered twice, differently" in p)]
    assert not any(same in p for p in done.problems) and same in done.grades
    assert {json.loads(line)["custom_id"] for line in server.record.uploads[1].splitlines()} == {differing}
    kept = stored(path, ids)
    assert same in kept and differing not in kept  # never the last line's grade in silence
    server.duplicated.clear()
    server.finish()
    assert one_pass(server, requests, path, batch="true").grades == expected


def test_a_vllm_output_answering_a_request_twice_differently_gives_no_grade(
        server: FakeBatchServer, requests: list[GradingRequest], tmp_path: Path) -> None:
    path = tmp_path / "batch.sqlite"
    assert exchange_once(server, requests, path, batch_target="vllm").pending
    state = BatchState(path)
    (job,) = state.jobs
    lines = [json.loads(line) for line in (state.folder / job.name).read_text().splitlines()]
    out = []
    for number, line in enumerate(lines):
        body = server.answer_body(line["url"], line["body"], _prompt_of(line["url"], line["body"]), None)
        answer = {"id": f"vllm-{number}", "custom_id": line["custom_id"],
                  "response": {"status_code": 200, "request_id": f"r{number}", "body": body}, "error": None}
        out.append(json.dumps(answer))
        if number < 2:  # the first request again with the same answer, the second with another grade
            again = json.loads(json.dumps(answer))
            if number == 1:
                grade = again["response"]["body"]["choices"][0]["message"]["content"]
                again["response"]["body"]["choices"][0]["message"]["content"] = "0" if grade != "0" else "5"
            out.append(json.dumps(again))
    state.output_path(job).write_text("\n".join(out) + "\n")
    done = exchange_once(server, requests, path, batch_target="vllm")
    assert list(done.pending) == [lines[1]["custom_id"]]
    assert any(f"custom_id {lines[1]['custom_id']} is answered twice, differently" in p for p in done.problems)
    assert stored(path, [lines[0]["custom_id"], lines[1]["custom_id"]]) == {lines[0]["custom_id"]}


# -- waiting in one process ----------------------------------------------------------------------------------
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


def session(project: pytest.Pytester, server: FakeBatchServer, *extra: str) -> pytest.RunResult:
    args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai", "--exam-no-progress"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", "batch=true", *extra):
        args += ["--exam-grader-option", option]
    return project.runpytest(*args)


def test_a_session_waits_for_its_batch_jobs_in_one_process(pytester: pytest.Pytester) -> None:
    """38.5: one session submits, looks again with backoff saying the jobs' progress, collects and scores."""
    from tests.fake_openai_server import grade_marker_responder
    from tests.helpers import report_means, write_project

    project = write_project(pytester, BANK, COLLECTION, RUNS)
    with FakeBatchServer(grade_marker_responder) as server:
        server.script("in_progress", after=3)  # done at the third look
        result = session(project, server, "batch_poll=0.01")
        assert result.ret == 0, result.stdout.str() + result.stderr.str()
        assert not server.requests and len(server.record.created) == 1
        assert server.jobs["batch_1"].looks >= 3
    looks = [line for line in result.errlines if "batch: " in line and "pairs waiting" in line]
    assert len(looks) >= 2 and all("pairs waiting" in line and "in_progress" in line for line in looks)
    assert "next look in" in looks[0] and "of at most 24h 00m" in looks[0]
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    assert report_means(report) == {"good": 1.0, "weak": 0.0}


def test_the_wait_is_bounded_and_ends_once_with_the_collect_command(pytester: pytest.Pytester) -> None:
    from tests.helpers import write_project

    project = write_project(pytester, BANK, COLLECTION, RUNS)
    with FakeBatchServer() as server:
        server.script("in_progress")  # never done
        bounded = session(project, server, "batch_poll=0.01", "batch_wait=0.2")
        assert bounded.ret == 75, bounded.stdout.str()
        assert any("batch: " in line and "next look in" in line for line in bounded.errlines)
        at_once = session(project, server, "batch_wait=0")
        assert at_once.ret == 75
        assert not any("next look in" in line for line in at_once.errlines)  # no look: it stopped at once
        assert len(server.record.created) == 1  # the second session sent nothing again
    for result in (bounded, at_once):
        text = result.stdout.str() + result.stderr.str()
        assert text.count("pairs are waiting in 1 batch job") == 1 and "grade --batch collect" in text


# -- prices ----------------------------------------------------------------------------------------------------
def test_batch_grades_are_priced_at_the_batch_rate(server: FakeBatchServer, requests: list[GradingRequest],
                                                   tmp_path: Path) -> None:
    from exam_harness.grading.batches import exchange
    from exam_harness.grading.passes import group_by_key

    path = tmp_path / "batch.sqlite"
    prices = {"batch": "true", "price_prompt": "1", "price_completion": "2"}  # batch: 0.5 and 1 (half)
    grader = OpenAIGrader(GraderConfig(model=None, options=options(server, **prices)))
    todo = {key: group[0] for key, group in group_by_key(grader, requests, {}).items()}
    cache = GradeCache(path)
    try:
        exchange(grader, todo, path, cache.put_many, collect=False)  # submitted; the server answers at once
    finally:
        cache.close()
    first = one_pass(server, requests, path, **prices)
    assert first.graded == len(todo) and first.cost is not None
    session = first.cost.session
    at_batch_rate = (session.prompt_tokens * 0.5 + session.completion_tokens * 1.0) / 1000
    assert session.prompt_tokens > 0 and first.cost.cost(session) == pytest.approx(at_batch_rate, rel=1e-12)
    runs = first.cost.run_usage(first.grades)
    assert first.cost.cost(runs) == pytest.approx((runs.prompt_tokens * 0.5 + runs.completion_tokens) / 1000)
    again = one_pass(server, requests, path, **prices)  # cached batch grades keep their rate
    assert again.graded == 0 and again.cost is not None
    cached = again.cost.cached
    assert cached.prompt_tokens == pytest.approx(session.prompt_tokens)
    assert again.cost.cost(cached) == pytest.approx(at_batch_rate, rel=1e-9)
