"""The extractive QA grader on a transparent tiny BERT that answers ' Paris' wherever it occurs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.core.models import test_point_id as make_id
from exam_harness.graders.answer_key import gold_fingerprint
from exam_harness.graders.base import GradeFailure, GraderConfig, GradingRequest
from exam_harness.graders.qa import QAGrader
from exam_harness.graders.registry import default_registry
from tests.tiny_models import build_extractive_qa, save_model, train_qa_tokenizer

QUERY = Query(id="q1", text="eiffel tower")
WITH_ANSWER = Passage(id="p1", text="The Eiffel Tower is in Paris, the capital of France.")
WITHOUT = Passage(id="p2", text="The heart pumps blood through the arteries and veins of the body.")


@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = train_qa_tokenizer()
    return save_model(build_extractive_qa(tok, " Paris"), tok, tmp_path_factory.mktemp("tiny-qa"))


@pytest.fixture(scope="module")
def grader(qa_dir: Path) -> QAGrader:
    return QAGrader(GraderConfig(model=str(qa_dir)))


def question(text: str = "Where is the Eiffel Tower?", gold: tuple[str, ...] = ()) -> TestPoint:
    return TestPoint(id=make_id("q1", text), query_id="q1", kind="question", text=text, gold_answers=gold)


def req(tp: TestPoint, passage: Passage) -> GradingRequest:
    return GradingRequest(query=QUERY, test_point=tp, passage=passage)


def test_answer_spans_and_null_answers(grader: QAGrader) -> None:
    answers = grader.answer(
        [
            ("Where is the tower?", WITH_ANSWER.text),
            ("Where is the tower?", WITHOUT.text),
            ("Where?", "Nothing here. " * 200 + "The tower is in Paris."),  # answer in a later window
        ]
    )
    (a1, s1, n1), (a2, s2, n2), (a3, _, _) = answers
    assert a1 == "Paris" and s1 > n1
    assert a2 == "" and n2 > s2
    assert a3 == "Paris"


def test_grades_answer_or_not(grader: QAGrader) -> None:
    results = grader.grade_batch([req(question(), WITH_ANSWER), req(question(), WITHOUT)])
    found, missing = results
    assert isinstance(found, Grade) and found.grade == 1 and found.extracted_answer == "Paris"
    assert found.details["prompt_class"] == "ExtractiveQA" and found.details["score"] > found.details["null_score"]
    assert isinstance(missing, Grade) and missing.grade == 0 and missing.extracted_answer is None


def test_gold_answers_are_checked_with_the_answer_key_rule(grader: QAGrader) -> None:
    keyed = question(gold=("paris",))
    right, wrong = grader.grade_batch([req(keyed, WITH_ANSWER), req(question(gold=("Lyon",)), WITH_ANSWER)])
    assert isinstance(right, Grade) and right.grade == 1
    assert right.details["gold_fingerprint"] == gold_fingerprint(keyed.text, "paris")  # never the answer itself
    assert "paris" not in json.dumps(right.details)
    assert isinstance(wrong, Grade) and wrong.grade == 0 and wrong.extracted_answer == "Paris"


def test_answer_key_off_grades_any_answer(qa_dir: Path) -> None:
    lenient = QAGrader(GraderConfig(model=str(qa_dir), options={"answer_key": "off"}))
    [result] = lenient.grade_batch([req(question(gold=("Lyon",)), WITH_ANSWER)])
    assert isinstance(result, Grade) and result.grade == 1
    assert lenient.cache_payload(req(question(gold=("Lyon",)), WITH_ANSWER)).get("gold_answers") is None


def test_nuggets_are_not_supported(grader: QAGrader) -> None:
    nugget = TestPoint(id=make_id("q1", "tower"), query_id="q1", kind="nugget", text="tower")
    assert "answers questions" in (grader.supports(nugget) or "")
    [result] = grader.grade_batch([req(nugget, WITH_ANSWER)])
    assert isinstance(result, GradeFailure)


def test_spec(grader: QAGrader, qa_dir: Path) -> None:
    spec = grader.spec()
    assert spec.name == "qa" and spec.model == str(qa_dir) and spec.max_grade == 1 and spec.default_min_grade == 1
    assert spec.options["handle_impossible_answer"] is True and spec.options["max_answer_len"] == 15


def test_option_and_loading_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"grader 'qa': unknown option 'stride'.*Did you mean 'doc_stride'"):
        QAGrader(GraderConfig(model=str(tmp_path), options={"stride": "64"}))
    with pytest.raises(ConfigError, match="grader 'qa': option max_seq_len='8' must be an integer >= 16"):
        default_registry().create("qa", GraderConfig(model=str(tmp_path), options={"max_seq_len": "8"}))
    with pytest.raises(ConfigError, match="cannot load model"):
        QAGrader(GraderConfig(model=str(tmp_path / "missing")))
