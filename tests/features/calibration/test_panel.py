"""The ``panel`` grader (issue 35, item 5): its aggregations, a panel of two judges with different error patterns
agreeing with the labels better than either, each member cached as itself, and the calibration section measuring
each member against the labels and the others."""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from exam_harness.cli import main
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.features.calibration.judges import verdict_kappa
from exam_harness.graders.base import Grader, GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass
from tests.features.calibration.support import Judge, Lenient, Strict

pytest_plugins = ["pytester"]


def _pairs(count: int = 300, seed: int = 0) -> tuple[list[GradingRequest], dict[tuple[str, str], bool]]:
    rng = random.Random(seed)
    query = Query(id="q", text="q")
    point = TestPoint(id="q/t", query_id="q", kind="question", text="What?")
    requests, labels = [], {}
    for i in range(count):
        truth = rng.random() < 0.3
        lenient = 5 if truth else (4 if rng.random() < 0.2 else 0)
        strict = (3 if rng.random() < 0.33 else 5) if truth else 0
        passage = Passage(id=f"p{i}", text=f"p{i} lenient={lenient} strict={strict}")
        requests.append(GradingRequest(query, point, passage))
        labels[(passage.id, point.id)] = truth
    return requests, labels


def _registry() -> GraderRegistry:
    """The built-in graders, the feature's panel (through its hook, as both front ends register it) and the fakes."""
    from exam_harness.features.calibration import plugin

    registry = default_registry()
    plugin.pytest_exam_register_graders(registry=registry)
    registry.register("lenient", Lenient, "test judge")
    registry.register("strict", Strict, "test judge")
    return registry


def _kappa(grades: dict[tuple[str, str], int], labels: dict[tuple[str, str], bool], tau: int) -> float:
    pairs = sorted(labels)
    found = verdict_kappa(np.asarray([grades[p] >= tau for p in pairs], float),
                          np.asarray([labels[p] for p in pairs], float))
    assert found is not None
    return found


def _grade(grader: Grader, requests: list[GradingRequest], cache: GradeCache) -> dict[tuple[str, str], int]:
    outcome = run_grading_pass(grader, requests, cache)
    assert not outcome.failures
    return outcome.grades


def test_a_panel_of_two_judges_with_different_errors_beats_each_of_them(tmp_path: Path) -> None:
    requests, labels = _pairs()
    registry = _registry()
    cache = GradeCache(tmp_path / "c.sqlite")
    try:
        members = {name: _kappa(_grade(registry.create(name, GraderConfig()), requests, cache), labels, 4)
                   for name in ("lenient", "strict")}
        panel = registry.create("panel", GraderConfig(options={"members": "lenient,strict", "aggregate": "weighted"},
                                                      cache=tmp_path / "c.sqlite"))
        try:
            together = _kappa(_grade(panel, requests, cache), labels, 1)
        finally:
            panel.close()
    finally:
        cache.close()
    assert together > max(members.values()) + 0.1, (together, members)
    assert all(k < 0.9 for k in members.values())


def test_each_member_grades_through_the_cache_as_itself(tmp_path: Path) -> None:
    requests, _ = _pairs(40)
    registry = _registry()
    path = tmp_path / "c.sqlite"
    Judge.asked.clear()
    panel = registry.create("panel", GraderConfig(options={"members": "lenient,strict"}, cache=path))
    cache = GradeCache(path)
    try:
        _grade(panel, requests, cache)
        assert Judge.asked == {"lenient": 40, "strict": 40}
        alone = run_grading_pass(registry.create("strict", GraderConfig()), requests, cache)
        assert alone.cache_hits == 40 and alone.graded == 0  # the member alone finds its grades
        other = registry.create("panel", GraderConfig(options={"members": "strict,lenient", "aggregate": "unanimous"},
                                                      cache=path))
        _grade(other, requests, cache)  # another panel of the same members: theirs are cached, its own are new
        other.close()
        assert Judge.asked == {"lenient": 40, "strict": 40}
    finally:
        panel.close()
        cache.close()


def test_the_aggregations_count_the_members_verdicts() -> None:
    registry = _registry()
    registry.register("third", type("Third", (Strict,), {"name": "strict"}), "test judge")
    query, point = Query(id="q", text="q"), TestPoint(id="q/t", query_id="q", kind="question", text="What?")
    request = GradingRequest(query, point, Passage(id="p", text="p lenient=5 strict=3"))

    def grade(**options: str) -> int:
        panel = registry.create("panel", GraderConfig(options={"members": "lenient,strict,third", **options}))
        try:
            (result,) = panel.grade_batch([request])
        finally:
            panel.close()
        assert isinstance(result, Grade)
        return result.grade

    # lenient passes (5), strict and third do not (3 < 4)
    assert grade() == 0 and grade(aggregate="unanimous") == 0
    assert grade(min_grades="4,3,4") == 1  # strict now passes at 3: two of three
    assert grade(aggregate="weighted") == 1  # (5 + 3 + 3) / 15 = 0.73 >= 0.5
    assert grade(aggregate="weighted", threshold="0.8") == 0
    assert grade(aggregate="weighted", weights="0,1,1", threshold="0.7") == 0  # 3/5 = 0.6


def test_a_panel_without_members_or_with_too_many_options_says_so() -> None:
    registry = _registry()
    with pytest.raises(ConfigError, match="needs its members"):
        registry.create("panel", GraderConfig())
    with pytest.raises(ConfigError, match="3 groups for 2 members"):
        registry.create("panel", GraderConfig(options={"members": "lenient,strict", "member_options": "a=1||"}))
    with pytest.raises(ConfigError, match="weights gives 1 values for 2 members"):
        registry.create("panel", GraderConfig(options={"members": "lenient,strict", "weights": "1"}))


CONFTEST = '''
from tests.features.calibration.support import Lenient, Strict

def pytest_exam_register_graders(registry):
    registry.register("lenient", Lenient, "test judge")
    registry.register("strict", Strict, "test judge")
'''


def test_the_calibration_section_measures_each_member(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    requests, labels = _pairs(60)
    (pytester.path / "conftest.py").write_text(CONFTEST)
    (pytester.path / "collection.tsv").write_text("id\ttext\n" + "".join(
        f"{r.passage.id}\t{r.passage.text}\n" for r in requests))
    (pytester.path / "a.run").write_text("".join(f"q Q0 {r.passage.id} {i + 1} {100 - i} a\n"
                                                 for i, r in enumerate(requests[:30])))
    (pytester.path / "b.run").write_text("".join(f"q Q0 {r.passage.id} {i + 1} {100 - i} b\n"
                                                 for i, r in enumerate(requests[30:])))
    (pytester.path / "bank.yaml").write_text("queries:\n  - id: q\n    text: q\n    questions:\n"
                                             "      - {id: q/t, text: What?}\n")
    monkeypatch.chdir(pytester.path)
    common = ["collection.tsv", "a.run", "b.run", "--bank", "bank.yaml", "--grader", "panel", "--grader-option",
              "members=lenient,strict", "--grader-option", "aggregate=weighted", "--cache", "c.sqlite", "--k", "30",
              "--no-progress"]
    from exam_harness.analysis import labels as labels_module
    from exam_harness.analysis.labels import Label

    monkeypatch.setattr(labels_module, "label_loop", lambda pairs, query_of, *_: [
        Label("q", tp, pid, labels[(pid, tp)]) for pid, tp in pairs])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["label", *common, "--size", "40"]) == 0
    assert main(["evaluate", *common, "--team-labels", "labels.jsonl", "--json", "e.json", "--report-dir", "none"]) == 0
    printed = capsys.readouterr().out
    assert "Judges against each other" in printed and "not calibrated" not in printed
    content = json.loads((pytester.path / "e.json").read_text())["sections"]["calibration"]
    rows = {row["judge"]: row for row in content["judges"]}
    assert rows["panel"]["first"] and rows["lenient"]["member"] and rows["strict"]["member"]
    kappas = {name: row["figures"]["kappa"]["value"] for name, row in rows.items()}
    assert kappas["panel"] > max(kappas["lenient"], kappas["strict"])
    between = {(b["a"], b["b"]): b for b in content["between"]}
    assert between[("lenient", "strict")]["pairs"] == 60 and between[("panel", "lenient")]["kappa"] is not None
