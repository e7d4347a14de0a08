"""The TREC RAG prompt modes of the ``openai`` grader against the local fake server: nugget assignment
batched and unbatched, malformed list answers asked again and then failed (never read as labels), the
2-grade mode, and UMBRELA's 0..3 relevance grades."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from exam_harness.core.grade_parsing import parse_assignment_list
from exam_harness.core.models import Grade, Passage, Query, TestPoint, md5_hex
from exam_harness.graders.base import GradeFailure, GraderConfig, GradingRequest
from exam_harness.graders.llm import MALFORMED_RETRIES
from exam_harness.graders.openai import OpenAIGrader
from exam_harness.llm.openai import DEFAULT_SYSTEM_PROMPT
from exam_harness.llm.track_prompts import NUGGETIZER_ASSIGN, NUGGETIZER_ASSIGN_2
from tests.fake_openai_server import FakeOpenAIServer
from tests.trec_rag_data import AssignmentResponder

pytest.importorskip("openai")

QUERY = Query(id="t1", text="what causes tides")
NUGGETS = ["moon gravity", "sun gravity", "two tides a day", "spring tides", "neap tides"]
PASSAGE = "Tides come from moon gravity; the sun helps; spring tides are high."
THREE = ("support", "partial_support", "not_support")


def requests(passage: str = PASSAGE, nuggets: list[str] = NUGGETS) -> list[GradingRequest]:
    return [GradingRequest(QUERY, TestPoint(id=f"t1/{md5_hex(n)}", query_id="t1", kind="nugget", text=n),
                           Passage(id=f"p{md5_hex(passage)}", text=passage)) for n in nuggets]


def grader(server: FakeOpenAIServer, **options: str) -> OpenAIGrader:
    base = {"base_url": server.base_url, "api_key": "k", "backoff_base": "0.001", "backoff_max": "0.002",
            "prompt": "nugget-assignment"}
    return OpenAIGrader(GraderConfig(model="fake-model", options={**base, **options}))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(AssignmentResponder()) as srv:
        yield srv


# support 2, partial 1 (first word only: "sun", "two" is absent, "neap" absent), not 0
EXPECTED = [2, 1, 0, 2, 0]


@pytest.mark.parametrize(("per_call", "calls"), [("10", 1), ("2", 3), ("1", 5)])
def test_batched_and_unbatched_give_the_same_grades(server: FakeOpenAIServer, per_call: str, calls: int) -> None:
    g = grader(server, nuggets_per_call=per_call)
    results = g.grade_batch(requests())
    assert [r.grade for r in results if isinstance(r, Grade)] == EXPECTED
    assert server.count() == calls
    sizes = sorted(int(re.search(r"give each of the (\d+) nuggets", r.prompt).group(1))  # type: ignore[union-attr]
                   for r in server.requests)
    assert sizes == sorted({"10": [5], "2": [2, 2, 1], "1": [1] * 5}[per_call])
    first = results[0]
    assert isinstance(first, Grade) and first.extracted_answer == "support"
    assert first.details["prompt_class"] == "TrecRagNuggetAssignment"
    assert g.spec().max_grade == 2 and g.spec().default_min_grade == 2
    g.close()


def test_malformed_list_answers_are_asked_again_then_fail(server: FakeOpenAIServer) -> None:
    g = grader(server)
    results = g.grade_batch(requests("BROKEN passage about moon gravity") + requests())
    broken, good = results[:5], results[5:]
    assert all(isinstance(r, GradeFailure) and "malformed response" in r.message for r in broken)
    assert f"after {1 + MALFORMED_RETRIES} tries" in broken[0].message  # type: ignore[union-attr]
    assert [r.grade for r in good if isinstance(r, Grade)] == EXPECTED
    assert server.count("BROKEN") == 1 + MALFORMED_RETRIES
    g.close()


def test_a_malformed_answer_asked_again_can_succeed(server: FakeOpenAIServer) -> None:
    g = grader(server)
    results = g.grade_batch(requests("FLAKY: moon gravity"))
    assert [r.grade for r in results if isinstance(r, Grade)] == [2, 0, 0, 0, 0]
    assert server.count("FLAKY") == 2
    g.close()


def test_the_two_grade_mode_refuses_partial_support(server: FakeOpenAIServer) -> None:
    g = grader(server, prompt="nugget-assignment-2")
    results = g.grade_batch(requests(nuggets=["moon gravity", "neap tides"]))
    assert [r.grade for r in results if isinstance(r, Grade)] == [2, 0]
    assert "partial_support" not in server.requests[0].prompt
    failed = g.grade_batch(requests(nuggets=["sun gravity"]))  # the responder answers partial_support
    assert isinstance(failed[0], GradeFailure)
    g.close()


@pytest.mark.parametrize(("answer", "grades"), [
    ("['support', 'partial_support', 'not_support']", [2, 1, 0]),
    ('```json\n["support", "Partial Support", "not-support"]\n```', [2, 1, 0]),
    ("Labels: [support, not_support, support]", [2, 0, 2]),
    ("support, not_support, support", [2, 0, 2]),
    ("['support', 'not_support']", None),  # too few
    ("['support', 'not_support', 'support', 'support']", None),  # too many
    ("['support', 'maybe', 'support']", None),
    ("The first is support. ['support', 'support', 'support']", None),  # an explanation around the list
    ("", None),
])
def test_list_answers_parse_or_are_refused(answer: str, grades: list[int] | None) -> None:
    assert parse_assignment_list(answer, 3, THREE) == grades


def test_umbrela_grades_relevance_0_to_3() -> None:
    def responder(prompt: str) -> str:
        return "##final score: 3" if "moon" in prompt else "I cannot tell" if "odd" in prompt else "##final score: 1"

    with FakeOpenAIServer(responder) as server:
        g = grader(server, prompt="umbrela")
        results = g.grade_batch([*requests(nuggets=["x"]), *requests("related words", ["x"]),
                                 *requests("an odd passage", ["x"])])
        assert isinstance(results[0], Grade) and results[0].grade == 3
        assert isinstance(results[1], Grade) and results[1].grade == 1
        assert isinstance(results[2], GradeFailure)  # no score in the answer: no grade
        assert g.spec().max_grade == 3 and not g.needs_bank
        assert "integer scale from 0 to 3" in server.requests[0].prompt
        g.close()


def test_a_dry_run_counts_the_batched_calls(server: FakeOpenAIServer) -> None:
    from exam_harness.llm.estimate import estimate_requests

    for per_call, calls in (("10", 1), ("2", 3)):
        g = grader(server, nuggets_per_call=per_call)
        assert estimate_requests(g, requests())[0] == calls
        g.close()
    assert server.count() == 0


def system_messages(server: FakeOpenAIServer) -> list[list[str]]:
    return [[m["content"] for m in r.body["messages"] if m["role"] == "system"] for r in server.requests]


@pytest.mark.parametrize(("prompt", "system"), [
    ("nuggetizer-assignment", NUGGETIZER_ASSIGN.system),
    ("nuggetizer-assignment-2", NUGGETIZER_ASSIGN_2.system),
    ("umbrela-zeroshot", "You are a helpful assistant."),  # what umbrela's gpt_judge.py sends before its prompt
])
def test_a_track_prompt_is_sent_with_the_tracks_system_message(server: FakeOpenAIServer, prompt: str,
                                                               system: str | None) -> None:
    g = grader(server, prompt=prompt)
    g.grade_batch(requests(nuggets=NUGGETS[:1]))
    assert server.requests and system_messages(server) == [[system] if system else []] * len(server.requests)
    assert g.backend.settings().get("system_prompt") == system  # the cache key holds the message sent
    g.close()


def test_an_explicit_system_prompt_wins_over_the_tracks(server: FakeOpenAIServer) -> None:
    g = grader(server, prompt="nuggetizer-assignment", system_prompt="You are a careful assessor.")
    g.grade_batch(requests(nuggets=NUGGETS[:1]))
    assert server.requests and system_messages(server) == [["You are a careful assessor."]] * len(server.requests)
    g.close()


def test_a_paraphrased_prompt_keeps_the_backends_default_system_message(server: FakeOpenAIServer) -> None:
    g = grader(server)
    g.grade_batch(requests(nuggets=NUGGETS[:1]))
    assert system_messages(server) == [[DEFAULT_SYSTEM_PROMPT]]
    g.close()
