"""LLMGrader over a scripted backend: every prompt mode, parsing, provenance, options, custom prompts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.core.models import test_point_id as make_id
from exam_harness.graders.answer_key import gold_fingerprint
from exam_harness.graders.base import GradeFailure, GradingRequest, read_grader_options
from exam_harness.graders.llm import LLM_OPTIONS, LLMGrader, resolve_mode
from exam_harness.llm import prompts
from exam_harness.llm.backend import TextBackend
from exam_harness.llm.fewshot import EXAMPLES, FAGGIOLI_B_FEW, SUN_FEW
from exam_harness.llm.modes import MODES
from tests.graders.support import ScriptedBackend

QUERY = Query(id="q1", text="where is the eiffel tower")
PASSAGE = Passage(id="p1", text="The Eiffel Tower is in Paris, the capital of France.")
OTHER = Passage(id="p2", text="Photosynthesis turns light into sugar.")


def question(text: str = "Where is the Eiffel Tower?", gold: tuple[str, ...] = ()) -> TestPoint:
    return TestPoint(id=make_id("q1", text), query_id="q1", kind="question", text=text, gold_answers=gold)


def nugget(text: str = "Eiffel Tower in Paris") -> TestPoint:
    return TestPoint(id=make_id("q1", text), query_id="q1", kind="nugget", text=text)


def req(tp: TestPoint, passage: Passage = PASSAGE, query: Query = QUERY) -> GradingRequest:
    return GradingRequest(query=query, test_point=tp, passage=passage)


def constant(text: str) -> Callable[[str], str]:
    return lambda _prompt: text


def test_backend_protocol_is_satisfied_by_the_fake() -> None:
    assert isinstance(ScriptedBackend(constant("1")), TextBackend)


# -- self-rating --------------------------------------------------------------------------


@pytest.mark.parametrize(("response", "grade"), [("4", 4), (" 5.", 5), ("0", 0), ("no answer", 0), ("Paris", 1)])
def test_self_rating_parses_the_method_rule(response: str, grade: int) -> None:
    grader = LLMGrader(ScriptedBackend(constant(response)))
    [result] = grader.grade_batch([req(question())])
    assert isinstance(result, Grade)
    assert result.grade == grade
    assert result.raw_response == response
    assert result.extracted_answer is None


@pytest.mark.parametrize("response", ["", "   ", "7", "-1", "4.5", "10"])
def test_answers_off_the_scale_are_failures_never_grades(response: str) -> None:
    """Empty answers and numbers off 0..5 are malformed: a failure (which the cache never stores), not the
    method's fallback grade 1 for other text. (The OpenAI backend asks the server again first.)"""
    grader = LLMGrader(ScriptedBackend(constant(response)))
    [result] = grader.grade_batch([req(question())])
    assert isinstance(result, GradeFailure)
    assert result.message.startswith("malformed response")


def test_self_rating_picks_the_prompt_by_test_point_kind_and_records_provenance() -> None:
    backend = ScriptedBackend(constant("3"), probabilities=(0.1, 0.1, 0.1, 0.5, 0.1, 0.1))
    grader = LLMGrader(backend, name="hf")
    q, n = question(), nugget()
    results = grader.grade_batch([req(q), req(n)])
    [call] = backend.calls
    assert call["rating_scale"] == 5 and call["max_new_tokens"] == 32
    q_prompt, n_prompt = call["prompts"]
    assert q_prompt.text == prompts.QUESTION_SELF_RATING.render(PASSAGE.text, question=q.text)
    assert n_prompt.text == prompts.NUGGET_SELF_RATING.render(PASSAGE.text, nugget=n.text)
    # only the passage is in the truncatable part; the question stays in the instruction part
    assert q_prompt.context == PASSAGE.text and q.text in q_prompt.before
    q_grade, n_grade = results
    assert isinstance(q_grade, Grade) and isinstance(n_grade, Grade)
    assert q_grade.grader == "hf"
    assert q_grade.details["prompt_class"] == "QuestionSelfRatedUnanswerablePromptWithChoices"
    assert n_grade.details["prompt_class"] == "NuggetSelfRatedPrompt"
    assert q_grade.details["model"] == "scripted/model" and q_grade.details["revision"] == "abc123"
    assert q_grade.probabilities == (0.1, 0.1, 0.1, 0.5, 0.1, 0.1)
    assert q_grade.expected_grade == pytest.approx(2.7)


def test_probabilities_of_the_wrong_length_are_dropped() -> None:
    grader = LLMGrader(ScriptedBackend(constant("3"), probabilities=(0.5, 0.5)))
    [result] = grader.grade_batch([req(question())])
    assert isinstance(result, Grade) and result.probabilities is None


def test_identical_prompts_are_sent_once() -> None:
    backend = ScriptedBackend(constant("2"))
    grader = LLMGrader(backend)
    q = question()
    results = grader.grade_batch([req(q), req(q, OTHER), req(q)])
    assert len(backend.calls[0]["prompts"]) == 2
    assert [r.grade for r in results if isinstance(r, Grade)] == [2, 2, 2]


def test_backend_failures_become_grade_failures_not_grades() -> None:
    backend = ScriptedBackend(lambda text: GradeFailure("server said 500") if "Photosynthesis" in text else "5")
    results = LLMGrader(backend).grade_batch([req(question()), req(question(), OTHER)])
    assert isinstance(results[0], Grade) and results[0].grade == 5
    assert isinstance(results[1], GradeFailure) and "500" in results[1].message


@pytest.mark.parametrize(
    ("mode", "tp", "reason"),
    [
        ("question-rating", nugget(), "grades questions only"),
        ("nugget-rating", question(), "grades nuggets only"),
        ("answer-extraction", nugget(), "grades questions only"),
        ("nugget-extraction", question(), "grades nuggets only"),
        ("answer-key", question(), "needs gold answers"),
        ("llm-verify", question(), "needs gold answers"),
    ],
)
def test_supports_says_why_not(mode: str, tp: TestPoint, reason: str) -> None:
    grader = LLMGrader(ScriptedBackend(constant("1")), prompt=mode)
    message = grader.supports(tp)
    assert message is not None and reason in message and tp.id in message
    [result] = grader.grade_batch([req(tp)])
    assert isinstance(result, GradeFailure) and reason in result.message


# -- answer extraction, answer key, verification ------------------------------------------


@pytest.mark.parametrize(("response", "grade"), [("Paris", 1), ("  In Paris.  ", 1), ("unknown", 0), ("(b)", 0), ("", 0)])
def test_answer_extraction_stores_the_answer(response: str, grade: int) -> None:
    backend = ScriptedBackend(constant(response))
    grader = LLMGrader(backend, prompt="answer-extraction")
    [result] = grader.grade_batch([req(question())])
    assert isinstance(result, Grade)
    assert result.grade == grade
    assert result.extracted_answer == response.strip()
    assert backend.calls[0]["rating_scale"] is None
    assert result.details["prompt_class"] == "QuestionCompleteConciseUnanswerablePromptWithChoices"
    assert grader.spec().default_min_grade == 1 and grader.spec().max_grade == 1


def test_nugget_extraction() -> None:
    grader = LLMGrader(ScriptedBackend(constant("in Paris")), prompt="nugget-extraction")
    [result] = grader.grade_batch([req(nugget())])
    assert isinstance(result, Grade) and result.grade == 1 and result.extracted_answer == "in Paris"
    assert result.details["prompt_class"] == "NuggetExtractionPrompt"


@pytest.mark.parametrize(("response", "grade"), [("In Paris", 1), ("paris, france", 1), ("Berlin", 0), ("unknown", 0)])
def test_answer_key_checks_gold_answers(response: str, grade: int) -> None:
    grader = LLMGrader(ScriptedBackend(constant(response)), prompt="answer-key")
    tp = question(gold=("Paris", "Paris, France"))
    assert grader.supports(tp) is None
    [result] = grader.grade_batch([req(tp)])
    assert isinstance(result, Grade) and result.grade == grade
    assert result.extracted_answer == response
    if grade:  # which gold answer matched, as a fingerprint: gold answers are secrets and grades are cached
        assert result.details["gold_fingerprint"] in {gold_fingerprint(tp.text, g) for g in tp.gold_answers}
        assert "Paris" not in json.dumps(result.details)


def test_answer_key_payload_covers_gold_answers() -> None:
    grader = LLMGrader(ScriptedBackend(constant("x")), prompt="answer-key")
    a = grader.cache_payload(req(question(gold=("Paris",))))
    b = grader.cache_payload(req(question(gold=("Rome",))))
    assert a != b and a["gold_answers"] == ["Paris"]
    # self-rating ignores gold answers, so they do not split its cache
    rating = LLMGrader(ScriptedBackend(constant("x")))
    assert rating.cache_payload(req(question(gold=("Paris",)))) == rating.cache_payload(req(question(gold=("Rome",))))


def _verifier(extracted: str, yes_for: str) -> Callable[[str], str]:
    def answer(text: str) -> str:
        if text.startswith("For the question"):
            return "yes" if f'the correct answer is "{yes_for}"' in text else "no"
        return extracted

    return answer


@pytest.mark.parametrize(("yes_for", "grade"), [("Paris", 1), ("Lyon", 1), ("Rome", 0)])
def test_llm_verify_asks_once_per_gold_answer(yes_for: str, grade: int) -> None:
    backend = ScriptedBackend(_verifier("the French capital", yes_for))
    grader = LLMGrader(backend, prompt="llm-verify")
    tp = question(gold=("Paris", "Lyon"))
    [result] = grader.grade_batch([req(tp)])
    assert isinstance(result, Grade) and result.grade == grade
    assert result.extracted_answer == "the French capital"
    _extraction, verification = backend.calls
    assert len(verification["prompts"]) == 2
    assert verification["prompts"][0].text == prompts.ANSWER_VERIFICATION.format(
        question=tp.text, correct_answer="Paris", answer="the French capital"
    )
    assert [v[0] for v in result.details["verifications"]] == [gold_fingerprint(tp.text, g) for g in ("Paris", "Lyon")]
    assert prompts.ANSWER_VERIFICATION in grader.spec().prompt_text  # type: ignore[operator]


def test_llm_verify_skips_unanswerable_extractions() -> None:
    backend = ScriptedBackend(_verifier("unknown", "Paris"))
    [result] = LLMGrader(backend, prompt="llm-verify").grade_batch([req(question(gold=("Paris",)))])
    assert isinstance(result, Grade) and result.grade == 0
    assert len(backend.calls) == 1


# -- direct baselines ---------------------------------------------------------------------

DIRECT = {
    "sun": ("Sun", prompts.SUN),
    "sun-few": ("Sun_few", SUN_FEW),
    "fagb": ("FagB", prompts.FAGGIOLI_B),
    "fagb-few": ("FagB_few", FAGGIOLI_B_FEW),
    "helm": ("HELM", prompts.HELM),
}


@pytest.mark.parametrize("mode", sorted(DIRECT))
@pytest.mark.parametrize(("response", "grade"), [("Yes", 1), ("yes.", 1), ("No", 0), ("Maybe", 0)])
def test_yes_no_baselines(mode: str, response: str, grade: int) -> None:
    backend = ScriptedBackend(constant(response))
    grader = LLMGrader(backend, prompt=mode)
    assert not grader.needs_bank
    q1, q2 = question(), question("When was the tower built?")
    results = grader.grade_batch([req(q1), req(q2), req(nugget())])
    [call] = backend.calls
    assert len(call["prompts"]) == 1  # one prompt per (query, passage), whatever the test points
    prompt_class, template = DIRECT[mode]
    assert call["prompts"][0].text == template.render(PASSAGE.text, query_title=QUERY.text)
    assert [r.grade for r in results if isinstance(r, Grade)] == [grade] * 3
    first = results[0]
    assert isinstance(first, Grade) and first.details["prompt_class"] == prompt_class
    assert first.details.get("not_yes_no", False) is (response == "Maybe")
    spec = grader.spec()
    assert (spec.max_grade, spec.default_min_grade, spec.prompt_class) == (1, 1, prompt_class)


def test_direct_baselines_key_the_cache_on_query_and_passage_only() -> None:
    grader = LLMGrader(ScriptedBackend(constant("Yes")), prompt="helm")
    assert grader.cache_payload(req(question())) == grader.cache_payload(req(nugget()))
    assert grader.cache_payload(req(question())) == {"query": QUERY.text, "passage": PASSAGE.text}
    other_query = Query(id="q2", text="capital of france")
    assert grader.cache_payload(req(question(), query=other_query)) != grader.cache_payload(req(question()))


@pytest.mark.parametrize(("response", "grade", "flag"), [("2", 2, False), ("0", 0, False), ("1.", 1, False),
                                                         ("relevant", 0, True)])
def test_thomas_grades_zero_to_two(response: str, grade: int, flag: bool) -> None:
    backend = ScriptedBackend(constant(response))
    grader = LLMGrader(backend, prompt="thomas")
    [result] = grader.grade_batch([req(question())])
    assert isinstance(result, Grade) and result.grade == grade
    assert result.details.get("not_a_grade", False) is flag
    assert backend.calls[0]["rating_scale"] == 2
    assert (grader.spec().max_grade, grader.spec().default_min_grade) == (2, 1)


def test_thomas_answers_off_its_scale_are_failures() -> None:
    [result] = LLMGrader(ScriptedBackend(constant("3")), prompt="thomas").grade_batch([req(question())])
    assert isinstance(result, GradeFailure) and result.message == "malformed response '3': not a grade on 0..2"


def test_few_shot_prompts_have_four_examples_before_the_instruction() -> None:
    sun = SUN_FEW.render("CTX", query_title="QUERY")
    fagb = FAGGIOLI_B_FEW.render("CTX", query_title="QUERY")
    assert len(EXAMPLES) == 4 and {q for q, _, _ in EXAMPLES} == {
        "how many eye drops per ml",
        "can you open a wells fargo account online",
    }
    assert sorted(r for _, _, r in EXAMPLES) == [False, False, True, True]
    assert sun.count("Does the passage answer the query?") == 4
    assert "Does the passage answer the query?" not in fagb
    assert sun.count("Answer: Yes") == 2 and sun.count("Answer: No") == 2
    assert sun.endswith(prompts.SUN.render("CTX", query_title="QUERY"))
    assert fagb.endswith(prompts.FAGGIOLI_B.render("CTX", query_title="QUERY"))
    assert fagb.count("Question: can you open a wells fargo account online") == 2
    # a passage with braces renders verbatim
    assert "{x}" in SUN_FEW.render("a {x} b", query_title="q")


# -- spec and options ---------------------------------------------------------------------


def test_spec_covers_prompt_model_and_backend_settings() -> None:
    backend = ScriptedBackend(constant("1"))
    spec = LLMGrader(backend, name="hf").spec()
    assert spec.name == "hf" and spec.model == "scripted/model" and spec.revision == "abc123"
    assert spec.prompt_class == "QuestionSelfRatedUnanswerablePromptWithChoices+NuggetSelfRatedPrompt"
    assert prompts.QUESTION_SELF_RATING.template in (spec.prompt_text or "")
    assert spec.options["backend"] == {"backend": "scripted", "temperature": 0}
    assert (spec.max_grade, spec.default_min_grade) == (5, 4)
    fingerprints = {LLMGrader(backend, prompt=m).spec().fingerprint() for m in MODES}
    assert len(fingerprints) == len(MODES)
    assert LLMGrader(backend, max_new_tokens=9).spec().fingerprint() != spec.fingerprint()


def test_close_closes_the_backend() -> None:
    backend = ScriptedBackend(constant("1"))
    LLMGrader(backend).close()
    assert backend.closed


def llm_grader(backend: TextBackend, options: dict[str, str], name: str = "hf") -> LLMGrader:
    """An LLMGrader from string options, read as the hf and openai graders read their LLM options."""
    values = read_grader_options(name, LLM_OPTIONS, options)
    mode = resolve_mode(values["prompt"], values["custom_output"])
    return LLMGrader(backend, prompt=mode, name=name, max_new_tokens=values["max_new_tokens"])


def test_llm_options_types_defaults_and_typos() -> None:
    values = read_grader_options("hf", LLM_OPTIONS, {"max_new_tokens": " 5 ", "prompt": "helm"})
    assert values == {"prompt": "helm", "max_new_tokens": 5, "custom_output": "self-rating", "nuggets_per_call": 10,
                      "price_prompt": None, "price_completion": None, "max_cost": None}
    assert read_grader_options("hf", LLM_OPTIONS, {"max_new_tokens": "none"})["max_new_tokens"] is None
    with pytest.raises(ConfigError, match=r"grader 'hf': option max_new_tokens='five' must be an integer"):
        read_grader_options("hf", LLM_OPTIONS, {"max_new_tokens": "five"})
    with pytest.raises(ConfigError, match=r"option max_new_tokens='0' must be an integer >= 1"):
        read_grader_options("hf", LLM_OPTIONS, {"max_new_tokens": "0"})
    with pytest.raises(ConfigError, match=r"grader 'hf': unknown option 'max_new_token'.*Did you mean 'max_new_tokens'"):
        read_grader_options("hf", LLM_OPTIONS, {"max_new_token": "5"})


def test_unknown_prompt_mode_suggests_a_name() -> None:
    backend = ScriptedBackend(constant("1"))
    with pytest.raises(ConfigError, match=r"unknown prompt 'self-ratings'.*Did you mean 'self-rating'"):
        llm_grader(backend, {"prompt": "self-ratings"})
    with pytest.raises(ConfigError, match=r"option custom_output='json'.*self-rating, yes-no, answer"):
        llm_grader(backend, {"prompt": "helm", "custom_output": "json"})


# -- custom prompts -----------------------------------------------------------------------


def test_custom_prompt_file(tmp_path: Path) -> None:
    file = tmp_path / "rate.txt"
    file.write_text("Rate 0-5 for {query}. Q: {question}\nText: {context}\nJSON like {{\"grade\": 3}}. Grade:", encoding="utf-8")
    backend = ScriptedBackend(constant("5"))
    grader = llm_grader(backend, {"prompt": f"custom:{file}"})
    tp = question()
    [result] = grader.grade_batch([req(tp)])
    sent = backend.calls[0]["prompts"][0]
    assert sent.before == f"Rate 0-5 for {QUERY.text}. Q: {tp.text}\nText: "
    assert sent.context == PASSAGE.text
    assert sent.after == '\nJSON like {"grade": 3}. Grade:'
    assert isinstance(result, Grade) and result.grade == 5
    assert result.details["prompt_class"] == "custom:rate.txt"
    assert grader.cache_payload(req(tp))["query"] == QUERY.text
    spec = grader.spec()
    file.write_text("Changed {question} {context}", encoding="utf-8")
    edited = llm_grader(backend, {"prompt": f"custom:{file}"}).spec()
    assert edited.fingerprint() != spec.fingerprint()  # the prompt text is in the cache key


def test_custom_prompt_yes_no_output(tmp_path: Path) -> None:
    file = tmp_path / "yn.txt"
    file.write_text("Does {context} answer {question}? yes or no:", encoding="utf-8")
    grader = LLMGrader(ScriptedBackend(constant("No")), prompt=f"custom:{file}", custom_output="yes-no")
    [result] = grader.grade_batch([req(nugget())])
    assert isinstance(result, Grade) and result.grade == 0 and grader.spec().max_grade == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Passage: {context}", r"lacks the placeholder\(s\) \{question\}"),
        ("Question: {question}", r"lacks the placeholder\(s\) \{context\}"),
        ("{question} {context} {answer}", r"unknown placeholder\(s\) \{answer\}"),
        ("{question} {context} {", r"not a valid template"),
    ],
)
def test_custom_prompt_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "bad.txt"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        LLMGrader(ScriptedBackend(constant("1")), prompt=f"custom:{file}")
    assert str(file) in str(info.value)


def test_custom_prompt_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(ConfigError, match="cannot be read") as info:
        LLMGrader(ScriptedBackend(constant("1")), prompt=f"custom:{missing}")
    assert str(missing) in str(info.value)


def test_prompt_for_gives_the_prompt_of_a_request() -> None:
    grader = LLMGrader(ScriptedBackend(constant("1")), prompt="question-rating")
    parts = grader.prompt_for(req(question()))
    assert parts is not None and parts.text == prompts.QUESTION_SELF_RATING.render(PASSAGE.text, question=question().text)
    assert grader.prompt_for(req(nugget())) is None
