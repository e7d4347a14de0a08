"""The offline default grader: bundled all-MiniLM-L6-v2, support of its signals cut into 0..5
(reading like a careful person: tests/graders/test_default_grader.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.embedding import MAX_SENTENCE_SCAN_CHARS, EmbeddingGrader
from exam_harness.graders.registry import default_registry
from exam_harness.graders.support import shipped_model, signals_of_reason
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import run_grading_pass


@pytest.fixture(scope="module")
def grader() -> EmbeddingGrader:
    return EmbeddingGrader(GraderConfig())


def request(question: str, passage: str) -> GradingRequest:
    # The question stands for its query too: the query signal reads the query's cosine with the passage.
    return GradingRequest(
        Query(id="q", text=question), TestPoint(id="q/1", query_id="q", kind="question", text=question), Passage(id="p", text=passage)
    )


CUT_POINTS = shipped_model().cut_points


@pytest.mark.parametrize(
    ("support", "grade"),
    [(0.0, 0), (CUT_POINTS[0] - 1e-6, 0), (CUT_POINTS[0], 1), (CUT_POINTS[1], 2), (CUT_POINTS[2], 3),
     (CUT_POINTS[3] - 1e-6, 3), (CUT_POINTS[3], 4), (CUT_POINTS[4], 5), (1.0, 5)],
)
def test_cut_points_map_support_to_grades(grader: EmbeddingGrader, support: float, grade: int) -> None:
    assert grader.grade_of(support) == grade


def test_answering_passage_outgrades_unrelated_one(grader: EmbeddingGrader) -> None:
    question = "What pulls the oceans toward the moon to make tides?"
    answer = "The moon's gravitational pull draws the oceans into a bulge, which causes the tides."
    unrelated = "A good espresso needs finely ground coffee and water at about 93 degrees."
    good, bad = grader.grade_batch([request(question, answer), request(question, unrelated)])
    assert isinstance(good, Grade) and isinstance(bad, Grade)
    assert good.raw_response is not None and bad.raw_response is not None
    assert good.grade >= 4 and bad.grade <= 1
    assert good.raw_response is not None and bad.raw_response is not None
    good_read, bad_read = signals_of_reason(good.raw_response), signals_of_reason(bad.raw_response)
    assert good_read is not None and bad_read is not None
    (good_support, good_signals), (bad_support, _) = good_read, bad_read
    assert good_support > bad_support
    assert good.details["cosine"] == pytest.approx(good_signals.span, abs=1e-4)


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


# -- the model's identity in the cache key ---------------------------------------------------------


def linked_model(folder: Path) -> Path:
    """A copy of the bundled model made of links to its files (subfolders included)."""
    source = Path(EmbeddingGrader(GraderConfig()).model_path)
    for path in source.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    return folder


def test_a_model_option_is_named_and_fingerprinted_in_the_spec(tmp_path: Path) -> None:
    default = EmbeddingGrader(GraderConfig()).spec()
    folder = linked_model(tmp_path / "my-model")
    by_option = EmbeddingGrader(GraderConfig(options={"model": str(folder)})).spec()
    assert by_option.model == str(folder) and (by_option.revision or "").startswith("local-")
    assert by_option.fingerprint() != default.fingerprint()
    # --exam-model names the same model the same way.
    assert EmbeddingGrader(GraderConfig(model=str(folder))).spec() == by_option
    # Another pooling configuration in the same folder is another model.
    pooling = folder / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    pooling.unlink()
    pooling.write_text(json.dumps({**settings, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    changed = EmbeddingGrader(GraderConfig(options={"model": str(folder)})).spec()
    assert changed.model == by_option.model and changed.revision != by_option.revision
    # The bundled model named by its path is the default model, whose cached grades stay valid.
    bundled = EmbeddingGrader(GraderConfig()).model_path
    assert EmbeddingGrader(GraderConfig(options={"model": bundled})).spec() == default


@pytest.mark.slow
def test_grades_of_one_model_are_no_hits_for_another(grader: EmbeddingGrader, tmp_path: Path) -> None:
    requests = [request("What pulls the oceans?", "The moon's gravity pulls the oceans.")]
    cache = GradeCache(None)
    assert run_grading_pass(grader, requests, cache).graded == 1
    other = EmbeddingGrader(GraderConfig(options={"model": str(linked_model(tmp_path / "other"))}))
    outcome = run_grading_pass(other, requests, cache)
    assert outcome.cache_hits == 0 and outcome.graded == 1
    assert run_grading_pass(grader, requests, cache).cache_hits == 1


# -- bounded work per pair ---------------------------------------------------------------------------

SENTENCES = (
    "The moon's gravitational pull draws the oceans into a bulge, which causes the tides. ",
    "Sea levels rise and fall twice a day along most coasts of the world. ",
    "Internationalization of tidal predictions requires harmonic constituents measured over decades. ",
)


def long_text(characters: int) -> str:
    text = "".join(SENTENCES[i % 3] for i in range(characters // 60 + 1))
    return text[:characters]


@pytest.mark.slow
def test_a_huge_passage_costs_what_a_long_one_does(grader: EmbeddingGrader, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model encodes the same beginning of a 50 MB passage as of a 20,000-character one that
    starts alike (before passages were cut it read all 50 MB: 143 s and 7.7 GB)."""
    question = "What pulls the oceans toward the moon to make tides?"
    encoded: list[list[str]] = []
    encode = grader.encode

    def recording(texts: Sequence[str]) -> Any:
        encoded.append(list(texts))
        return encode(texts)

    monkeypatch.setattr(grader, "encode", recording)
    (result,) = grader.grade_batch([request(question, long_text(50_000_000))])
    (same,) = grader.grade_batch([request(question, long_text(20_000))])
    assert isinstance(result, Grade) and isinstance(same, Grade) and result.raw_response == same.raw_response
    huge_texts, long_texts = encoded
    assert huge_texts == long_texts and max(map(len, huge_texts)) < 20_000


def test_sentence_mode_looks_for_sentences_in_a_bounded_beginning() -> None:
    sentences = EmbeddingGrader(GraderConfig(options={"span": "sentence"}))
    spans = sentences.spans_of(long_text(50_000_000))
    assert 1 < len(spans) <= MAX_SENTENCE_SCAN_CHARS // 60
    assert sum(len(s) for s in spans) < 2 * MAX_SENTENCE_SCAN_CHARS


@pytest.mark.parametrize(
    "text",
    [
        long_text(30_000),  # a long passage of ordinary prose
        "tide " * 300 + " " * 20_000 + "moon " * 2000,  # a run of spaces inside the part the model reads
        "Supercalifragilistic" * 300 + " and tides " * 1000,  # one word longer than the first cut
        "潮汐是由月球引力引起的。" * 2000,  # no spaces at all: word pieces of a few characters each
    ],
    ids=["prose", "space-run", "long-word", "no-spaces"],
)
def test_cutting_a_text_never_changes_what_the_model_reads(grader: EmbeddingGrader, text: str) -> None:
    cut = grader.readable(text)
    assert len(cut) < len(text)
    model = grader._load()
    features = [model.tokenize([t])["input_ids"][0].tolist() for t in (text, cut)]
    assert features[0] == features[1]


def test_short_texts_are_not_cut(grader: EmbeddingGrader) -> None:
    text = long_text(4000)
    assert grader.readable(text) is text


# --- the answer key decides test points with gold answers --------------------------------------

VENV_Q = "How do I create an isolated Python environment for a project?"  # cosine 0.36: grade 1
VENV_PASSAGE = "The venv module in the standard library creates virtual environments."


def keyed_request(question: str, passage: str, answers: tuple[str, ...]) -> GradingRequest:
    return GradingRequest(Query(id="q", text="q"), TestPoint(id="q/1", query_id="q", kind="question", text=question,
                                                             gold_answers=answers), Passage(id="p", text=passage))


@pytest.mark.slow
def test_a_passage_stating_the_gold_answer_gets_the_top_grade(grader: EmbeddingGrader) -> None:
    """The new user's first required question: the passage states the answer outright, yet its cosine
    with the question sits below grade 4. The answer model reads the answer (the question followed by it
    comes close to the passage), and with the answer key the gold answer in it decides, and says so."""
    [plain] = EmbeddingGrader(GraderConfig(options={"answer_key": "false"})).grade_batch(
        [keyed_request(VENV_Q, VENV_PASSAGE, ("venv",))])
    [keyed] = grader.grade_batch([keyed_request(VENV_Q, VENV_PASSAGE, ("venv",))])
    assert isinstance(plain, Grade) and isinstance(keyed, Grade)
    assert plain.details["cosine"] < 0.4 and plain.details["statement_cosine"] > plain.details["cosine"]
    assert plain.grade >= 4 and plain.details["decided_by"] == "embedding"
    assert keyed.grade == 5 and keyed.details["decided_by"] == "answer-key"
    assert keyed.raw_response is not None and keyed.raw_response.startswith("gold answer found")
    assert "venv" not in json.dumps(keyed.details) and "gold_fingerprint" in keyed.details  # no gold in clear
    assert grader.decided_by(keyed.raw_response) == "answer-key"


@pytest.mark.slow
def test_without_a_gold_match_the_embedding_grade_stands(grader: EmbeddingGrader) -> None:
    keyed = keyed_request(VENV_Q, VENV_PASSAGE, ("virtualenv wrapper",))
    [with_key] = grader.grade_batch([keyed])
    [without] = EmbeddingGrader(GraderConfig(options={"answer_key": "false"})).grade_batch([keyed])
    assert isinstance(with_key, Grade) and isinstance(without, Grade)
    assert with_key.grade == without.grade and with_key.details["decided_by"] == "embedding"
    assert grader.decided_by(with_key.raw_response) == "embedding"


def test_the_answer_key_is_part_of_the_spec(grader: EmbeddingGrader) -> None:
    off = EmbeddingGrader(GraderConfig(options={"answer_key": "false"})).spec()
    assert off.options["answer_key"] is False and grader.spec().options["answer_key"]
    assert off.fingerprint() != grader.spec().fingerprint()  # no cached grade crosses the switch
