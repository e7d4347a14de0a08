"""A grading pass prepares its grader once (Grader.prepare); the embedding grader encodes each text once.

The embedding grader's pass encodes every distinct text in :meth:`EmbeddingGrader.prepare`, longest
first, in model batches of its own size (``encode_batch_size``), and grades by looking vectors up. The
grades must be those of encoding chunk by chunk, as grade_batch alone does. They are equal up to float
rounding: a text's vector depends, in its last bit, on which texts share its padded model batch (the
matrix shapes change the order of float32 sums), so a cosine may move by about 1e-7, which changes a
grade only when the cosine lies that close to a cut point and a stored 4-decimal raw response only
when it lies that close to a rounding boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.graders import embedding
from exam_harness.graders.base import GradeFailure, Grader, GraderConfig, GradeResult, GradingRequest
from exam_harness.graders.embedding import EmbeddingGrader
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import pool_pairs, run_grading_pass
from exam_harness.io import load_bank, load_runs
from tests.helpers import KeywordGrader
from tests.paths import REPO

ROOT = REPO
TOLERANCE = 1e-5  # far above the ~1e-7 that batch composition moves a float32 cosine


@pytest.fixture(scope="module")
def model() -> Any:
    """The bundled model, loaded once for the module (a load takes seconds)."""
    return EmbeddingGrader(GraderConfig())._load()


@pytest.fixture
def make(model: Any) -> Callable[..., EmbeddingGrader]:
    """Embedding graders built as a user's would be, sharing the module's loaded model."""

    def build(config: GraderConfig | None = None) -> EmbeddingGrader:
        grader = EmbeddingGrader(config or GraderConfig())
        grader._model = model  # what _load() would set, without loading the files again
        return grader

    return build


@pytest.fixture(scope="module")
def example_requests() -> list[GradingRequest]:
    """The example exam's pool pairs (banks/example.yaml x runs/, top-20): questions with and without
    gold answers, nuggets, ranked passages and generated answers."""
    loaded = load_runs([ROOT / "runs"])
    banks = load_bank(ROOT / "banks" / "example.yaml")
    return pool_pairs(banks, loaded.data.runs.values(), loaded.data.passages, k=20)


class Recorder:
    """Wraps a grader's grade_batch: every result it returned, by (passage id, test point id)."""

    def __init__(self, grader: Grader) -> None:
        self.results: dict[tuple[str, str], GradeResult] = {}
        self._grade_batch = grader.grade_batch
        grader.grade_batch = self  # type: ignore[method-assign]

    def __call__(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        results = self._grade_batch(requests)
        self.results.update({(r.passage.id, r.test_point.id): g for r, g in zip(requests, results)})
        return results


def per_chunk(grader: EmbeddingGrader, requests: Sequence[GradingRequest], chunk: int) -> list[GradeResult]:
    """Grades as before prepare existed: each chunk one grade_batch call of a grader never prepared."""
    return [result for start in range(0, len(requests), chunk)
            for result in grader.grade_batch(requests[start : start + chunk])]


def near(value: float, marks: Sequence[float]) -> bool:
    return any(abs(value - mark) < TOLERANCE for mark in marks)


def assert_same_grades(requests: Sequence[GradingRequest], got: dict[tuple[str, str], GradeResult],
                       expected: Sequence[GradeResult], cut_points: Sequence[float]) -> None:
    assert len(got) == len({(r.passage.id, r.test_point.id) for r in requests})
    exact = 0
    for request, before in zip(requests, expected):
        now = got[(request.passage.id, request.test_point.id)]
        assert isinstance(now, Grade) and isinstance(before, Grade)
        assert now.details["decided_by"] == before.details["decided_by"]
        cosine, old = now.details["cosine"], before.details["cosine"]
        assert cosine == pytest.approx(old, abs=TOLERANCE)
        exact += cosine == old
        if not near(old, cut_points):  # at an exact cut-point tie a last-bit difference may move the grade
            assert now.grade == before.grade, request
        boundaries = [round(old, 4) + step * 5e-5 for step in (-1, 1)]
        if not near(old, boundaries):
            assert now.raw_response == before.raw_response, request
    assert exact >= 0.9 * len(expected)  # most cosines are bit-for-bit the same after their 6-decimal rounding


Make = Callable[..., EmbeddingGrader]


@pytest.mark.slow
@pytest.mark.parametrize("span", ["passage", "sentence"])
def test_a_prepared_pass_grades_as_encoding_chunk_by_chunk(
    example_requests: list[GradingRequest], make: Make, span: str
) -> None:
    requests = example_requests[::2] if span == "passage" else example_requests[::5]  # a sample keeps it quick
    config = GraderConfig(options={"span": span})
    grader = make(config)
    recorder = Recorder(grader)
    outcome = run_grading_pass(grader, requests, GradeCache(None), chunk_size=16)
    assert outcome.graded == outcome.unique and not outcome.failures
    assert_same_grades(requests, recorder.results, per_chunk(make(config), requests, 16), grader.cut_points)
    if span == "passage":
        assert set(outcome.decided_by) == {"answer-key", "embedding"}  # both parts of the grader took part


class EncodeSpy:
    """Wraps the model's encode: the texts and batch size of every call."""

    def __init__(self, grader: EmbeddingGrader, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[list[str], int]] = []
        model = grader._load()
        original = model.encode

        def encode(texts: list[str], *args: Any, batch_size: int = 32, **kwargs: Any) -> Any:
            self.calls.append((list(texts), batch_size))
            return original(texts, *args, batch_size=batch_size, **kwargs)

        monkeypatch.setattr(model, "encode", encode)

    @property
    def texts(self) -> list[str]:
        return [text for texts, _ in self.calls for text in texts]


def texts_read(grader: EmbeddingGrader, requests: list[GradingRequest]) -> set[str]:
    """What the grader encodes for ``requests``: test points, queries, passages and their spans, and for
    gold answers the answer and the question followed by the answer."""
    texts = {grader.readable(t) for r in requests for t in (r.test_point.text, r.query.text)}
    texts |= {s for r in requests for s in grader.spans_of(r.passage.text)}
    texts |= {grader.readable(t) for r in requests for gold in r.test_point.gold_answers
              for t in (gold, f"{r.test_point.text} {gold}")}
    return texts


@pytest.mark.slow
def test_each_distinct_text_is_encoded_once_longest_first(
    example_requests: list[GradingRequest], make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    grader = make()
    spy = EncodeSpy(grader, monkeypatch)
    run_grading_pass(grader, example_requests, GradeCache(None), chunk_size=16)
    distinct = texts_read(grader, example_requests)
    assert sorted(spy.texts) == sorted(distinct)  # each once, and no chunk encoded anything again
    (texts, _batch), = spy.calls  # one call: the example's texts are fewer than an encode slice
    assert [len(t) for t in texts] == sorted((len(t) for t in texts), reverse=True)


@pytest.mark.slow
def test_a_large_pass_is_encoded_in_slices_of_one_length_order(
    example_requests: list[GradingRequest], make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = example_requests[:60]
    whole = make()
    whole.prepare(requests)
    monkeypatch.setattr(embedding, "ENCODE_SLICE", 7)
    sliced = make()
    spy = EncodeSpy(sliced, monkeypatch)
    sliced.prepare(requests)
    assert len(spy.calls) > 1 and all(len(texts) <= 7 for texts, _ in spy.calls)
    assert [len(t) for t in spy.texts] == sorted((len(t) for t in spy.texts), reverse=True)
    # The same rows of the same vectors, up to the last bits a batch of other texts around one may change.
    for a, b in zip(sliced.grade_batch(requests), whole.grade_batch(requests), strict=True):
        assert isinstance(a, Grade) and isinstance(b, Grade) and a.grade == b.grade
        assert a.details == pytest.approx(b.details, abs=1e-5)


@pytest.mark.slow
def test_the_model_batch_is_its_own_option_not_the_grading_chunk(
    example_requests: list[GradingRequest], make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    grader = make(GraderConfig(batch_size=7, options={"encode_batch_size": "5"}))  # batch_size: --exam-batch-size
    spy = EncodeSpy(grader, monkeypatch)
    run_grading_pass(grader, example_requests[:40], GradeCache(None), chunk_size=7)
    grader.grade_batch(example_requests[40:45])  # unprepared texts: encoded with their batch, same model batch
    assert len(spy.calls) == 2 and {batch for _, batch in spy.calls} == {5}
    assert make(GraderConfig(batch_size=7)).encode_batch_size == 64


@pytest.mark.slow
def test_grade_batch_encodes_only_what_the_pass_did_not_prepare(
    example_requests: list[GradingRequest], make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    grader = make()
    grader.prepare(example_requests[:30])
    spy = EncodeSpy(grader, monkeypatch)
    grader.grade_batch(example_requests[:30])
    assert spy.calls == []
    question = "What is a completely different question about volcanoes?"
    request = GradingRequest(example_requests[0].query, example_requests[0].test_point.model_copy(
        update={"text": question}), example_requests[0].passage)
    grader.grade_batch([request])
    assert spy.texts == [question]  # the passage's vector was prepared


@pytest.mark.slow
def test_a_failed_preparation_leaves_the_work_to_the_batches(
    example_requests: list[GradingRequest], make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = example_requests[:40]
    grader = make()
    calls = []
    original = grader.encode

    def encode_failing_once(texts: Sequence[str]) -> Any:
        calls.append(len(texts))
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return original(texts)

    monkeypatch.setattr(grader, "encode", encode_failing_once)
    recorder = Recorder(grader)
    outcome = run_grading_pass(grader, requests, GradeCache(None), chunk_size=16)
    assert outcome.graded == outcome.unique and not outcome.failures
    assert len(calls) == 1 + -(-outcome.unique // 16)  # the failed preparation, then one encode per chunk
    assert_same_grades(requests, recorder.results, per_chunk(make(), requests, 16), grader.cut_points)


@pytest.mark.slow
def test_vectors_are_kept_for_one_pass_only(example_requests: list[GradingRequest], make: Make) -> None:
    grader = make()
    first, second = example_requests[:20], example_requests[-20:]
    grader.prepare(first)
    grader.prepare(second)
    texts = texts_read(grader, second)
    assert set(grader._rows) == texts and len(grader._matrix) == len(texts)
    grader.close()
    assert grader._rows == {} and grader._matrix is None and grader._model is None
    [again] = grader.grade_batch(first[:1])  # the model loads again
    assert again == per_chunk(make(), first[:1], 1)[0]


# -- the hook itself, with a grader that needs no model -------------------------------------------------


class PreparingGrader(KeywordGrader):
    """The keyword grader, recording what each prepare call was given."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        super().__init__()
        self.prepared: list[list[tuple[str, str]]] = []
        self.fail_with = fail_with

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        self.prepared.append([(r.passage.id, r.test_point.id) for r in requests])
        if self.fail_with is not None:
            raise self.fail_with


def keyword_requests() -> list[GradingRequest]:
    query = Query(id="q", text="q")
    points = [TestPoint(id=f"q/{w}", query_id="q", kind="question", text=f"What is {w}?") for w in ("alpha", "beta")]
    passages = [Passage(id="p1", text="alpha here"), Passage(id="p2", text="beta here"),
                Passage(id="p3", text="alpha here")]  # p3: p1's text, so the same cache keys as p1
    return [GradingRequest(query, tp, p) for p in passages for tp in points]


def test_the_pass_prepares_once_with_the_pairs_the_cache_misses() -> None:
    requests = keyword_requests()
    cache = GradeCache(None)
    run_grading_pass(KeywordGrader(), requests[:2], cache)  # p1's two pairs are cached
    grader = PreparingGrader()
    outcome = run_grading_pass(grader, requests, cache, chunk_size=1)
    assert grader.prepared == [[("p2", "q/alpha"), ("p2", "q/beta")]]  # p3 shares p1's cached grades
    assert outcome.graded == 2 and outcome.cache_hits == 2
    run_grading_pass(grader, requests, cache)
    assert len(grader.prepared) == 1  # nothing to grade, nothing to prepare


def test_a_grader_without_prepare_grades_as_before() -> None:
    assert Grader.prepare is KeywordGrader.prepare  # the default hook is the base class's no-op
    outcome = run_grading_pass(KeywordGrader(), keyword_requests(), GradeCache(None))
    assert outcome.grades == {("p1", "q/alpha"): 5, ("p1", "q/beta"): 0, ("p2", "q/alpha"): 0,
                              ("p2", "q/beta"): 5, ("p3", "q/alpha"): 5, ("p3", "q/beta"): 0}


def test_a_preparation_error_is_said_and_left_to_the_batches_unless_it_is_a_usage_error() -> None:
    grader = PreparingGrader(fail_with=RuntimeError("boom"))
    said: list[str] = []
    outcome = run_grading_pass(grader, keyword_requests(), GradeCache(None, notify=said.append))
    assert outcome.graded == 4 and not outcome.failures
    assert said == [f"grader {grader.name!r} could not prepare the pass (RuntimeError: boom); each batch does its own work"]
    assert outcome.cache_notices == said
    with pytest.raises(ConfigError, match="no such model"):
        run_grading_pass(PreparingGrader(fail_with=ConfigError("no such model")), keyword_requests(), GradeCache(None))


class FailingBatches(PreparingGrader):
    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        return [GradeFailure("server said 500")] * len(requests)


def test_failures_after_a_preparation_are_still_reported_per_pair() -> None:
    outcome = run_grading_pass(FailingBatches(), keyword_requests(), GradeCache(None))
    assert len(outcome.failures) == 6 and outcome.graded == 0
