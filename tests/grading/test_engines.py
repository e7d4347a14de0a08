"""The grading pass through an engine (grading/engines.py), with in-process engines: results in any order are
recorded as the local pass records them and stored by the pass, a key answered twice keeps its first answer, a
failure is never stored, an engine that stops leaves its grades stored and the rest failures (exit status 75),
and a plugin's engine is the one a pytest session grades with."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from exam_harness.core.errors import GradingAborted
from exam_harness.core.models import Grade, GradeFailure, GradingRequest, Passage, Query, TestPoint
from exam_harness.graders.base import Grader, GraderConfig
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.engines import EngineBatch, EngineStopped
from exam_harness.grading.passes import run_grading_pass
from exam_harness.llm.cost import TokenUsage
from tests.features.ray_engine.graders import CountingGrader, expected_grade

pytest_plugins = ["pytester"]


def requests(count: int) -> list[GradingRequest]:
    query = Query(id="q", text="tides")
    points = [TestPoint(id=f"q/{t}", query_id="q", kind="question", text=f"question {t}") for t in range(3)]
    return [GradingRequest(query, points[i % 3], Passage(id=f"p{i}", text=f"passage {i}")) for i in range(count)]


def grade_of(request: GradingRequest, value: int | None = None) -> Grade:
    grade = expected_grade(request) if value is None else value
    return Grade(grade=grade, grader="counting", raw_response=str(grade))


class ScriptedEngine:
    """Answers in reverse order, a batch of ``size`` at a time; ``fail`` pairs by passage id; after ``stop_after``
    batches raises EngineStopped (or, with ``stop``, says so in the batch)."""

    name = "scripted"

    def __init__(self, *, size: int = 4, fail: frozenset[str] = frozenset(), twice: bool = False,
                 stop_after: int | None = None, stop: str | None = None) -> None:
        self.size, self.fail, self.twice, self.stop_after, self.stop = size, fail, twice, stop_after, stop
        self.asked: list[str] = []

    def check(self, grader: Grader) -> None:
        pass

    def grade(self, todo: Sequence[tuple[str, GradingRequest]], *, chunk_size: int) -> Iterator[EngineBatch]:
        self.asked = [key for key, _ in todo]
        left = list(reversed(todo))
        for batch_number in range(len(left)):
            part, left = left[:self.size], left[self.size:]
            if not part:
                return
            if self.stop_after is not None and batch_number == self.stop_after and self.stop is None:
                raise EngineStopped("the cluster went away")
            results: list[tuple[str, Grade | GradeFailure]] = [
                (key, GradeFailure("refused") if r.passage.id in self.fail else grade_of(r)) for key, r in part]
            if self.twice:  # a retried batch answering again, with other grades: the first answer stands
                results += [(key, grade_of(r, 5 - expected_grade(r))) for key, r in part]
            stop = self.stop if self.stop_after is not None and batch_number == self.stop_after else None
            yield EngineBatch(results, TokenUsage(10.0, 1.0, len(part)), stop)

    def close(self) -> None:
        pass


def stored(path: Path) -> int:
    cache = GradeCache(path)
    try:
        return len(cache)
    finally:
        cache.close()


def test_results_in_any_order_are_recorded_and_stored_and_failures_are_not(tmp_path: Path) -> None:
    pairs = requests(12)
    engine = ScriptedEngine(fail=frozenset({"p3"}), twice=True)
    cache = GradeCache(tmp_path / "grades.sqlite")
    try:
        outcome = run_grading_pass(CountingGrader(GraderConfig()), pairs, cache, chunk_size=4, engine=engine)
    finally:
        cache.close()
    assert len(engine.asked) == 12
    assert outcome.grades == {(r.passage.id, r.test_point.id): expected_grade(r) for r in pairs if r.passage.id != "p3"}
    assert outcome.failures == {("p3", "q/0"): "refused"}
    assert outcome.graded == 11 and stored(tmp_path / "grades.sqlite") == 11
    again = GradeCache(tmp_path / "grades.sqlite")
    try:  # the next pass asks the engine only for the failed pair
        engine = ScriptedEngine()
        rerun = run_grading_pass(CountingGrader(GraderConfig()), pairs, again, chunk_size=4, engine=engine)
    finally:
        again.close()
    assert len(engine.asked) == 1 and rerun.cache_hits == 11 and not rerun.failures


@pytest.mark.parametrize("how", ["stopped", "said"])
def test_an_engine_that_stops_keeps_its_grades_and_fails_the_rest(tmp_path: Path, how: str) -> None:
    pairs = requests(12)
    engine = ScriptedEngine(stop_after=1, stop="the server went away" if how == "said" else None)
    cache = GradeCache(tmp_path / "grades.sqlite")
    try:
        with pytest.raises(GradingAborted) as raised:
            run_grading_pass(CountingGrader(GraderConfig()), pairs, cache, chunk_size=4, engine=engine)
    finally:
        cache.close()
    kept = 8 if how == "said" else 4  # a batch that says stop is recorded first
    assert raised.value.graded == kept and raised.value.remaining == 12 - kept
    assert ("cluster went away" if how == "stopped" else "server went away") in str(raised.value)
    assert stored(tmp_path / "grades.sqlite") == kept


ENGINE_CONFTEST = '''
from exam_harness.grading.engines import EngineBatch
from exam_harness.core.models import Grade

USED = []


class InProcess:
    name = "in-process"

    def __init__(self, recipe):
        self.grader = recipe.build()  # the recipe builds the session's grader again

    def check(self, grader):
        pass

    def grade(self, todo, *, chunk_size):
        USED.append(len(todo))
        for start in range(0, len(todo), chunk_size):
            part = todo[start:start + chunk_size]
            yield EngineBatch(list(zip([k for k, _ in part], self.grader.grade_batch([r for _, r in part]))))

    def close(self):
        print(f"engine graded {sum(USED)} pairs")


def pytest_exam_grading_engine(options, grader, recipe):
    return InProcess(recipe)
'''


def test_a_plugins_engine_grades_a_pytest_session(project: pytest.Pytester) -> None:
    whole = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "local.sqlite")
    assert whole.ret == 0, whole.stdout.str()
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text() + ENGINE_CONFTEST)
    engine = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "engine.sqlite", "-s")
    assert engine.ret == 0, engine.stdout.str()
    engine.stdout.fnmatch_lines(["*engine graded [1-9]* pairs*"])
    assert stored(project.path / "engine.sqlite") == stored(project.path / "local.sqlite") > 0
