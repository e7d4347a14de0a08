"""The ``openai`` grader: LLMGrader over OpenAIBackend, options, failures, dry-run figures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint, md5_hex
from exam_harness.graders.base import GradeFailure, GraderConfig, GradingRequest
from exam_harness.graders.llm import LLMGrader
from exam_harness.graders.openai import OpenAIGrader
from exam_harness.graders.registry import default_registry
from exam_harness.llm.estimate import estimate_requests
from exam_harness.llm.openai import OpenAIBackend
from tests.fake_openai_server import FakeOpenAIServer, Fault

pytest.importorskip("openai")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def config(server: FakeOpenAIServer, **options: str) -> GraderConfig:
    base = {"base_url": server.base_url, "api_key": "k", "backoff_base": "0.001", "backoff_max": "0.002"}
    return GraderConfig(model="fake-model", options={**base, **options})


QUERY = Query(id="q1", text="ocean tides")


def request(tp_text: str, passage: str, kind: str = "question") -> GradingRequest:
    tp = TestPoint(id=f"q1/{md5_hex(tp_text)}", query_id="q1", kind=kind, text=tp_text)  # type: ignore[arg-type]
    return GradingRequest(QUERY, tp, Passage(id=f"p{md5_hex(passage)}", text=passage))


def test_grades_self_ratings_with_probabilities(server: FakeOpenAIServer) -> None:
    grader = OpenAIGrader(config(server, logprobs="true"))
    requests = [
        request("What pulls the oceans?", "GRADE=5 the moon pulls"),
        request("moon gravity", "GRADE=3 about the moon", kind="nugget"),
        request("How often?", "GRADE=0 unrelated"),
    ]
    results = grader.grade_batch(requests)
    assert [r.grade for r in results if isinstance(r, Grade)] == [5, 3, 0]
    first = results[0]
    assert isinstance(first, Grade) and first.raw_response == "5"
    assert first.probabilities is not None and first.expected_grade == pytest.approx(5 * 0.7 + 0.06 * (0 + 1 + 2 + 3 + 4))
    assert first.details["prompt_class"] == "QuestionSelfRatedUnanswerablePromptWithChoices"
    assert any("Key Fact: moon gravity\nContext: <passage>" in r.prompt for r in server.requests)
    grader.close()


def test_permanent_failure_is_never_a_grade(server: FakeOpenAIServer) -> None:
    server.add_faults("GRADE=4", *[Fault("status", status=503)] * 10)
    grader = OpenAIGrader(config(server, max_retries="1"))
    bad, good = grader.grade_batch([request("q?", "GRADE=4 text"), request("q?", "GRADE=2 text")])
    assert isinstance(bad, GradeFailure) and "HTTP 503" in bad.message and "2 attempts" in bad.message
    assert isinstance(good, Grade) and good.grade == 2
    assert server.count("GRADE=4") == 2


def test_spec_records_model_prompt_and_decoding_but_not_the_server(server: FakeOpenAIServer) -> None:
    spec = OpenAIGrader(config(server)).spec()
    assert spec.name == "openai" and spec.model == "fake-model"
    backend_settings = spec.options["backend"]
    assert backend_settings["endpoint"] == "chat" and backend_settings["temperature"] == 0.0
    assert server.base_url not in repr(spec.model_dump())
    other = OpenAIGrader(config(server, base_url="http://127.0.0.1:1/v1", concurrency="64")).spec()
    assert other.fingerprint() == spec.fingerprint()  # another server for the same model: same cache key
    assert OpenAIGrader(config(server, endpoint="completions")).spec().fingerprint() != spec.fingerprint()


def test_unknown_option_names_the_valid_ones(server: FakeOpenAIServer) -> None:
    typo = r"grader 'openai': unknown option 'concurrancy'.*Did you mean 'concurrency'"
    with pytest.raises(ConfigError, match=typo):
        default_registry().create("openai", config(server, concurrancy="4"))
    with pytest.raises(ConfigError, match=typo):
        OpenAIGrader(config(server, concurrancy="4"))


def test_bad_option_values_name_grader_option_and_value(server: FakeOpenAIServer) -> None:
    with pytest.raises(ConfigError, match=r"grader 'openai': option max_new_tokens='0' must be an integer >= 1"):
        default_registry().create("openai", config(server, max_new_tokens="0"))
    with pytest.raises(ConfigError, match=r"unknown prompt 'sunny'"):
        default_registry().create("openai", config(server, prompt="sunny"))


def test_registry_converts_options_before_the_grader_sees_them(server: FakeOpenAIServer) -> None:
    grader = default_registry().create("openai", config(server, concurrency="3", logprobs="on", max_new_tokens="7"))
    assert isinstance(grader, OpenAIGrader) and isinstance(grader.backend, OpenAIBackend)
    assert grader.backend.concurrency == 3 and grader.backend.logprobs is True and grader.max_new_tokens == 7
    assert grader.spec() == OpenAIGrader(config(server, concurrency="3", logprobs="on", max_new_tokens="7")).spec()


def test_model_from_option(server: FakeOpenAIServer) -> None:
    grader = OpenAIGrader(GraderConfig(options={"model": "served-name", "base_url": server.base_url}))
    assert grader.spec().model == "served-name"


def test_estimate_requests_for_dry_runs(server: FakeOpenAIServer) -> None:
    grader = OpenAIGrader(config(server))
    requests = [request("q?", "GRADE=1 " + "x" * 400), request("q?", "GRADE=1 " + "x" * 400), request("r?", "short")]
    calls, tokens = estimate_requests(grader, requests)
    assert calls == 2
    backend = grader.backend
    assert isinstance(backend, OpenAIBackend) and backend.system_prompt is not None  # the chat default
    assert tokens > 2 * backend.count_tokens(backend.system_prompt) + 400 // 4
    assert server.count() == 0


def test_estimate_requests_with_another_backend() -> None:
    class WordBackend:
        model_id = "words"
        revision = None

        def settings(self) -> dict[str, object]:
            return {}

        def generate(self, prompts: object, *, max_new_tokens: int, rating_scale: int | None = None) -> list[object]:
            raise AssertionError("a dry run sends nothing")

        def count_tokens(self, text: str) -> int:
            return len(text.split())

        def close(self) -> None:
            pass

    grader = LLMGrader(WordBackend(), prompt="question-rating")  # type: ignore[arg-type]
    requests = [request("q?", "one two"), request("q?", "one two"), request("moon", "three", kind="nugget")]
    calls, tokens = estimate_requests(grader, requests)
    assert calls == 1  # the nugget is not supported by question-rating; the repeat is sent once
    assert tokens == len(grader._parts(grader.mode.question, requests[0]).text.split())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not an LLM grader"):
        estimate_requests(object(), requests)
