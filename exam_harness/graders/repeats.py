"""Repeated samples of a sampling LLM judge: the options ``repeats`` and ``reducer``, the reducers, and the
grader that stands for one sample in the grading pass (docs/judge-variance.md).

A grader with ``repeats=K`` is asked K times about every pair. Sample 0 is the grader itself (the same
cache key as without repeats, so the grades of a run without repeats are its first sample); sample
``i > 0`` adds ``"sample": i`` to the cache payload, so each sample is cached under its index: a rerun
grades nothing, and ``repeats=3`` after ``repeats=2`` grades only the third sample. Where the backend
sends a seed, sample ``i`` sends ``seed + i`` (the same seed would ask for the same answer).

The pair's grade is the reducer's over its K samples (by default ``auto``: majority for a binary-like judge,
mean otherwise, :func:`auto_reducer`); the samples themselves go to the judge-variance figures of the result
document (the judge-variance feature's section, exam_harness/features/judge_variance).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from exam_harness.config.options import MAX_REPEATS, choice, integer
from exam_harness.core.models import GraderSpec, TestPoint
from exam_harness.graders.base import Grader, GradeResult, GraderOption, GradingRequest


def case_samples(test_point: str, top: Sequence[str], samples: Mapping[tuple[str, str], tuple[int, ...]],
                 repeats: int, min_grade: int) -> tuple[list[int | None], list[bool]]:
    """One case (a run on a test point) over the K samples: the best grade of the run's top-k ``top`` in each
    sample (None: no passage graded in every sample) and whether that sample answers the test point."""
    best: list[int | None] = [None] * repeats
    for pid in top:
        grades = samples.get((pid, test_point))
        if grades is not None:
            best = [g if b is None or g > b else b for g, b in zip(grades, best)]
    return best, [b is not None and b >= min_grade for b in best]


def _mean(grades: Sequence[int]) -> int:
    # half up, not Python's half-to-even: the mean of 3 and 4 is 4 whichever grades came first
    return math.floor(sum(grades) / len(grades) + 0.5)


def _median(grades: Sequence[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]  # the lower middle grade of an even count


def _majority(grades: Sequence[int]) -> int:
    counts = Counter(grades)
    top = max(counts.values())
    return min(g for g, n in counts.items() if n == top)  # a tie goes to the lower grade


REDUCERS: dict[str, Callable[[Sequence[int]], int]] = {
    "mean": _mean, "median": _median, "majority": _majority, "min": min,
}

# The default reducer: majority for a binary-like judge, mean for the others (auto_reducer).
AUTO = "auto"

REPEAT_OPTIONS: tuple[GraderOption, ...] = (
    GraderOption("repeats", 1, "samples asked of the judge per pair, each cached under its index; needs "
                 "temperature > 0 (default: 1)", integer(1, MAX_REPEATS)),
    GraderOption("reducer", AUTO, "how a pair's samples make its grade: mean (rounded half up), median (the lower "
                 "middle one), majority (ties to the lower grade), min, or auto: majority where every sample grade "
                 "is the scale's lowest or top one (a 0/5 judge), else mean (default: auto)",
                 choice(AUTO, *REDUCERS)),
)


def reduce_grades(reducer: str, grades: Sequence[int]) -> int:
    """The grade ``reducer`` makes of one pair's samples."""
    return REDUCERS[reducer](grades)


def auto_reducer(samples: Iterable[Sequence[int]], max_grade: int) -> str:
    """The reducer ``auto`` stands for over a pass's samples: ``majority`` for a binary-like judge (a scale of
    two grades, or one whose every sample grade is 0 or ``max_grade``), else ``mean``. For a 0/5 judge ``mean``
    acts as ``min`` at tau 4 or 5: one 0 among K samples leaves at most round(5 (K - 1) / K) < 5, which is
    below 4 for K <= 3 ("5, 5, 0" reduces to 3); a judge with grades in between is averaged as before."""
    ends = {0, max_grade}
    return "majority" if max_grade <= 1 or all(g in ends for grades in samples for g in grades) else "mean"


@contextmanager
def moved_seed(backend: object, index: int) -> Iterator[None]:
    """``backend``'s seed moved by ``index`` while sample ``index`` is asked (no seed: nothing to move)."""
    seed = getattr(backend, "seed", None)  # the openai backend's option; a local model draws no seed
    if index == 0 or not isinstance(seed, int):
        yield
        return
    backend.seed = seed + index  # type: ignore[attr-defined]
    try:
        yield
    finally:
        backend.seed = seed  # type: ignore[attr-defined]


class SampleGrader(Grader):
    """Sample ``index`` of ``grader``: the same grades, asked again and cached under the index."""

    def __init__(self, grader: Grader, index: int) -> None:
        self.grader = grader
        self.index = index
        self.name = grader.name
        # the grader's spending (llm/cost.py): every sample counts tokens on, and max_cost holds for all together
        self.meter = grader.meter
        self.chunk_size = grader.chunk_size

    def spec(self) -> GraderSpec:
        return self.grader.spec()

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        payload = self.grader.cache_payload(request)
        return payload if self.index == 0 else {**payload, "sample": self.index}

    def supports(self, test_point: TestPoint) -> str | None:
        return self.grader.supports(test_point)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        with self.grader.sampling(self.index):
            return self.grader.grade_batch(requests)

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int] | None:
        return self.grader.estimate(requests)

    def uses_cache(self) -> bool:
        return self.grader.uses_cache()

    def call_key(self, request: GradingRequest) -> Hashable | None:
        return self.grader.call_key(request)

    def probe(self) -> None:
        self.grader.probe()

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        self.grader.prepare(requests)

    def decided_by(self, answer: str | None) -> str | None:
        return self.grader.decided_by(answer)

    def stop_reason(self) -> str | None:
        return self.grader.stop_reason()

    def pass_figures(self) -> dict[str, float] | None:
        return self.grader.pass_figures()

    def close(self) -> None:  # the grader is closed once, by its owner, not by each sample
        pass
