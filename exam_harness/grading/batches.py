"""Grading through batch jobs (grader option ``batch=true``; docs/batch.md).

A grading pass with a batch grader makes no synchronous call. :func:`exchange` collects what finished
jobs answered (each answer read by the grader's own parser: a malformed one, or a request answered twice
differently, is a failure, never a grade, and is sent again), stores those grades in the cache through
``store`` *before* the state file forgets their job (so a kill between submit and collect loses nothing),
and sends the pairs the cache still lacks, which no job carries, as new request files whose custom ids
are the pairs' cache keys. :func:`exchange_waiting` does that, then waits for the jobs in the same process
(option ``batch_wait``), looking again with backoff and saying their progress each time, so one session
grades through batch jobs instead of one session per look. Batch grades say ``batch`` in their details:
their tokens are priced at the batch rate (llm/cost.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from exam_harness.core.display import print_notice
from exam_harness.core.errors import ConfigError, InfrastructureError, InputError
from exam_harness.core.models import Grade
from exam_harness.graders.base import GradeFailure, GradingRequest
from exam_harness.llm import batch as files
from exam_harness.llm.batch import MAX_POLL_S, BatchJob, BatchSettings, BatchState, OutputLine
from exam_harness.llm.openai import MalformedResponse, OpenAIBackend

T = TypeVar("T")


class BatchPending(InfrastructureError):
    """Pairs are waiting in batch jobs: nothing to score yet; collect and run again (exit status 75)."""


@dataclass
class Exchange:
    """What one :func:`exchange` did."""

    grades: dict[str, Grade] = field(default_factory=dict)  # collected now, already stored
    pending: dict[str, str] = field(default_factory=dict)  # cache key -> the job's name that carries it
    resent: dict[str, str] = field(default_factory=dict)  # cache key -> why its answer was not a grade
    submitted: list[BatchJob] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # output lines naming no request, requests answered twice
    state: Path | None = None
    jobs: list[str] = field(default_factory=list)  # each job's status after this exchange (for progress lines)

    def then(self, later: Exchange) -> Exchange:
        """This exchange followed by ``later`` (a look at the same jobs, made after it) as one."""
        grades = {**self.grades, **later.grades}
        return Exchange(grades, later.pending, {k: v for k, v in {**self.resent, **later.resent}.items()
                                                if k not in grades}, [*self.submitted, *later.submitted],
                        [*self.problems, *later.problems], later.state, later.jobs)


def batch_of(grader: object) -> BatchSettings | None:
    """The grader's batch settings (``batch=true``), else None."""
    settings = getattr(grader, "batch", None)
    return settings if isinstance(settings, BatchSettings) else None


def _checked(grader: Any, cache_path: Path | None) -> tuple[OpenAIBackend, Path]:
    backend = getattr(grader, "backend", None)
    if not isinstance(backend, OpenAIBackend):
        raise ConfigError(f"grader {grader.name!r}: batch=true needs an OpenAI-compatible backend")
    why = grader.batch_unsupported()
    if why is not None:
        raise ConfigError(f"grader {grader.name!r}: batch=true grades one pair per prompt, and {why}")
    if int(getattr(grader, "repeats", 1) or 1) > 1:
        raise ConfigError(f"grader {grader.name!r}: batch=true does not take repeats > 1")
    if cache_path is None:
        raise ConfigError("batch grading keeps its jobs beside the grade cache: give --exam-cache a file")
    return backend, cache_path


def exchange(grader: Any, todo: Mapping[str, GradingRequest], cache_path: Path | None,
             store: Callable[[Mapping[str, Grade]], object], *, collect: bool = True, submit: bool = True
             ) -> Exchange:
    """Collect finished jobs' answers to ``todo`` (cache key -> request) and store them, then submit the
    rest of ``todo`` that no job carries. ``collect=False`` only submits; ``submit=False`` only collects."""
    settings = batch_of(grader)
    assert settings is not None
    backend, path = _checked(grader, cache_path)
    state = BatchState(path)
    out = Exchange(state=state.path)
    client = backend.client() if settings.target == "server" or any(j.target == "server" for j in state.jobs) \
        else None
    try:
        for job in state.jobs:
            if submit and job.target == "server" and job.batch_id is None:
                # written but never created (the process died or the server refused in between): send it now
                _guarded(backend, partial(files.submit, client, state, job))
                state.save()
            _guarded(backend, partial(files.refresh, client, state, job))
        if collect:
            _collect(grader, backend, client, state, todo, out)
            # stored before the state forgets the jobs that answered them; a cache that could not store
            # them (it said why) keeps the jobs, to be collected again
            if store(out.grades) is not False:
                state.jobs = [job for job in state.jobs if job.live]
                state.save()
        carried = state.pending_ids()
        out.pending = {key: carried[key].name for key in todo if key in carried and key not in out.grades}
        if submit:
            fresh = {key: request for key, request in todo.items() if key not in carried and key not in out.grades}
            _submit(grader, backend, client, state, settings, fresh, out)
        out.jobs = [line for line, job in zip(describe(state), state.jobs, strict=False) if job.live]
    finally:
        if client is not None:
            client.close()
    return out


def _guarded(backend: OpenAIBackend, call: Callable[[], T]) -> T:
    """A batch API call; a server that cannot be reached or refuses is an InfrastructureError (75)."""
    try:
        return call()
    except (OSError, ConfigError, InputError, InfrastructureError):
        raise
    except Exception as exc:  # the openai client's errors: nothing is lost, the state file is as it was
        raise InfrastructureError(backend.scrub(f"batch API call to {backend.base_url or 'api.openai.com'} "
                                                f"failed: {type(exc).__name__}: {exc}")) from None


def _collect(grader: Any, backend: OpenAIBackend, client: Any, state: BatchState,
             todo: Mapping[str, GradingRequest], out: Exchange) -> None:
    for job in state.jobs:
        if job.live:
            continue
        texts = _guarded(backend, partial(files.outputs, client, state, job))
        answers, problems = files.read_outputs(texts)  # one set: a request answered twice differently is no grade
        out.problems.extend(problems)
        for key in job.custom_ids:
            request = todo.get(key)
            if request is None:
                continue  # graded since (another machine's collect) or no longer in the exam
            result = _grade_of(grader, backend, request, answers.get(key), job)
            if isinstance(result, Grade):
                out.grades[key] = result
            else:
                out.resent[key] = result.message


def _grade_of(grader: Any, backend: OpenAIBackend, request: GradingRequest, line: OutputLine | None,
              job: BatchJob) -> Grade | GradeFailure:
    if line is None:
        return GradeFailure(f"batch job {job.name} ({job.status}) holds no answer")
    if line.error is not None:
        return GradeFailure(f"batch job {job.name}: {line.error}")
    parts = grader.prompt_for(request)
    try:
        generation = backend.batch_generation(line.body, parts, max_new_tokens=grader.max_new_tokens,
                                              rating_scale=grader.mode.rating_scale)
    except MalformedResponse as exc:
        return GradeFailure(f"batch job {job.name}: malformed answer: {exc}")
    result = grader.grade_answer(request, generation)
    if isinstance(result, Grade):  # said in its details: its tokens cost the batch rate (llm/cost.py)
        return result.model_copy(update={"details": {**result.details, "batch": True}})
    return result if isinstance(result, GradeFailure) else GradeFailure("not graded")


def _submit(grader: Any, backend: OpenAIBackend, client: Any, state: BatchState, settings: BatchSettings,
            fresh: Mapping[str, GradingRequest], out: Exchange) -> None:
    by_url: dict[str, list[tuple[str, str]]] = {}
    for key, request in fresh.items():
        parts = grader.prompt_for(request)
        made = backend.batch_request(parts, max_new_tokens=grader.max_new_tokens,
                                     rating_scale=grader.mode.rating_scale) if parts is not None else \
            GradeFailure("no prompt for this test point")
        if isinstance(made, GradeFailure):
            out.resent[key] = made.message  # cannot be sent at all: said, never a grade
            continue
        url, body = made
        by_url.setdefault(url, []).append((key, files.request_line(key, url, body)))
    for url, lines in by_url.items():
        jobs = state.write_requests(lines, url, settings.target, settings.max_requests)
        state.save()  # the files are known before anything is uploaded
        for job in jobs:
            if settings.target == "server":
                _guarded(backend, partial(files.submit, client, state, job))
                state.save()
            out.submitted.append(job)
            out.pending.update(dict.fromkeys(job.custom_ids, job.name))


def exchange_waiting(grader: Any, todo: Mapping[str, GradingRequest], cache_path: Path | None,
                     store: Callable[[Mapping[str, Grade]], object], *, say: Callable[[str], None] = print_notice,
                     sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic
                     ) -> Exchange:
    """:func:`exchange`, then, while pairs wait, look again after ``batch_poll`` seconds, doubled after each
    look up to :data:`~exam_harness.llm.batch.MAX_POLL_S`, until ``batch_wait`` seconds have passed (0: never
    wait), saying before each pause what the jobs are doing. Every look stores what it collected, so an
    interrupt loses nothing; what still waits at the end is the caller's to say (exit status 75)."""
    settings = batch_of(grader)
    assert settings is not None
    out = _said(exchange(grader, todo, cache_path, store), say)
    started = clock()
    pause = settings.poll
    while out.pending:
        left = settings.wait - (clock() - started)
        if left <= 0:
            break
        step = min(pause, left)
        say(progress_line(out, clock() - started, step, settings.wait))
        sleep(step)
        pause = min(pause * 2, MAX_POLL_S)
        rest = {key: request for key, request in todo.items() if key not in out.grades}
        out = out.then(_said(exchange(grader, rest, cache_path, store), say))
    return out


def _said(out: Exchange, say: Callable[[str], None]) -> Exchange:
    """``out``, its problems said (output lines naming no request, requests answered twice differently)."""
    for problem in out.problems[:5]:
        say(f"batch output: {problem}")
    if len(out.problems) > 5:
        say(f"batch output: and {len(out.problems) - 5} more such lines")
    return out


def progress_line(out: Exchange, waited: float, pause: float, bound: float) -> str:
    """One look at waiting jobs: their states and counts, the pairs waiting, and when the next look is."""
    jobs = "; ".join(out.jobs[:3]) + (f"; and {len(out.jobs) - 3} more jobs" if len(out.jobs) > 3 else "")
    return (f"batch: {len(out.pending)} pairs waiting, {len(out.grades)} collected ({jobs}); next look in "
            f"{_span(pause)}, waited {_span(waited)} of at most {_span(bound)} (batch_wait; 0 stops at once)")


def _span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def describe(state: BatchState) -> list[str]:
    """One line per job: its file, target, status and progress (what ``grade --batch status`` prints)."""
    lines = []
    for job in state.jobs:
        if job.target == "vllm":
            where = f"run: vllm run_batch -i {state.request_path(job)} -o {state.output_path(job)} --model MODEL"
        else:
            where = f"batch {job.batch_id}" if job.batch_id else "no batch job yet: the next submit sends it"
        done = f", {job.completed} done, {job.failed} failed" if job.target == "server" else ""
        lines.append(f"{job.name}: {job.status}, {len(job.custom_ids)} requests{done} ({where})")
    return lines or ["no batch jobs waiting"]


def pending_message(out: Exchange, collect_hint: str) -> str:
    """What a session with pairs still waiting in batch jobs says before it stops."""
    jobs = len(set(out.pending.values()))
    return (f"{len(out.pending)} pairs are waiting in {jobs} batch job{'s' * (jobs != 1)} (state: {out.state}); "
            f"{len(out.grades)} grades were collected and stored. Once the jobs are done, {collect_hint}")
