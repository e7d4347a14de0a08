"""What tests elsewhere share with the graders' tests: the fallback project (a fake OpenAI server
answering banana for the weak passage), and a scripted backend."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from exam_harness.graders.base import GradeFailure
from exam_harness.llm.backend import Generation, GenerationResult, PromptParts
from tests.fake_openai_server import FakeOpenAIServer
from tests.helpers import write_project
from tests.plugin.support import BANK, COLLECTION, RUNS


def _answer(prompt: str) -> str:
    """banana for the weak passage p2 (2 pairs, both in run weak's top-k), else the digit the passage asks for."""
    return "banana" if "GRADE=2" in prompt else prompt.split("GRADE=", 1)[1][0]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(_answer) as srv:
        yield srv


@pytest.fixture
def llm_project(pytester: pytest.Pytester) -> pytest.Pytester:
    return write_project(pytester, BANK, COLLECTION, RUNS, "exam_min_grade = 1")


def _systems(project: pytest.Pytester) -> dict[str, dict]:  # type: ignore[type-arg]
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return {s["run"]: s for s in report["systems"]}


class ScriptedBackend:
    """Answers each prompt with ``answer(prompt_text)`` and records every call."""

    def __init__(self, answer: Callable[[str], str | GradeFailure], probabilities: tuple[float, ...] | None = None) -> None:
        self.model_id = "scripted/model"
        self.revision: str | None = "abc123"
        self._answer = answer
        self._probabilities = probabilities
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    def settings(self) -> dict[str, Any]:
        return {"backend": "scripted", "temperature": 0}

    def generate(
        self, prompts: Sequence[PromptParts], *, max_new_tokens: int, rating_scale: int | None = None
    ) -> list[GenerationResult]:
        self.calls.append({"prompts": list(prompts), "max_new_tokens": max_new_tokens, "rating_scale": rating_scale})
        out: list[GenerationResult] = []
        for p in prompts:
            text = self._answer(p.text)
            out.append(text if isinstance(text, GradeFailure) else Generation(text, self._probabilities, len(p.text.split())))
        return out

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def close(self) -> None:
        self.closed = True
