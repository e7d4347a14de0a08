"""The user-style sourdough bank of issue 30 (tests/data/sourdough_bank.json): its pairs, labels, and a
responder for the fake OpenAI server that grades from those labels (5 for an answering pair, 0 otherwise)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import GradingRequest
from tests.paths import DATA

BANK = DATA / "sourdough_bank.json"


@dataclass(frozen=True)
class LabelledBank:
    requests: list[GradingRequest]  # every question x every passage
    labels: dict[tuple[str, str], bool]  # (passage id, test point id) -> answers it
    kinds: dict[str, str]  # passage id -> word-for-word, other-words, distractor, off-topic

    def responder(self, prompt: str) -> str:
        """The label of the (question, passage) pair the prompt asks about, as a 0..5 rating."""
        passages = [r.passage for r in self.requests if r.passage.text in prompt]
        points = [r.test_point for r in self.requests if r.test_point.text in prompt]
        if not passages or not points:
            raise AssertionError(f"the prompt names no pair of the bank: {prompt[:200]!r}")
        return "5" if self.labels[(passages[0].id, points[0].id)] else "0"


def load() -> LabelledBank:
    raw = json.loads(BANK.read_text(encoding="utf-8"))
    passages = [Passage(id=p["id"], text=p["text"]) for p in raw["passages"]]
    answered = {(p["id"], tp) for p in raw["passages"] for tp in p["answers"]}
    requests: list[GradingRequest] = []
    labels: dict[tuple[str, str], bool] = {}
    for q in raw["queries"]:
        query = Query(id=q["id"], text=q["text"])
        for item in q["questions"]:
            tp = TestPoint(id=item["id"], query_id=q["id"], kind="question", text=item["text"],
                           gold_answers=tuple(item["answers"]))
            for passage in passages:
                requests.append(GradingRequest(query, tp, passage))
                labels[(passage.id, tp.id)] = (passage.id, tp.id) in answered
    return LabelledBank(requests, labels, {p["id"]: p["kind"] for p in raw["passages"]})
