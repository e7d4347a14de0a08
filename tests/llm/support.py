"""What tests elsewhere share with the LLM tests: the seeded OpenAI-compatible server that reports
usage, the grader options and pytest arguments pointing at it, prices, and tiny rating prompts with a bias for
the Hugging Face backend."""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Any

from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import default_registry
from exam_harness.llm import prompts
from exam_harness.llm.backend import PromptParts
from exam_harness.llm.cost import TokenUsage
from tests.fake_openai_server import FakeAnswer, FakeOpenAIServer, Fault
from tests.tiny_models import CORPUS_SENTENCES, DigitBias

PRICES = {"price_prompt": "0.5", "price_completion": "2"}  # per 1,000 tokens


class SeededServer(FakeOpenAIServer):
    """Grades 0..5 drawn with weights (1, 1, 2, 2, 3, 3) from a generator seeded by the prompt, so a
    prompt gets the same answer every time; ``usage`` reports len(prompt) // 4 prompt tokens and a
    seeded 1..9 completion tokens. Every usage sent is kept in ``sent``."""

    def __init__(self, seed: int = 20) -> None:
        super().__init__(self._grade)
        self.seed = seed
        self.sent: list[tuple[int, int]] = []
        self._sent_lock = threading.Lock()

    def _rng(self, prompt: str) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{prompt}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _grade(self, prompt: str) -> FakeAnswer:
        return FakeAnswer(str(self._rng(prompt).choices(range(6), weights=(1, 1, 2, 2, 3, 3))[0]))

    def answer_body(self, path: str, body: dict[str, Any], prompt: str, fault: Fault | None) -> dict[str, Any]:
        answer = super().answer_body(path, body, prompt, fault)
        prompt_tokens, completion_tokens = self.usage_of(prompt)
        answer["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens}
        with self._sent_lock:
            self.sent.append((prompt_tokens, completion_tokens))
        return answer

    def usage_of(self, prompt: str) -> tuple[int, int]:
        """The ``usage`` this server reports for an answer to ``prompt``: (prompt, completion) tokens."""
        return max(1, len(prompt) // 4), self._rng(prompt).randint(1, 9)

    def spent(self) -> TokenUsage:
        with self._sent_lock:
            return TokenUsage(sum(p for p, _ in self.sent), sum(c for _, c in self.sent), len(self.sent))


def grader_options(server: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"base_url": server.base_url, "model": "fake-model", "api_key": "test", "timeout": "2",
            "backoff_base": "0.001", "backoff_max": "0.002", **extra}


def make_grader(server: FakeOpenAIServer, **extra: str) -> Any:
    return default_registry().create("openai", GraderConfig(options=grader_options(server, **extra)))


def requests(n: int = 8) -> list[GradingRequest]:
    """``n`` pairs whose prompts are all of one length (so each has the same bound)."""
    query = Query(id="q", text="battery storage")
    points = [TestPoint(id=f"q/{i}", query_id="q", kind="question", text=f"What does storage unit {i} hold?")
              for i in range(n)]
    passage = Passage(id="p", text="A battery stores energy in cells for later use at night.")
    return [GradingRequest(query, tp, passage) for tp in points]


COLLECTION = "id\ttext\np1\tfirst passage\np2\tsecond passage\np3\tthird passage\np4\tfourth passage\n"

RUNS = {"good.run": "q1 Q0 p1 1 2.0 good\nq2 Q0 p3 1 1.0 good\n",
        "weak.run": "q1 Q0 p1 1 2.0 weak\nq1 Q0 p2 2 1.0 weak\nq2 Q0 p4 1 1.0 weak\n"}


def pytest_args(server: FakeOpenAIServer, **extra: str) -> list[str]:
    args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai"]
    for key, value in grader_options(server, **extra).items():
        args += ["--exam-grader-option", f"{key}={value}"]
    return args


WORDS = " ".join(CORPUS_SENTENCES).split()

QUESTIONS = [s for s in CORPUS_SENTENCES if s.endswith("?")] + [
    "Where is the Eiffel Tower?",
    "What do plants need?",
    "How is the weather in Jamaica?",
]


def rating_prompts(n: int, seed: int = 0, *, max_words: int = 50) -> list[PromptParts]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        template = prompts.QUESTION_SELF_RATING if rng.random() < 0.7 else prompts.NUGGET_SELF_RATING
        text = rng.choice(QUESTIONS)
        context = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, max_words)))
        before, after = template.split(question=text, nugget=text)
        out.append(PromptParts(before, context, after))
    return out


BIAS = DigitBias(first_competitors={"n": 1.0}, after_digit_competitors={".": 2.0})
