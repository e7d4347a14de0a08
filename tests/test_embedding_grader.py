"""The offline default grader: bundled all-MiniLM-L6-v2, cosine similarity cut into 0..5."""

from __future__ import annotations

import re

import pytest

from exam_harness.errors import ConfigError
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.embedding import CUT_POINTS, EmbeddingGrader
from exam_harness.graders.registry import default_registry
from exam_harness.models import Passage, Query, TestPoint


@pytest.fixture(scope="module")
def grader() -> EmbeddingGrader:
    return EmbeddingGrader(GraderConfig())


def request(question: str, passage: str) -> GradingRequest:
    return GradingRequest(
        Query(id="q", text="q"), TestPoint(id="q/1", query_id="q", kind="question", text=question), Passage(id="p", text=passage)
    )


@pytest.mark.parametrize(
    ("similarity", "grade"),
    [(-0.2, 0), (0.0, 0), (0.29, 0), (CUT_POINTS[0], 1), (0.39, 1), (CUT_POINTS[1], 2), (0.55, 3), (0.6, 4), (0.69, 4), (0.7, 5), (0.99, 5)],
)
def test_cut_points_map_similarity_to_grades(grader: EmbeddingGrader, similarity: float, grade: int) -> None:
    assert grader.grade_of(similarity) == grade


def test_answering_passage_outgrades_unrelated_one(grader: EmbeddingGrader) -> None:
    question = "What pulls the oceans toward the moon to make tides?"
    answer = "The moon's gravitational pull draws the oceans into a bulge, which causes the tides."
    unrelated = "A good espresso needs finely ground coffee and water at about 93 degrees."
    good, bad = grader.grade_batch([request(question, answer), request(question, unrelated)])
    assert good.grade >= 4 and bad.grade <= 1
    assert float(good.raw_response) > float(bad.raw_response)
    assert good.details["cosine"] == pytest.approx(float(good.raw_response), abs=1e-4)


def test_spec_records_model_and_cut_points(grader: EmbeddingGrader) -> None:
    spec = grader.spec()
    assert spec.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert spec.options["cut_points"] == list(CUT_POINTS)
    other = EmbeddingGrader(GraderConfig(options={"cut_points": "0.1,0.2,0.3,0.4,0.5"})).spec()
    assert other.fingerprint() != spec.fingerprint()  # new cut points, new cache keys


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cut_points": "0.5,0.4,0.3,0.2,0.1"}, "5 increasing numbers"),
        ({"cut_points": "a,b"}, "5 comma-separated numbers"),
        ({"span": "sentences"}, "option span='sentences'"),
        ({"colour": "blue"}, "grader 'embedding': unknown option 'colour'"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        EmbeddingGrader(GraderConfig(options=options))
    with pytest.raises(ConfigError, match=re.escape(message)):
        default_registry().create("embedding", GraderConfig(options=options))
