"""The track's own prompts (nuggetizer's assignment prompts, UMBRELA's zero-shot prompt) held as data with
their source, read by parsers that accept what the track's tools accept and fail per nugget; custom prompts
that answer with an assignment label."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.core.grade_kinds import grade_kind
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.core.models import test_point_id as make_id
from exam_harness.graders.base import GradeFailure, GradingRequest
from exam_harness.graders.llm import LLMGrader
from exam_harness.llm.modes import MODES
from exam_harness.llm.track_prompts import (
    NUGGETIZER_ASSIGN,
    NUGGETIZER_ASSIGN_2,
    TRACK_PROMPTS,
    UMBRELA_ZEROSHOT,
    parse_nuggetizer_labels,
    parse_umbrela_reference,
)
from tests.graders.support import ScriptedBackend

QUERY = Query(id="q1", text="where is the eiffel tower")
PASSAGE = Passage(id="p1", text="The Eiffel Tower is in Paris.")


def nugget(text: str) -> TestPoint:
    return TestPoint(id=make_id("q1", text), query_id="q1", kind="nugget", text=text)


def requests(*texts: str) -> list[GradingRequest]:
    return [GradingRequest(query=QUERY, test_point=nugget(t), passage=PASSAGE) for t in texts]


def test_each_track_prompt_names_its_source_and_keeps_the_tracks_words() -> None:
    assert set(TRACK_PROMPTS) == {"NuggetizerAssignment", "NuggetizerAssignment2", "UmbrelaZeroShot"}
    assert NUGGETIZER_ASSIGN.source.endswith("assigner_template.yaml")
    assert NUGGETIZER_ASSIGN_2.source.endswith("assigner_2grade_template.yaml")
    assert UMBRELA_ZEROSHOT.source.endswith("qrel_zeroshot_bing.yaml")
    assert UMBRELA_ZEROSHOT.system == "You are a helpful assistant."  # umbrela's gpt_judge.py sends it
    assert NUGGETIZER_ASSIGN.system.startswith("You are NuggetizeAssignerLLM")
    text = NUGGETIZER_ASSIGN.template.render("PASSAGE", query="Q", nuggets="N", count="3")
    assert text.startswith("Based on the query and passage, label each of the 3 nuggets either as support, "
                           "partial_support, or not_support")
    assert text.endswith("Search Query: Q\nPassage: PASSAGE\nNugget List: N\n"
                         "Only return the list of labels (List[str]). Do not explain.\nLabels:")
    umbrela = UMBRELA_ZEROSHOT.template.render("P", query_title="Q")
    assert "Query: Q\nPassage: P\n" in umbrela and umbrela.endswith("##final score: score without providing any reasoning.")


def test_the_nugget_list_is_written_as_nuggetizer_writes_it() -> None:
    backend = ScriptedBackend(lambda _p: "['support', 'not_support']")
    grader = LLMGrader(backend, prompt="nuggetizer-assignment")
    grader.grade_batch(requests("Eiffel Tower in Paris", "built in 1889's spring"))
    (prompt,) = backend.calls[0]["prompts"]
    assert "Nugget List: ['Eiffel Tower in Paris', \"built in 1889's spring\"]\n" in prompt.text  # str(list)
    assert "Passage: The Eiffel Tower is in Paris.\n" in prompt.text


@pytest.mark.parametrize(("answer", "labels"), [
    ("['support', 'not_support']", ["support", "not_support"]),
    ('```python\n["Support", "PARTIAL_SUPPORT"]\n```', ["support", "partial_support"]),
    ("'support', 'partial support'", ["support", "partial support"]),  # a tuple literal: nuggetizer zips it
    ("[support, not_support]", None),  # names, not strings: no literal
    ("Labels: ['support', 'support']", None),
    ("['support']", None),  # one label for two nuggets: asked again
])
def test_labels_are_read_as_nuggetizer_reads_them(answer: str, labels: list[str] | None) -> None:
    assert parse_nuggetizer_labels(answer, 2) == labels


def test_a_stray_label_counts_0_as_nuggetizer_counts_it() -> None:
    """nuggetizer keeps any label of a readable answer (lowercased) and its calculate_nugget_scores counts one
    that is none of the three 0: a stray label is a grade 0 read by a fallback rule, never a failed call."""
    from exam_harness.core.grade_parsing import FALLBACK_STRAY_LABEL

    backend = ScriptedBackend(lambda _p: "['support', 'Chief Financial Officer', 'not_support']")
    results = LLMGrader(backend, prompt="nuggetizer-assignment").grade_batch(requests("a", "b", "c"))
    assert [r.grade for r in results if isinstance(r, Grade)] == [2, 0, 0]
    stray = results[1]
    assert isinstance(stray, Grade) and stray.fallback == FALLBACK_STRAY_LABEL
    assert stray.extracted_answer == "chief financial officer" and stray.details["stray_label"] is True
    assert results[0].fallback is None and results[2].fallback is None  # type: ignore[union-attr]
    # the 2-label prompt: nuggetizer scores a partial_support it gets back 0.5 all the same
    backend = ScriptedBackend(lambda _p: "['partial_support', 'support']")
    two = LLMGrader(backend, prompt="nuggetizer-assignment-2").grade_batch(requests("a", "b"))
    assert [r.grade for r in two if isinstance(r, Grade)] == [1, 2]
    # the paraphrase keeps its own reading under its own name: the whole call is one answer
    backend = ScriptedBackend(lambda _p: "['support', 'maybe', 'not_support']")
    old = LLMGrader(backend, prompt="nugget-assignment").grade_batch(requests("a", "b", "c"))
    assert all(isinstance(r, GradeFailure) for r in old)


@pytest.mark.parametrize(("answer", "grade"), [
    ("##final score: 2", 2),
    ("The final score is 3", 3),
    ('{"O": 1}', 1),
    ("I would give it a score of 2.", 2),
    ("M: 3, T: 1, final score: 0", 0),
    ("relevant, clearly", None),  # umbrela would say 0 and flag it invalid: no grade here
])
def test_umbrela_answers_are_read_as_umbrela_reads_them(answer: str, grade: int | None) -> None:
    assert parse_umbrela_reference(answer) == grade


def test_the_umbrela_zeroshot_mode_grades_by_the_reference_reading() -> None:
    backend = ScriptedBackend(lambda _p: "final score is 3")
    (result,) = LLMGrader(backend, prompt="umbrela-zeroshot").grade_batch(requests("x"))
    assert isinstance(result, Grade) and result.grade == 3
    (old,) = LLMGrader(ScriptedBackend(lambda _p: "maybe"), prompt="umbrela").grade_batch(requests("x"))
    assert isinstance(old, GradeFailure)


def test_grade_kinds_of_the_track_modes() -> None:
    kinds = {name: grade_kind(LLMGrader(ScriptedBackend(lambda _p: ""), prompt=name).spec())
             for name in ("nuggetizer-assignment", "nuggetizer-assignment-2", "umbrela-zeroshot")}
    assert kinds == {"nuggetizer-assignment": "assignment", "nuggetizer-assignment-2": "assignment",
                     "umbrela-zeroshot": "relevance"}
    assert {"nugget-assignment", "nugget-assignment-2", "umbrela"} <= set(MODES)  # the paraphrases stay


def test_a_custom_prompt_may_answer_with_an_assignment_label(tmp_path: Path) -> None:
    prompt = tmp_path / "assign.txt"
    prompt.write_text("Is the fact {question} in the passage {context}? Answer support, partial_support or "
                      "not_support.")
    answers = iter(["partial_support", "Support.", "maybe"])
    grader = LLMGrader(ScriptedBackend(lambda _p: next(answers)), prompt=f"custom:{prompt}",
                       custom_output="assignment")
    results = [grader.grade_batch(requests(t))[0] for t in ("a", "b", "c")]
    assert [r.grade for r in results[:2] if isinstance(r, Grade)] == [1, 2]
    assert isinstance(results[2], GradeFailure)
    assert grade_kind(grader.spec()) == "assignment" and grader.spec().max_grade == 2


def test_a_query_level_prompts_tokens_are_counted_once_per_call() -> None:
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.passes import run_grading_pass

    passages = [PASSAGE, Passage(id="p2", text="Photosynthesis turns light into sugar.")]
    points = [nugget(t) for t in ("a", "b", "c")]
    pool = [GradingRequest(query=QUERY, test_point=tp, passage=p) for p in passages for tp in points]
    backend = ScriptedBackend(lambda _p: "##final score: 2")
    outcome = run_grading_pass(LLMGrader(backend, prompt="umbrela-zeroshot"), pool, GradeCache(None))
    assert len(backend.calls[0]["prompts"]) == 2  # one call per passage: the prompt holds no test point
    cost = outcome.cost
    assert cost is not None and cost.session.prompt_tokens > 0
    run = cost.run_usage((r.passage.id, r.test_point.id) for r in pool)
    assert run.prompt_tokens == pytest.approx(cost.session.prompt_tokens)  # not three times it
    assert run.completion_tokens == pytest.approx(cost.session.completion_tokens)
    # cached grades share the same way
    cache = GradeCache(None)
    run_grading_pass(LLMGrader(ScriptedBackend(lambda _p: "##final score: 2"), prompt="umbrela-zeroshot"), pool, cache)
    again = run_grading_pass(LLMGrader(ScriptedBackend(lambda _p: "1"), prompt="umbrela-zeroshot"), pool, cache).cost
    assert again is not None
    assert again.run_usage((r.passage.id, r.test_point.id) for r in pool).prompt_tokens == pytest.approx(
        again.cached.prompt_tokens)
