"""``analyze agreement --team-labels`` over a cache holding a cascade's grades (issue 35, finding 6): the pairs
its filter graded 0 name no model, the pairs its decider graded name one, and the cache's list of the graders
it holds sorted the two together (``TypeError: '<' not supported between 'NoneType' and 'str'``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.models import Grade
from exam_harness.grading.cache import GradeCache
from tests.fake_openai_server import FakeOpenAIServer
from tests.heat_pump_bank import HeatPumpBank, load


def test_the_cache_names_a_grader_stored_with_and_without_a_model(tmp_path: Path) -> None:
    cache = GradeCache(tmp_path / "c.sqlite")
    try:
        cache.put_many({"a" * 64: Grade(grade=0, grader="cascade", details={"cascade": "filtered"}),
                        "b" * 64: Grade(grade=5, grader="cascade", details={"model": "m1", "prompt": "self-rating"}),
                        "c" * 64: Grade(grade=4, grader="cascade", details={"model": "m1"})})
        assert cache.identities() == [("cascade", None, None), ("cascade", "m1", None),
                                      ("cascade", "m1", "self-rating")]
    finally:
        cache.close()


@pytest.fixture
def server() -> Iterator[tuple[HeatPumpBank, FakeOpenAIServer]]:
    pytest.importorskip("openai")
    bank = load()
    with FakeOpenAIServer(bank.responder) as srv:
        yield bank, srv


@pytest.mark.slow
def test_analyze_agreement_measures_a_cascade_against_team_labels(
        server: tuple[HeatPumpBank, FakeOpenAIServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    bank, srv = server
    banks, runs = bank.write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["exam-harness"])
    labelled = [(pid, tp) for system in ("verbatim", "numbers") for qid, pids in bank.runs[system].items()
                for pid in pids[:2] for tp in (t.id for t in bank.test_points if t.query_id == qid)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(
        {"query_id": tp.split(".")[0], "test_point_id": tp, "passage_id": pid, "label": bank.labels[(pid, tp)]}) + "\n"
        for pid, tp in dict.fromkeys(labelled)))
    decider = f"base_url={srv.base_url};api_key=k;backoff_base=0.001;backoff_max=0.002"
    options = ["decider=openai", f"decider_options={decider}", "first=answer-key", "threshold=0.5", "audit=0"]
    out = tmp_path / "agreement.json"
    code = main(["analyze", "agreement", *sorted(str(p) for p in runs.iterdir()), "--bank", str(banks / "heat_pumps.yaml"),
                 "--grader", "cascade", *(a for o in options for a in ("--grader-option", o)), "--model", "fake-model",
                 "--cache", str(tmp_path / "c.sqlite"), "--no-progress", "--team-labels", "labels.jsonl",
                 "--json", str(out)])
    said = capsys.readouterr()
    printed = said.out
    assert code == 0, said.out + said.err
    assert "cascade against labels.jsonl" in printed
    doc = json.loads(out.read_text())
    assert doc["grader"] == "cascade" and doc["pairs"] == len(set(labelled))
    # every pair the decider graded it graded from the labels; the filter's grades are 0: nothing passes wrongly
    assert doc["precision"] == 1.0
