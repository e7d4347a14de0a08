"""Grades for an exam: the grading pass through the cache, or the replay of recorded grades.

The grading pass grades every needed (passage, test point) pair once, in batches. Pairs are
deduplicated by content (the cache key), so identical passages or repeated test points across
queries cost one grade. Each graded batch is committed to the cache before the next starts: an
interrupted pass resumes where it stopped. Replay reads a recorded grading run of a Workbench file
without any grader object (the fast path of ``exam-harness evaluate``).

Both give a :class:`GradingOutcome`: grades as small integers, the answer text behind each grade
(for the analyses), and the pairs that could not be graded with the reason.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exam_harness.core.cache_keys import cache_key
from exam_harness.core.errors import ConfigError, GradingAborted, InputError
from exam_harness.core.models import ExamData, Grade, GraderSpec, Passage, QueryBank, Run
from exam_harness.core.progress import GradingProgress
from exam_harness.exam.inputs import DIRECT_ID_END, ExamView, Pair, view_from_banks, view_from_recorded
from exam_harness.graders.base import GradeFailure, Grader, GradingRequest
from exam_harness.graders.repeats import AUTO, SampleGrader, auto_reducer, reduce_grades
from exam_harness.grading.engines import Engine, EngineStopped
from exam_harness.llm.cost import GradingCost, Meter, Prices, TokenUsage, grade_tokens, money

if TYPE_CHECKING:  # the cache (sqlite3, the LLM modes' prompts) is imported where a pass grades, not to replay
    from exam_harness.grading.cache import GradeCache


@dataclass
class GradingOutcome:
    """Every grade of an exam and every pair without one."""

    grades: dict[Pair, int] = field(default_factory=dict)
    # extracted answer, else the raw response: the grade's reason every output shows (docs/reasons.md)
    answers: dict[Pair, str | None] = field(default_factory=dict)
    failures: dict[Pair, str] = field(default_factory=dict)
    # test point id -> why the grader cannot grade it (left out of scores; its cases are skipped)
    unsupported: dict[str, str] = field(default_factory=dict)
    pairs: int = 0
    unique: int = 0
    cache_hits: int = 0
    graded: int = 0
    seconds: float = 0.0
    source: str = "grader"  # or "recorded"
    # cached rows that were not sound grades (regraded as misses), and what the cache said (damage,
    # read-only, a failed write): for the report
    cache_damaged: int = 0
    cache_notices: list[str] = field(default_factory=list)
    # for a grader of several parts: which part decided how many graded pairs (e.g. answer-key: 12)
    decided_by: dict[str, int] = field(default_factory=dict)
    # pairs whose grade a fallback rule read from an answer holding none -> the rule (Grade.fallback)
    fallbacks: dict[Pair, str] = field(default_factory=dict)
    # an LLM grader's tokens and cost: this session's, the cached grades', per pair (docs/cost.md)
    cost: GradingCost | None = None
    # a judge asked several times per pair (grader option repeats=K, graders/repeats.py): K, the reducer
    # that made ``grades``, and each pair's K sample grades (only pairs graded in every sample)
    repeats: int = 1
    reducer: str | None = None
    samples: dict[Pair, tuple[int, ...]] = field(default_factory=dict)
    # distinct pairs neither cached nor graded: another shard's (--exam-shard)
    other_shards: int = 0
    # a grader made of judges: figures of this pass it states beside its grades (Grader.pass_figures)
    judge_figures: dict[str, float] | None = None

    @property
    def cache_misses(self) -> int:
        return self.unique - self.cache_hits

    def record(self, pair: Pair, grade: Grade, *, strict: bool = False) -> None:
        answer = grade.extracted_answer if grade.extracted_answer is not None else grade.raw_response
        self.record_value(pair, grade.grade, answer, grade.fallback, strict)

    def record_value(self, pair: Pair, grade: int, answer: str | None, fallback: str | None, strict: bool) -> None:
        if fallback is not None and strict:
            self.failures[pair] = refused_fallback(answer, fallback)
            return
        self.grades[pair] = grade
        self.answers[pair] = answer
        if fallback is not None:
            self.fallbacks[pair] = fallback


def say_stray_labels(grader: Grader, outcome: GradingOutcome) -> None:
    """One warning line on stderr when the track's prompts got labels that are none of the three (an LLM's
    stray words): each counts 0, as nuggetizer counts it, read by a fallback rule (docs/trec-rag.md)."""
    from exam_harness.core.grade_parsing import FALLBACK_STRAY_LABEL

    strays = Counter(str(outcome.answers.get(pair)) for pair, rule in outcome.fallbacks.items()
                     if rule == FALLBACK_STRAY_LABEL)
    if strays:
        from exam_harness.core.display import print_notice

        shown = ", ".join(f"{label!r} x{n}" for label, n in strays.most_common(5))
        more = f" and {len(strays) - 5} other(s)" if len(strays) > 5 else ""
        print_notice(f"warning: grader {grader.name!r}: {sum(strays.values())} nugget label(s) other than "
                     f"support/partial_support/not_support ({shown}{more}): each counts 0, as nuggetizer counts "
                     "it (a fallback rule: --exam-strict-fallbacks refuses them)")


def shard_of(passage_text: str, count: int) -> int:
    """The shard (1..``count``) of every pair of a passage: the first 64 bits of the SHA-256 of its text, mod
    ``count``. By the passage, not the pair: a grader that encodes each passage once (``embedding``) then encodes
    it in one shard only, where shards by pair each encoded nearly every passage (issue 38: 2 shards cost twice the
    work of one process). Stable across runs and machines, and every pair is in exactly one shard."""
    digest = hashlib.sha256(passage_text.encode("utf-8", "surrogatepass")).hexdigest()
    return int(digest[:16], 16) % count + 1


def refused_fallback(answer: str | None, rule: str) -> str:
    shown = " ".join((answer or "").split())
    return (f"the answer {shown[:80]!r} holds no grade; --exam-strict-fallbacks refuses the fallback rule "
            f"({rule}) that would read one")


def pool_pairs(
    banks: Iterable[QueryBank],
    runs: Iterable[Run],
    passages: Mapping[str, Passage],
    *,
    k: int,
    extra: Mapping[str, Iterable[str]] | None = None,
) -> list[GradingRequest]:
    """Requests for every test point of every bank x every passage in the pool of its query: every
    run's top-k, plus ``extra`` passages per query (the judged passages, under the ``judged`` pool)."""
    runs = list(runs)
    requests: list[GradingRequest] = []
    seen: set[Pair] = set()
    for bank in banks:
        qid = bank.query.id
        pool: dict[str, None] = dict.fromkeys((extra or {}).get(qid, ()))
        for run in runs:
            pool.update(dict.fromkeys(run.top_k(qid, k)))
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
                if (pid, tp.id) not in seen:
                    seen.add((pid, tp.id))
                    requests.append(GradingRequest(bank.query, tp, passage, bank.test_points))
    return requests


def exam_requests(
    data: ExamData, banks: Sequence[QueryBank], *, k: int, pool: str, only_queries: set[str] | None = None
) -> list[GradingRequest]:
    """The pairs an exam over ``banks`` needs graded: every run's top-k, plus the judged passages under
    the ``judged`` pool (``only_queries`` restricts it to those queries)."""
    chosen = [b for b in banks if only_queries is None or b.query.id in only_queries]
    extra = view_from_banks(data, chosen).pooled if pool == "judged" and chosen else None
    return pool_pairs(chosen, data.runs.values(), data.passages, k=k, extra=extra)


def grade_banks(
    data: ExamData,
    banks: Sequence[QueryBank],
    grader: Grader,
    cache: GradeCache,
    *,
    k: int,
    pool: str,
    chunk_size: int | None = None,
    progress: GradingProgress | None = None,
    only_queries: set[str] | None = None,
    engine: Engine | None = None,
    grade_missing: bool = False,
) -> tuple[ExamView, GradingOutcome]:
    """Grade the exam over ``banks`` through ``cache`` (``engine`` and ``grade_missing`` as :func:`run_grading_pass`
    takes them); the view leaves out test points the grader cannot grade."""
    check_gradable(grader, banks)
    requests = exam_requests(data, banks, k=k, pool=pool, only_queries=only_queries)
    size = chunk_size_for(grader, chunk_size)
    with progress or GradingProgress(f"grading with {grader.name}", enabled=False) as bar:
        status = getattr(getattr(getattr(grader, "backend", None), "pacer", None), "status", None)
        if callable(status):
            bar.status = status  # a paced server's rate against rpm, the requests in flight
        outcome = run_grading_pass(grader, requests, cache, chunk_size=size, on_start=bar.start,
                                   on_progress=bar.advance, engine=engine, grade_missing=grade_missing)
    return view_from_banks(data, banks, outcome.grades, exclude=outcome.unsupported), outcome


def check_gradable(grader: Grader, banks: Sequence[QueryBank]) -> None:
    """ConfigError when ``grader`` can grade none of the banks' test points (issue 31, finding 19: a
    nugget prompt on a bank of questions graded nothing, skipped every case and passed). A grader that
    grades some of them skips the others, each case saying why."""
    points = [tp for bank in banks for tp in bank.test_points]
    if not points:
        return
    reasons = Counter(reason for tp in points if (reason := grader.supports(tp)) is not None)
    if sum(reasons.values()) < len(points):
        return
    kinds = ", ".join(sorted({tp.kind for tp in points}))
    raise ConfigError(f"grader {grader.name!r} cannot grade any of the {len(points)} test points of the banks "
                      f"({kinds}): {reasons.most_common(1)[0][0]}; the session would grade nothing and pass")


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
    """One request per distinct pair the grader would be asked about (what a dry run counts); for a grader
    with repeats, one per pair and sample not cached."""
    repeats = grader.repeats
    if repeats > 1:
        return [r for i in range(repeats) for r in pending_requests(SampleGrader(grader, i), requests, cache)]
    by_key = group_by_key(grader, requests, {})
    max_grade = grader.spec().max_grade
    found = cache.get_grades(by_key, max_grade=max_grade, answers=False) if grader.uses_cache() else {}
    return [group[0] for key, group in by_key.items() if key not in found]


def dry_run_summary(grader: Grader, requests: Sequence[GradingRequest], cache: GradeCache) -> str:
    """What grading would spend, computed without calling the grader."""
    repeats = grader.repeats
    # per sample: the same prompt asked again is another call (estimate_requests counts one per distinct prompt)
    samples = [pending_requests(SampleGrader(grader, i), requests, cache) for i in range(repeats)] if repeats > 1 \
        else [pending_requests(grader, requests, cache)]
    pending = [r for sample in samples for r in sample]
    cached = len(group_by_key(grader, requests, {})) * repeats - len(pending)
    text = f"exam dry run: {len(requests)} pairs, {cached} cached; grader {grader.name!r} would be asked "
    estimates = [grader.estimate(sample) for sample in samples]
    if any(figures is None for figures in estimates):  # not an LLM grader: no prompts, so no tokens to count
        return text + f"{len(pending)} pairs (no prompts: not an LLM grader); nothing was graded"
    calls = sum(figures[0] for figures in estimates if figures is not None)
    tokens = sum(figures[1] for figures in estimates if figures is not None)
    text += f"{len(pending)} pairs in {calls} calls with about {tokens} prompt tokens"
    meter = grader.meter
    if meter is not None:
        text += f" and at most {calls * meter.answer_tokens} completion tokens"
        if meter.prices is not None:  # per sample too: the bound counts one call per distinct prompt
            text += f", at most {money(sum(meter.bound(sample)[2] for sample in samples))}"
        from exam_harness.grading.batches import batch_of  # imported here: see run_grading_pass

        batch = batch_of(grader)
        if batch is not None and meter.prices is not None and meter.prices.batch is not None:  # llm/cost.py
            text += (" synchronously, "
                     f"{money(sum(batch_bound(meter, meter.prices, sample) for sample in samples))} as batch jobs")
        if meter.max_cost is not None:
            text += f" (max_cost {money(meter.max_cost)})"
    return text + "; nothing was sent"


def shared_tokens(requests: Sequence[GradingRequest], tokens: tuple[float, float]
                  ) -> dict[tuple[str, str], tuple[float, float]]:
    """Each pair's share of one grade's tokens. A grade answers every request of its key: for a
    query-level prompt (UMBRELA, the direct baselines: the passage against the query alone) that is every
    test point of the query with that passage, one call; each pair gets its share, so a run's pairs sum
    to the call's tokens once, not once per test point."""
    per_passage = Counter(r.passage.id for r in requests)
    return {(r.passage.id, r.test_point.id): (tokens[0] / per_passage[r.passage.id],
                                              tokens[1] / per_passage[r.passage.id]) for r in requests}


def batch_bound(meter: Meter, prices: Prices, requests: Sequence[GradingRequest]) -> float:
    """What grading ``requests`` may cost as batch jobs (``prices``' batch prices, else ``prices``), by the same
    bound as the synchronous figure."""
    calls, prompt_tokens, _ = meter.bound(requests)
    return prices.cost(TokenUsage(prompt_tokens, calls * meter.answer_tokens).as_batch())


def _use_cached_grades(
    grader: Grader, by_key: Mapping[str, Sequence[GradingRequest]], cache: GradeCache, outcome: GradingOutcome,
    strict: bool = False,
) -> set[str]:
    """Record the cached grades of ``by_key`` in ``outcome`` and return their keys. Damaged rows are
    misses: counted in ``outcome.cache_damaged`` and said through the cache."""
    damaged_before = cache.damaged
    # Integers and answer texts are all a pass needs: the lean lookup builds no Grade objects.
    cost = outcome.cost
    found = cache.get_grades(by_key, max_grade=grader.spec().max_grade, tokens=cost is not None)
    outcome.cache_hits = len(found)
    for key, hit in found.items():
        for request in by_key[key]:
            pair = (request.passage.id, request.test_point.id)
            outcome.record_value(pair, hit.grade, hit.answer, hit.fallback, strict)
        if cost is not None and hit.tokens is not None:
            cost.pair_tokens.update(shared_tokens(by_key[key], hit.tokens))
            cost.cached.prompt_tokens += hit.tokens[0]
            cost.cached.completion_tokens += hit.tokens[1]
            if hit.batch:  # made by a batch job: its tokens cost the batch rate (llm/cost.py)
                cost.batch_pairs.update((r.passage.id, r.test_point.id) for r in by_key[key])
                cost.cached.batch_prompt_tokens += hit.tokens[0]
                cost.cached.batch_completion_tokens += hit.tokens[1]
    outcome.cache_damaged = damaged = cache.damaged - damaged_before
    if damaged:
        count, were = (f"{damaged} cached grades", "were") if damaged > 1 else ("1 cached grade", "was")
        cache.note(f"{count} of grader {grader.name!r} in {cache.path or 'the cache'} {were} damaged (not a valid "
                   "grade of this grader) and graded again")
    return set(found)


# Grades are committed at least this often. Each commit rewrites every B-tree page it touches, and the
# keys are hashes, so a batch of 256 grades touches about 256 pages: a fast grader's batches committed
# one by one wrote ~4 KB of pages a grade.
STORE_EVERY_S = 0.5
STORE_AT_MOST = 32768  # grades held for one commit (a Grade takes about half a KB)


class _Store:
    """The grades of a pass not yet stored, committed together once :data:`STORE_EVERY_S` has passed
    (or :data:`STORE_AT_MOST` are held)."""

    def __init__(self, cache: GradeCache | None) -> None:
        self.cache = cache
        self.pending: dict[str, Grade] = {}
        self.stored_at = time.perf_counter()

    def add(self, grades: Mapping[str, Grade]) -> None:
        self.pending.update(grades)
        if len(self.pending) >= STORE_AT_MOST or time.perf_counter() - self.stored_at >= STORE_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if self.cache is not None and self.pending:
            self.cache.put_many(self.pending)  # False when not stored: the cache said why; the outcome keeps them
        self.pending = {}
        self.stored_at = time.perf_counter()


DEFAULT_CHUNK_SIZE = 256  # pairs per grader call when neither --batch-size nor the grader says


def call_batches(grader: Grader, by_key: Mapping[str, Sequence[GradingRequest]], todo: Sequence[str],
                 chunk_size: int) -> list[list[str]]:
    """``todo`` cut into batches of about ``chunk_size`` keys that never split one call of the grader
    (:meth:`~exam_harness.graders.base.Grader.call_key`: a batch closes only between calls, so it may hold
    a few keys more): the keys of one call come together, in the order of their first key."""
    calls: dict[Hashable, list[str]] = {}
    for key in todo:
        call = grader.call_key(by_key[key][0])
        calls.setdefault(key if call is None else (call,), []).append(key)
    batches: list[list[str]] = []
    current: list[str] = []
    for keys in calls.values():
        current.extend(keys)
        if len(current) >= chunk_size:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def chunk_size_for(grader: Grader, batch_size: int | None) -> int:
    """Pairs per grader call: ``batch_size`` when given, else the grader's own ``chunk_size``, else the default."""
    return batch_size or grader.chunk_size or DEFAULT_CHUNK_SIZE


def run_grading_pass(
    grader: Grader,
    requests: Sequence[GradingRequest],
    cache: GradeCache,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    strict_fallbacks: bool = False,
    budget_from: TokenUsage | None = None,
    shard: tuple[int, int] | None = None,
    engine: Engine | None = None,
    grade_missing: bool = False,
) -> GradingOutcome:
    """Grade every distinct pair of ``requests`` that the cache does not hold, in batches of ``chunk_size``
    (the grader's ``prepare`` sees every such pair first), storing the grades at least every
    :data:`STORE_EVERY_S` seconds and when the pass ends or stops: every batch of a grader slower than
    that, a fast grader's batches together. A cache that cannot store (read-only, damaged, a full disk)
    says so once; the grades are kept in the outcome all the same.

    A grader with ``repeats=K`` (graders/repeats.py) is asked K times per pair, each sample through the
    cache under its index; a pair's grade is the reducer's over its K samples. ``budget_from``: the
    backend's counters where ``max_cost`` started counting (the first sample's pass; default: this pass).

    ``engine`` (grading/engines.py) grades the misses instead of this process; the grades are stored here all the
    same. A cache that records a sharded pass (``--exam-shard``, merged or not) and lacks some of its pairs is a
    ConfigError naming the shards they belong to, unless ``grade_missing`` (``--exam-grade-missing``)."""
    if grader.repeats > 1:
        if shard is not None:
            raise ConfigError("--exam-shard does not take a grader with repeats > 1")
        return _repeated_pass(grader, requests, cache, grader.repeats, grader.reducer, chunk_size=chunk_size,
                              on_start=on_start, on_progress=on_progress, strict_fallbacks=strict_fallbacks,
                              grade_missing=grade_missing)
    started = time.perf_counter()
    outcome = GradingOutcome(pairs=len(requests))
    meter = grader.meter
    cost = outcome.cost = GradingCost(prices=meter.prices, max_cost=meter.max_cost) if meter is not None else None
    used_before = meter.used() if meter is not None else TokenUsage()  # the backend counts over its lifetime
    spent_from = budget_from if budget_from is not None else used_before
    by_key = group_by_key(grader, requests, outcome.unsupported)
    outcome.unique = len(by_key)

    found = _use_cached_grades(grader, by_key, cache, outcome, strict_fallbacks) if grader.uses_cache() else set()

    todo = [key for key in by_key if key not in found]
    if shard is not None:  # the other shards' pairs are left to them (neither graded nor failures)
        index, count = shard
        shards: dict[str, int] = {}  # passage text -> its shard (a passage has several test points)
        for key in todo:
            text = by_key[key][0].passage.text
            if text not in shards:
                shards[text] = shard_of(text, count)
        mine = [key for key in todo if shards[by_key[key][0].passage.text] == index]
        outcome.other_shards = len(todo) - len(mine)
        todo = mine
    elif todo and not grade_missing and grader.uses_cache():
        check_shards_complete(cache, [by_key[key][0] for key in todo])
    if todo:
        # imported here: batch grading brings the OpenAI client (asyncio with it), which replaying
        # recorded grades or reading the cache never needs
        from exam_harness.grading.batches import batch_of

        if batch_of(grader) is not None:  # no synchronous call: batch jobs answer (batches.py)
            _grade_through_batch(grader, by_key, todo, cache, outcome, strict_fallbacks)
            todo = []
    if todo:
        grader.probe()  # one call that fails fast (server down, model missing) before any pair is spent
    if on_start is not None:
        on_start(len(todo))
    if engine is not None and todo:
        _grade_through_engine(engine, grader, by_key, todo, cache, outcome, chunk_size=chunk_size,
                              strict=strict_fallbacks, on_progress=on_progress)
        return _finished(outcome, grader, cache, started, graded_here=False)
    try:
        if todo:
            grader.prepare([by_key[key][0] for key in todo])  # shares work across the batches (base.py)
    except (ConfigError, InputError):
        raise
    except Exception as exc:  # preparing only shares work: the batches redo it and report an error per pair
        cache.note(f"grader {grader.name!r} could not prepare the pass ({type(exc).__name__}: {exc}); "
                   "each batch does its own work")
    store = _Store(cache if grader.uses_cache() else None)
    if meter is not None:
        chunk_size = meter.batch_size(chunk_size)  # under max_cost: what is spent is checked every few calls
    try:
        done_before = 0
        batches = call_batches(grader, by_key, todo, chunk_size)
        todo = [key for keys in batches for key in keys]  # the batches' order: what is left is the tail
        for keys in batches:
            start, done_before = done_before, done_before + len(keys)
            batch = [by_key[key][0] for key in keys]
            over_budget = meter is not None and _cut_to_budget(meter, batch, keys, spent_from)
            try:
                results = grader.grade_batch(batch) if batch else []  # empty: nothing fits max_cost
            except (ConfigError, InputError):
                raise
            except Exception as exc:  # a crash of one batch is reported per pair, never a grade
                results = [GradeFailure(f"grader {grader.name!r} raised {type(exc).__name__}: {exc}")] * len(batch)
            if len(results) != len(batch):
                raise ConfigError(
                    f"grader {grader.name!r} returned {len(results)} results for a batch of {len(batch)}")
            new: dict[str, Grade] = {}
            for key, result in zip(keys, results):
                grade = _record_result(outcome, by_key[key], result, strict=strict_fallbacks)
                if grade is not None:
                    new[key] = grade
                    tokens = grade_tokens(grade.details) if cost is not None else None
                    if meter is not None and cost is not None and tokens is not None:
                        cost.pair_tokens.update(shared_tokens(by_key[key], tokens))
                        meter.note(tokens)
            store.add(new)
            outcome.graded += len(new)
            if on_progress is not None:
                on_progress(len(keys))
            if meter is not None and (over_budget or meter.over_budget() is not None):
                _stop_at_budget(meter, outcome, by_key, todo[start + len(keys):], spent_from)
                break
            stop = grader.stop_reason()
            if stop is not None:
                # the grades so far are stored on the way out; pairs after it would only fail the same way
                raise GradingAborted(stop, graded=outcome.graded, remaining=len(todo) - start - len(keys)
                                     + sum(1 for r in results if not isinstance(r, Grade)))
    finally:
        store.flush()  # also on an error or Ctrl-C: every grade obtained is kept
        if meter is not None and cost is not None:
            cost.session = meter.used() - used_before
    return _finished(outcome, grader, cache, started, graded_here=bool(todo))


def _finished(outcome: GradingOutcome, grader: Grader, cache: GradeCache, started: float, *,
              graded_here: bool) -> GradingOutcome:
    """The outcome's closing figures; ``graded_here``: this process's grader graded pairs (its pass figures are this
    pass's: not so under an engine, whose graders are the workers')."""
    outcome.cache_notices = list(cache.notices)
    say_stray_labels(grader, outcome)
    decided = Counter(d for a in outcome.answers.values() if (d := grader.decided_by(a)) is not None)
    outcome.decided_by = dict(sorted(decided.items()))
    outcome.judge_figures = grader.pass_figures() if graded_here else None
    outcome.seconds = time.perf_counter() - started
    return outcome


def check_shards_complete(cache: GradeCache, todo: Sequence[GradingRequest]) -> None:
    """ConfigError when ``cache`` records a sharded pass (``--exam-shard`` sessions, or their merge) and lacks the
    pairs of ``todo`` (one request per missing key): which shard each is of, and whether that shard's cache was
    merged at all."""
    spec = cache.shards()
    if spec is None:
        return
    count, merged = spec
    missing = Counter(shard_of(request.passage.text, count) for request in todo)
    parts = []
    for index in sorted(missing):
        why = "its cache was merged, but it did not grade them all" if index in merged else "its cache is not merged"
        parts.append(f"{missing[index]} of shard {index}/{count} ({why})")
    absent = [f"{i}/{count}" for i in sorted(missing) if i not in merged]
    hint = (f"merge the cache of shard {', '.join(absent)} (exam-harness cache merge) or rerun " if absent
            else "rerun ") + "those shards (--exam-shard=I/N: each grades only what it lacks)"
    held = ", ".join(f"{i}/{count}" for i in sorted(merged)) or "none"
    raise ConfigError(
        f"grade cache {cache.path or '(memory)'} holds shards {held} of a pass graded in {count} shards and lacks "
        f"{len(todo)} of the pairs this session needs: {'; '.join(parts)}. Nothing was graded: {hint}, or pass "
        "--exam-grade-missing (exam-harness: --grade-missing) to grade them in this session")


def _record_result(outcome: GradingOutcome, requests: Sequence[GradingRequest], result: Grade | GradeFailure, *,
                   strict: bool) -> Grade | None:
    """One cache key's result recorded for every request sharing the key (a grade, or a failure per pair, never
    a grade); the grade to store, or None."""
    for request in requests:
        pair = (request.passage.id, request.test_point.id)
        if isinstance(result, Grade):
            outcome.record(pair, result, strict=strict)
        else:
            outcome.failures[pair] = result.message
    return result if isinstance(result, Grade) else None


def _grade_through_engine(engine: Engine, grader: Grader, by_key: Mapping[str, Sequence[GradingRequest]],
                          todo: Sequence[str], cache: GradeCache, outcome: GradingOutcome, *, chunk_size: int,
                          strict: bool, on_progress: Callable[[int], None] | None) -> None:
    """The misses graded by ``engine``: each result recorded as the local pass records it, the grades stored in
    ``cache`` by this process (the one writer). A key answered twice (a batch a restarted worker did again) keeps
    its first answer; the keys the engine gave no result for when it stopped are failures, never grades."""
    left = dict.fromkeys(todo)
    cost = outcome.cost
    spent = TokenUsage()
    store = _Store(cache)
    try:
        for batch in engine.grade([(key, by_key[key][0]) for key in todo], chunk_size=chunk_size):
            new: dict[str, Grade] = {}
            for key, result in batch.results:
                if key not in left:
                    continue
                del left[key]
                grade = _record_result(outcome, by_key[key], result, strict=strict)
                if grade is not None:
                    new[key] = grade
                    tokens = grade_tokens(grade.details) if cost is not None else None
                    if cost is not None and tokens is not None:
                        cost.pair_tokens.update(shared_tokens(by_key[key], tokens))
            store.add(new)
            outcome.graded += len(new)
            spent = spent + batch.usage
            if on_progress is not None:
                on_progress(len(batch.results))
            if batch.stop is not None:
                _not_graded(outcome, by_key, left, batch.stop)
                raise GradingAborted(batch.stop, graded=outcome.graded, remaining=len(left))
    except EngineStopped as exc:
        _not_graded(outcome, by_key, left, str(exc))
        raise GradingAborted(f"the {engine.name} engine stopped ({exc})", graded=outcome.graded,
                             remaining=len(left)) from exc
    finally:
        store.flush()  # also on an error or Ctrl-C: every grade obtained is kept
        if cost is not None:
            cost.session = spent
    if left:  # an engine that ended without answering for every key
        _not_graded(outcome, by_key, left, f"the {engine.name} engine gave no result")


def _not_graded(outcome: GradingOutcome, by_key: Mapping[str, Sequence[GradingRequest]], keys: Iterable[str],
                why: str) -> None:
    for key in keys:
        for request in by_key[key]:
            outcome.failures[(request.passage.id, request.test_point.id)] = f"not graded: {why}"


COLLECT_HINT = "rerun this command to collect them (or `exam-harness grade --batch collect` with the same inputs)"


def _grade_through_batch(grader: Grader, by_key: Mapping[str, Sequence[GradingRequest]], todo: Sequence[str],
                         cache: GradeCache, outcome: GradingOutcome, strict: bool) -> None:
    """Collect the batch jobs' grades of ``todo`` and send the rest; :class:`BatchPending` while any wait."""
    from exam_harness.grading.batches import BatchPending, exchange_waiting, pending_message

    done = exchange_waiting(grader, {key: by_key[key][0] for key in todo}, cache.path, cache.put_many)
    cost = outcome.cost
    for key, grade in done.grades.items():
        for request in by_key[key]:
            outcome.record((request.passage.id, request.test_point.id), grade, strict=strict)
        tokens = grade_tokens(grade.details) if cost is not None else None
        if cost is not None and tokens is not None:  # the session's tokens are the backend's (llm/openai.py)
            cost.pair_tokens.update(shared_tokens(by_key[key], tokens))
            cost.batch_pairs.update((r.passage.id, r.test_point.id) for r in by_key[key])
    outcome.graded += len(done.grades)
    if done.pending:
        raise BatchPending(pending_message(done, COLLECT_HINT))
    for key, why in done.resent.items():  # neither graded nor sent: a prompt that cannot be sent at all
        for request in by_key[key]:
            outcome.failures[(request.passage.id, request.test_point.id)] = why


def _repeated_pass(
    grader: Grader, requests: Sequence[GradingRequest], cache: GradeCache, repeats: int, reducer: str, *,
    chunk_size: int, on_start: Callable[[int], None] | None, on_progress: Callable[[int], None] | None,
    strict_fallbacks: bool, grade_missing: bool = False,
) -> GradingOutcome:
    """K grading passes, one per sample, made one outcome: a pair graded in every sample gets the reducer's
    grade; a pair that failed in any sample is a failure (a grade of fewer samples would not be what the
    report says it is), and its samples that were graded stay cached for the next run."""
    started = time.perf_counter()
    samplers = [SampleGrader(grader, i) for i in range(repeats)]
    if on_start is not None:
        on_start(sum(len(pending_requests(s, requests, cache)) for s in samplers) if grader.uses_cache()
                 else len(group_by_key(grader, requests, {})) * repeats)
    meter = grader.meter
    budget_from = meter.used() if meter is not None else None  # max_cost bounds the K samples together
    passes = [run_grading_pass(s, requests, cache, chunk_size=chunk_size, on_progress=on_progress,
                               strict_fallbacks=strict_fallbacks, budget_from=budget_from,
                               grade_missing=grade_missing) for s in samplers]
    first = passes[0]
    outcome = GradingOutcome(
        pairs=first.pairs, unique=sum(p.unique for p in passes), cache_hits=sum(p.cache_hits for p in passes),
        graded=sum(p.graded for p in passes), unsupported=dict(first.unsupported),
        cache_damaged=sum(p.cache_damaged for p in passes), repeats=repeats, reducer=reducer,
        cache_notices=list(dict.fromkeys(n for p in passes for n in p.cache_notices)),
        cost=_samples_cost([p.cost for p in passes]), judge_figures=passes[-1].judge_figures,
    )
    pairs = dict.fromkeys(pair for p in passes for pair in (*p.grades, *p.failures))
    if reducer == AUTO:  # majority for a judge whose samples are only its scale's two ends, else mean
        reducer = auto_reducer(([p.grades[pair] for p in passes if pair in p.grades] for pair in pairs),
                               grader.spec().max_grade)
        outcome.reducer = reducer
    for pair in pairs:
        failed = [(i, p.failures[pair]) for i, p in enumerate(passes) if pair in p.failures]
        if failed or any(pair not in p.grades for p in passes):
            i, why = failed[0] if failed else (0, "not graded")
            outcome.failures[pair] = f"sample {i + 1} of {repeats}: {why}"
            continue
        samples = tuple(p.grades[pair] for p in passes)
        grade = reduce_grades(reducer, samples)
        outcome.grades[pair] = grade
        outcome.samples[pair] = samples
        # every sample's answer where they differ: the reducer's grade may be none of theirs (the mean of 0, 5, 5)
        said = list(dict.fromkeys(p.answers.get(pair) for p in passes))
        outcome.answers[pair] = said[0] if len(said) == 1 else " | ".join(str(a) for a in
                                                                           (p.answers.get(pair) for p in passes))
        rule = next((p.fallbacks[pair] for p in passes if pair in p.fallbacks), None)
        if rule is not None:  # a grade resting on a sample that a fallback rule read
            outcome.fallbacks[pair] = rule
    decided = Counter(d for a in outcome.answers.values() if (d := grader.decided_by(a)) is not None)
    outcome.decided_by = dict(sorted(decided.items()))
    outcome.seconds = time.perf_counter() - started
    return outcome


def _samples_cost(costs: Sequence[GradingCost | None]) -> GradingCost | None:
    """The K sample passes' figures as one: tokens summed, each pair's over its samples."""
    known = [c for c in costs if c is not None]
    if not known:
        return None
    out = GradingCost(prices=known[-1].prices, max_cost=known[-1].max_cost)
    for c in known:
        out.session = out.session + c.session
        out.cached = out.cached + c.cached
        for pair, (prompt, completion) in c.pair_tokens.items():
            was = out.pair_tokens.get(pair, (0.0, 0.0))
            out.pair_tokens[pair] = (was[0] + prompt, was[1] + completion)
        out.stopped = out.stopped or c.stopped
        out.not_graded = max(out.not_graded, c.not_graded)
    return out


def _cut_to_budget(meter: Meter, batch: list[GradingRequest], keys: list[str], used_before: TokenUsage) -> bool:
    """Cut ``batch`` and ``keys`` (in place) to what fits within ``max_cost``; True when something was cut."""
    spent = meter.prices.cost(meter.used() - used_before) if meter.prices is not None else 0.0
    fit = meter.affordable(batch, spent)
    if fit == len(batch):
        return False
    del batch[fit:], keys[fit:]
    return True


def _stop_at_budget(meter: Meter, outcome: GradingOutcome, by_key: Mapping[str, Sequence[GradingRequest]],
                    left: Sequence[str], used_before: TokenUsage) -> None:
    """Grading stops at ``max_cost``: the pairs not graded are failures, the outcome says why."""
    assert outcome.cost is not None and meter.max_cost is not None
    spent = outcome.cost.cost(meter.used() - used_before) or 0.0
    reason = meter.closed or (f"max_cost {money(meter.max_cost)} reached: {money(spent)} spent, and the next pairs "
                              "could cost more than is left")
    for key in left:
        for request in by_key[key]:
            outcome.failures[(request.passage.id, request.test_point.id)] = f"not graded: {reason}"
    # the pairs left plus those of the last batch that were not sent: the count the failure line gives
    not_graded = sum(1 for why in outcome.failures.values() if why.startswith(("not graded: ", "not sent: ")))
    outcome.cost.stopped = f"grading stopped: {reason}; {not_graded} pairs were not graded (raise max_cost to " \
                           "grade them: the grades made are cached)"
    outcome.cost.not_graded = not_graded


# --- replaying recorded grades -----------------------------------------------------------------

GradingRun = tuple[str | None, str | None]  # (llm, prompt class) of recorded grades
_GRADING_RUN = operator.attrgetter("llm", "prompt_class")
_TEST_POINT = operator.itemgetter(1)


def _direct_test_points(data: ExamData) -> set[str]:
    """The pseudo test points of direct grades among the recorded ones (none in most files)."""
    # ~100k pairs on DL19 but a few hundred test points: the ids are gathered in C, then checked
    return {tid for tid in set(map(_TEST_POINT, data.recorded)) if tid.endswith(DIRECT_ID_END)}


def recorded_grading_runs(data: ExamData, direct: AbstractSet[str] | None = None) -> Counter[GradingRun]:
    """How many recorded grades each (llm, prompt class) grading run holds (direct grades excluded;
    ``direct``: the direct pseudo test points, when the caller has them)."""
    if direct is None:
        direct = _direct_test_points(data)
    # ~100k grades on DL19: every grade counted in C, then the few direct ones taken off again
    counts = Counter(map(_GRADING_RUN, itertools.chain.from_iterable(data.recorded.values())))
    if direct:
        for pair in [pair for pair in data.recorded if pair[1] in direct]:
            counts.subtract(map(_GRADING_RUN, data.recorded[pair]))
    return +counts  # runs of direct grades alone left out


def describe_grading_run(run: GradingRun) -> str:
    llm, prompt_class = run
    return f"--llm {llm or '(none)'} --prompt-class {prompt_class or '(none)'}"


def choose_grading_run(data: ExamData, llm: str | None = None, prompt_class: str | None = None) -> GradingRun:
    """The one recorded grading run matching ``llm`` / ``prompt_class`` (None matches any).

    No recorded grades, no match, or several matches are a ConfigError listing what the file has.
    """
    return _choose_grading_run(recorded_grading_runs(data), llm, prompt_class)


def _choose_grading_run(counts: Counter[GradingRun], llm: str | None, prompt_class: str | None) -> GradingRun:
    if not counts:
        raise ConfigError(
            "the loaded files hold no recorded exam_grades to replay; give a bank and a grader "
            "(--bank BANK --grader embedding) to grade the passages instead"
        )
    matching = [
        run for run in counts if (llm is None or run[0] == llm) and (prompt_class is None or run[1] == prompt_class)
    ]
    listed = "; ".join(f"{describe_grading_run(r)} ({counts[r]} grades)" for r in sorted(counts, key=str))
    if not matching:
        raise ConfigError(
            f"no recorded grading run matches llm={llm!r} prompt_class={prompt_class!r}. Available: {listed}")
    if len(matching) > 1:
        raise ConfigError(
            f"the files hold several recorded grading runs; choose one with --llm/--prompt-class: {listed}")
    return matching[0]


def recorded_spec(run: GradingRun) -> GraderSpec:
    """The identity of a recorded grading run (self-ratings 0..5, as the published files hold; nugget
    assignments 0..2)."""
    from exam_harness.core.grade_kinds import recorded_scale

    max_grade, tau = recorded_scale(run[1])
    return GraderSpec(name="recorded", version="1", model=run[0], prompt_class=run[1], max_grade=max_grade,
                      default_min_grade=tau)


def replay(
    data: ExamData, *, llm: str | None = None, prompt_class: str | None = None, banks: Sequence[QueryBank] = ()
) -> tuple[ExamView, GradingOutcome, GraderSpec]:
    """The exam and grades of one recorded grading run (chosen by llm / prompt class).

    With ``banks`` the test points are the banks'; bank pairs of the judged passages without a
    recorded grade are failures, recorded grades of other test points are ignored.
    """
    direct = _direct_test_points(data)
    counts = recorded_grading_runs(data, direct)
    run = _choose_grading_run(counts, llm, prompt_class)
    outcome = GradingOutcome(source="recorded")
    grades, answers = outcome.grades, outcome.answers
    llm, prompt_class = run
    if len(counts) == 1 and not direct:
        # every recorded grade is of this one run (~100k on DL19): each pair's first grade is the one
        for pair, recs in data.recorded.items():
            rec = recs[0]
            grades[pair] = rec.grade
            answers[pair] = rec.answer
    else:
        for pair, recs in data.recorded.items():
            if direct and pair[1] in direct:
                continue
            for rec in recs:
                if rec.llm == llm and rec.prompt_class == prompt_class:
                    grades[pair] = rec.grade
                    answers[pair] = rec.answer
                    break
    view = view_from_banks(data, banks, outcome.grades) if banks else view_from_recorded(data, outcome.grades)
    if banks:
        keep = view.query_of()
        outcome.grades = {pair: g for pair, g in outcome.grades.items() if pair[1] in keep}
    graded = outcome.grades
    outcome.pairs = sum(len(view.pooled.get(q, [])) * len(view.test_points[q]) for q in view.queries)
    # Without banks every grade is a pair of the view (its passage pooled, its test point the query's),
    # so as many grades as pairs leave no pair without one (DL19: ~100k pairs not looked up again).
    if banks or len(graded) != outcome.pairs:
        for qid in view.queries:
            tids = view.test_points[qid]
            for pid in view.pooled.get(qid, []):
                for tid in tids:
                    if (pid, tid) not in graded:
                        outcome.failures[(pid, tid)] = "no recorded grade"
    outcome.unique = len(outcome.grades)
    return view, outcome, recorded_spec(run)
