"""The Ray engine on a local Ray runtime (2 CPUs, no dashboard, a small object store), started once for the module:
the example exam graded through ``exam-harness grade --engine ray`` gives the grades of the local pass, with the
transformers backend (a tiny FLAN-T5 style model built here) and with the OpenAI-compatible backend (the fake
server), added into a cache that held some of them already; a worker killed mid-run is restarted and its batch
asked again; a run stopped half-way resumes from the grades it stored; a failed pair is never stored."""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.features.ray_engine.engine import RayEngine, RaySettings
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRecipe
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from tests.fake_openai_server import FakeOpenAIServer, Fault
from tests.features.ray_engine.graders import CountingGrader, KillOnceGrader, expected_grade
from tests.paths import REPO

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # a Ray runtime and its workers: seconds each

EXAMPLE = [str(REPO / "runs"), "--bank", str(REPO / "banks" / "example.yaml"), "--no-progress"]


@pytest.fixture(scope="module", autouse=True)
def ray_runtime() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key, grade, extracted_answer, raw_response, record FROM grades ORDER BY key").fetchall()


def half_of(source: Path, target: Path) -> int:
    """``target``: a cache holding every other grade of ``source``; how many."""
    cache, into = GradeCache(source), GradeCache(target)
    try:
        kept = cache.rows()[::2]
        assert into.put_rows(kept)
        return len(kept)
    finally:
        cache.close()
        into.close()


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.llm.support import BIAS, rating_prompts
    from tests.tiny_models import build_t5, save_model, spread_digits, train_tokenizer

    tok = train_tokenizer()
    model = build_t5(tok, bias=BIAS)
    spread_digits(model, tok, [p.text for p in rating_prompts(48, seed=99)], BIAS)
    return save_model(model, tok, tmp_path_factory.mktemp("tiny-t5"))


def test_the_example_exam_on_ray_has_the_local_grades_added_into_the_cache(
        tmp_path: Path, t5_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grader = ["--grader", "hf", "--model", str(t5_dir), "--device", "cpu", "--batch-size", "16"]
    local, on_ray = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    assert main(["grade", *EXAMPLE, *grader, "--cache", str(local)]) == 0
    expected = rows(local)
    assert len({row[1] for row in expected}) > 1  # grades that differ: the comparison can fail
    held = half_of(local, on_ray)
    capsys.readouterr()
    assert main(["grade", *EXAMPLE, *grader, "--cache", str(on_ray), "--engine", "ray", "--ray-workers", "1"]) == 0
    assert f"graded {len(expected) - held} pairs, {held} found in the cache, 0 without a grade" in capsys.readouterr().out
    got = rows(on_ray)
    assert [row[:4] for row in got] == [row[:4] for row in expected]  # keys, grades and answers, exactly
    for ours, theirs in zip(got, expected):  # records: a batch of other pairs (padding) moves float32's last digits
        assert close_records(json.loads(ours[4]), json.loads(theirs[4]))


def close_records(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return pytest.approx(value, abs=1e-4)
        if isinstance(value, dict):
            return {key: rounded(v) for key, v in value.items()}
        if isinstance(value, list):
            return [rounded(v) for v in value]
        return value

    return bool(ours == rounded(theirs))


def openai_answer(prompt: str) -> str:
    return str(zlib.crc32(prompt.encode()) % 6)


def test_the_openai_backend_on_ray_grades_as_locally_and_stores_no_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(openai_answer) as server:
        # one passage's prompts always refused (a 400 is not retried): its pairs fail on both engines
        server.add_faults("Spring tides happen", *[Fault("status", status=400)] * 1000)
        grader = ["--grader", "openai", "--grader-option", f"base_url={server.base_url}", "--grader-option",
                  "model=fake-model", "--grader-option", "api_key=x", "--grader-option", "rpm=600000"]
        local, on_ray = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
        assert main(["grade", *EXAMPLE, *grader, "--cache", str(local)]) == 1  # pairs without a grade
        said_locally = capsys.readouterr().out
        assert main(["grade", *EXAMPLE, *grader, "--cache", str(on_ray), "--engine", "ray"]) == 1
        said_on_ray = capsys.readouterr().out
    summary = said_locally.strip().splitlines()[-1]
    assert summary.startswith("graded ") and " 0 without a grade" not in summary
    assert said_on_ray.strip().splitlines()[-1] == summary  # as many grades and failures
    assert rows(on_ray) == rows(local)  # the same grades stored, and no failure among them
    assert 0 < len(rows(local)) < 210


def requests(count: int) -> list[GradingRequest]:
    query = Query(id="q", text="tides")
    points = [TestPoint(id=f"q/{t}", query_id="q", kind="question", text=f"question {t}") for t in range(4)]
    return [GradingRequest(query, points[i % 4], Passage(id=f"p{i}", text=f"passage number {i}"))
            for i in range(count)]


def engine_for(factory: Any, options: dict[str, str] | None = None, *, retries: int = 3) -> tuple[Any, RayEngine]:
    config = GraderConfig(options=options or {})
    grader = factory(config)
    engine = RayEngine(GraderRecipe(factory.name, factory, config), RaySettings(workers=2, retries=retries))
    engine.check(grader)
    return grader, engine


def test_a_worker_killed_mid_run_is_restarted_and_its_batch_graded(tmp_path: Path) -> None:
    marker = tmp_path / "killed.pid"
    grader, engine = engine_for(KillOnceGrader, {"marker": str(marker)})
    cache = GradeCache(tmp_path / "grades.sqlite")
    pairs = requests(40)
    try:
        outcome = run_grading_pass(grader, pairs, cache, chunk_size=5, engine=engine)
    finally:
        cache.close()
        engine.close()
    killed = int(marker.read_text())  # a worker did kill itself, mid-run
    assert not outcome.failures and outcome.graded == 40
    assert outcome.grades == {(r.passage.id, r.test_point.id): expected_grade(r) for r in pairs}
    stored = GradeCache(tmp_path / "grades.sqlite")
    try:
        assert len(stored) == 40
        pids = {row[4] for row in stored.rows()}
    finally:
        stored.close()
    assert str(killed) not in " ".join(pids)  # no grade of the killed process: its batch was asked again
    with pytest.raises(ProcessLookupError):
        os.kill(killed, 0)


def test_a_run_stopped_half_way_resumes_from_the_grades_it_stored(tmp_path: Path) -> None:
    grader, engine = engine_for(CountingGrader)
    pairs = requests(60)
    seen: list[int] = []

    def interrupt(done: int) -> None:
        seen.append(done)
        if sum(seen) >= 20:
            raise KeyboardInterrupt  # Ctrl-C on the driver, after some batches came back

    cache = GradeCache(tmp_path / "grades.sqlite")
    try:
        with pytest.raises(KeyboardInterrupt):
            run_grading_pass(grader, pairs, cache, chunk_size=5, engine=engine, on_progress=interrupt)
        stored = len(cache)
        assert 20 <= stored < 60  # what came back before the stop is kept
        again = run_grading_pass(grader, pairs, cache, chunk_size=5, engine=engine)
    finally:
        cache.close()
        engine.close()
    assert again.cache_hits == stored and again.graded == 60 - stored and not again.failures
    assert again.grades == {(r.passage.id, r.test_point.id): expected_grade(r) for r in pairs}


def test_a_worker_that_dies_past_its_retries_stops_the_pass_keeping_the_grades(tmp_path: Path) -> None:
    from exam_harness.core.errors import GradingAborted

    marker = tmp_path / "killed.pid"
    grader, engine = engine_for(KillOnceGrader, {"marker": str(marker)}, retries=0)
    cache = GradeCache(tmp_path / "grades.sqlite")
    pairs = requests(40)
    try:
        with pytest.raises(GradingAborted, match="the ray engine stopped") as stopped:
            run_grading_pass(grader, pairs, cache, chunk_size=5, engine=engine)
        kept = len(cache)
    finally:
        cache.close()
        engine.close()
    assert marker.exists()  # the kill happened, and no restart was allowed
    assert stopped.value.graded == kept and stopped.value.remaining == 40 - kept > 0
