"""The grading pass: grade every needed (passage, test point) pair once, in batches, through the cache.

Pairs are deduplicated by content (the cache key), so identical passages or repeated test points
across queries cost one grade. Each graded batch is committed to the cache before the next starts:
an interrupted pass resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from exam_harness.cache import GradeCache, cache_key
from exam_harness.errors import ConfigError, InputError
from exam_harness.graders.base import GradeFailure, Grader, GradingRequest
from exam_harness.models import Grade, Passage, QueryBank, Run

PairId = tuple[str, str]  # (passage id, test point id)


@dataclass
class GradingOutcome:
    grades: dict[PairId, Grade] = field(default_factory=dict)
    failures: dict[PairId, str] = field(default_factory=dict)
    # test point id -> why the grader cannot grade it (its cases are skipped)
    unsupported: dict[str, str] = field(default_factory=dict)
    pairs: int = 0
    unique: int = 0
    cache_hits: int = 0
    graded: int = 0
    seconds: float = 0.0

    @property
    def cache_misses(self) -> int:
        return self.unique - self.cache_hits


def pool_pairs(
    banks: Iterable[QueryBank],
    runs: Iterable[Run],
    passages: dict[str, Passage],
    *,
    k: int,
    extra: Mapping[str, Iterable[str]] | None = None,
) -> list[GradingRequest]:
    """Requests for every test point of every bank x every passage in any run's top-k for its query.

    ``extra`` adds passages per query (e.g. judged passages) to the pool.
    """
    runs = list(runs)
    requests: list[GradingRequest] = []
    seen: set[PairId] = set()
    for bank in banks:
        qid = bank.query.id
        pool: dict[str, None] = {}
        for run in runs:
            for pid in run.top_k(qid, k):
                pool.setdefault(pid, None)
        for pid in (extra or {}).get(qid, ()):
            pool.setdefault(pid, None)
        for pid in pool:
            passage = passages.get(pid)
            if passage is None:
                raise InputError(
                    f"passage {pid!r} ranked for query {qid!r} has no text in any loaded collection",
                    field="passage_id",
                    value=pid,
                    expected="a passage id defined in a collection, paragraph or responses file",
                )
            for tp in bank.test_points:
                if (pid, tp.id) in seen:
                    continue
                seen.add((pid, tp.id))
                requests.append(GradingRequest(bank.query, tp, passage))
    return requests


ProgressCallback = Callable[[int], None]


def group_by_key(
    grader: Grader, requests: Sequence[GradingRequest], unsupported: dict[str, str]
) -> dict[str, list[GradingRequest]]:
    """Requests grouped by cache key (identical content -> one grade); unsupported ones set aside."""
    fingerprint = grader.spec().fingerprint()
    by_key: dict[str, list[GradingRequest]] = {}
    for request in requests:
        reason = grader.supports(request.test_point)
        if reason is not None:
            unsupported[request.test_point.id] = reason
            continue
        key = cache_key(fingerprint, grader.cache_payload(request))
        by_key.setdefault(key, []).append(request)
    return by_key


def pending_requests(grader: Grader, requests: Sequence[GradingRequest], cache: GradeCache) -> list[GradingRequest]:
    """One request per distinct pair the grader would be asked about (what a dry run counts)."""
    by_key = group_by_key(grader, requests, {})
    found = cache.get_many(by_key) if grader.uses_cache() else {}
    return [group[0] for key, group in by_key.items() if key not in found]


def run_grading_pass(
    grader: Grader,
    requests: Sequence[GradingRequest],
    cache: GradeCache,
    *,
    chunk_size: int = 256,
    on_start: Callable[[int], None] | None = None,
    on_progress: ProgressCallback | None = None,
) -> GradingOutcome:
    started = time.perf_counter()
    outcome = GradingOutcome(pairs=len(requests))
    by_key = group_by_key(grader, requests, outcome.unsupported)
    outcome.unique = len(by_key)

    found = cache.get_many(by_key) if grader.uses_cache() else {}
    outcome.cache_hits = len(found)
    for key, grade in found.items():
        for request in by_key[key]:
            outcome.grades[(request.passage.id, request.test_point.id)] = grade

    todo = [key for key in by_key if key not in found]
    if on_start is not None:
        on_start(len(todo))
    for start in range(0, len(todo), chunk_size):
        keys = todo[start : start + chunk_size]
        batch = [by_key[key][0] for key in keys]
        try:
            results = grader.grade_batch(batch)
        except (ConfigError, InputError):
            raise
        except Exception as exc:  # a crash of one batch is reported per pair, never a grade
            results = [GradeFailure(f"grader {grader.name!r} raised {type(exc).__name__}: {exc}")] * len(batch)
        if len(results) != len(batch):
            raise ConfigError(
                f"grader {grader.name!r} returned {len(results)} results for a batch of {len(batch)}"
            )
        new: dict[str, Grade] = {}
        for key, result in zip(keys, results):
            for request in by_key[key]:
                pair = (request.passage.id, request.test_point.id)
                if isinstance(result, Grade):
                    outcome.grades[pair] = result
                else:
                    outcome.failures[pair] = result.message
            if isinstance(result, Grade):
                new[key] = result
        if grader.uses_cache():
            cache.put_many(new)
        outcome.graded += len(new)
        if on_progress is not None:
            on_progress(len(keys))
    outcome.seconds = time.perf_counter() - started
    return outcome
