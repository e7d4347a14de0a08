"""What the grading tests share among their modules: grading requests to fill a cache with."""

from __future__ import annotations

from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import GradingRequest


def make_requests(passages: int) -> list[GradingRequest]:
    query = Query(id="q1", text="query")
    points = [TestPoint(id=f"q1/t{i}", query_id="q1", kind="question", text=f"What is word{i}?") for i in range(2)]
    texts = [Passage(id=f"p{j}", text=f"passage {j} mentions word{j % 3}") for j in range(passages)]
    return [GradingRequest(query, tp, passage) for passage in texts for tp in points]
