"""Answers read by a fallback rule are counted (issue 16): an LLM grader's answer holding no grade digit
(``banana``) is read as grade 1 by the method's rule; each run's count is in the JSON, terminal, markdown
and HTML; a run above ``--exam-max-fallbacks`` (default 0.05) is incomplete and fails the session as a
test case of its own; ``--exam-strict-fallbacks`` makes such an answer a pair that could not be graded."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.models import Grade
from exam_harness.grading.cache import SCHEMA_VERSION, GradeCache
from tests.fake_openai_server import FakeOpenAIServer
from tests.graders.support import _systems
from tests.graders.support import llm_project as llm_project  # fixture
from tests.graders.support import server as server  # fixture
from tests.plugin.support import openai_args

pytest_plugins = ["pytester"]
pytest.importorskip("openai")


def test_fallbacks_are_counted_and_fail_the_run_past_the_limit(llm_project: pytest.Pytester,
                                                               server: FakeOpenAIServer) -> None:
    result = llm_project.runpytest(*openai_args(server), "--junitxml=junit.xml", "--exam-markdown=summary.md",
                                   "--exam-html=html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    systems = _systems(llm_project)
    assert (systems["weak"]["fallbacks"], systems["good"]["fallbacks"]) == (2, 0)
    assert systems["weak"]["incomplete_queries"] == ["q1"] and systems["good"]["incomplete_queries"] == []
    result.stdout.fnmatch_lines([
        "fallbacks: grades read by a fallback rule from answers holding no grade: 'good' 0 of 3, 'weak' 2 of 3",
        "FAIL run 'weak': 2 of 3 grades (66.7%) were read by a fallback rule from answers holding no grade, more "
        "than --exam-max-fallbacks 0.05 allows*"])
    assert "1 gate failed" in result.stdout.lines[-1]
    root = ET.parse(llm_project.path / "junit.xml").getroot()
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert [(c.get("classname"), c.get("name")) for c in failed] == [("exam gates", "exam-max-fallbacks[weak]")]
    markdown = (llm_project.path / "summary.md").read_text()
    assert "> **Fallbacks:** grades read by a fallback rule from answers holding no grade: good 0 of 3, weak 2 of 3." \
        in markdown
    html = (llm_project.path / "html" / "index.html").read_text()
    assert "grades read by a fallback rule from answers holding no grade: good 0 of 3, weak 2 of 3" in html
    # the saved report reaches the same verdict: the fallback check alone (its queries are marked incomplete
    # by the report's builder, and that makes no incomplete-exam check of its own)
    path = llm_project.path / "reports" / "exam-report.json"
    saved = json.loads(path.read_text())["verdict"]
    assert [g["gate"] for g in saved["gates"]] == ["exam-max-fallbacks"]
    assert main(["verdict", str(path)]) == 1

    # warm: the flag comes back from the cache, and with it the same counts and verdict
    warm = llm_project.runpytest(*openai_args(server))
    assert warm.ret == pytest.ExitCode.TESTS_FAILED
    assert server.count() == 6  # every distinct pair once, all from the cache the second time
    assert _systems(llm_project)["weak"]["fallbacks"] == 2


def test_a_looser_limit_passes_and_still_counts(llm_project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = llm_project.runpytest(*openai_args(server), "--exam-max-fallbacks=0.7")
    assert result.ret == pytest.ExitCode.OK
    assert _systems(llm_project)["weak"]["fallbacks"] == 2
    assert _systems(llm_project)["weak"]["incomplete_queries"] == []


def test_strict_fallbacks_refuse_the_rule_fresh_and_cached(llm_project: pytest.Pytester,
                                                           server: FakeOpenAIServer) -> None:
    for _ in range(2):  # cold, then from the cache (which keeps the model's answer, flagged)
        result = llm_project.runpytest(*openai_args(server), "--exam-strict-fallbacks")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*pairs that could not be graded (2)*",
                                     "2 pairs: the answer 'banana' holds no grade; --exam-strict-fallbacks refuses "
                                     "the fallback rule (other text -> 1) that would read one"])
        weak = _systems(llm_project)["weak"]
        assert weak["fallbacks"] == 0 and weak["grade_counts"]["failed"] == 2
    assert server.count() == 6


def test_a_schema_2_cache_is_migrated_with_its_fallbacks_flagged(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    details = {"prompt": "self-rating", "prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices"}
    grades = {"a" * 64: Grade(grade=1, grader="openai", raw_response="I cannot rate this.", details=details),
              "b" * 64: Grade(grade=0, grader="openai", raw_response="unanswerable", details=details),
              "c" * 64: Grade(grade=4, grader="openai", raw_response="4", details=details)}
    cache = GradeCache(path)
    cache.put_many(grades)
    cache.close()
    with sqlite3.connect(path) as db:  # as schema 2 stored them: no flag
        db.execute("UPDATE grades SET record = json_remove(record, '$.fallback')")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    said: list[str] = []
    migrated = GradeCache(path, notify=said.append)
    assert said == [f"grade cache {path}: migrated to schema {SCHEMA_VERSION}; 2 of its grades were read by a "
                    "fallback rule from answers without a grade and are flagged so"]
    found = migrated.get_grades(grades)
    assert {k[0]: g.fallback for k, g in found.items()} == {"a": "other text -> 1", "b": "unanswerable text -> 0",
                                                            "c": None}


def test_a_server_answering_only_banana_fails_every_run(llm_project: pytest.Pytester) -> None:
    """The issue's case: every answer is 'banana', read as grade 1, so at tau 1 every run covered everything."""
    with FakeOpenAIServer(lambda prompt: "banana") as srv:
        result = llm_project.runpytest(*openai_args(srv))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert {run: s["fallbacks"] for run, s in _systems(llm_project).items()} == {"good": 3, "weak": 3}
    assert "2 gates failed" in result.stdout.lines[-1]


def test_a_read_only_schema_2_cache_gives_its_flags_row_by_row(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "grades.sqlite"
    details = {"prompt": "question-rating"}
    cache = GradeCache(path)
    cache.put_many({"a" * 64: Grade(grade=1, grader="openai", raw_response="banana", details=details),
                    "c" * 64: Grade(grade=3, grader="openai", raw_response="3.", details=details)})
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE grades SET record = json_remove(record, '$.fallback')")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    monkeypatch.setattr("exam_harness.grading.cache._why_not_writable", lambda _path: "read-only for this test")
    read_only = GradeCache(path, notify=lambda _message: None)
    assert {k[0]: g.fallback for k, g in read_only.get_grades(["a" * 64, "c" * 64]).items()} == {
        "a": "other text -> 1", "c": None}
    with sqlite3.connect(path) as db:  # nothing was written to it
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "2"
