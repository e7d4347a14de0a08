"""Batch files and jobs in the OpenAI Batch format: for a provider's ``/v1/files`` + ``/v1/batches``
API, or for ``vllm run_batch`` on a team's own GPUs.

A request file holds one JSON object a line with the fields :data:`REQUEST_FIELDS`
(``custom_id``, ``method``, ``url``, ``body``: the request a synchronous call would send). An output
file holds one object a line with :data:`OUTPUT_FIELDS` (``id``, ``custom_id``, ``response``, ``error``),
the response with :data:`RESPONSE_FIELDS` (``status_code``, ``request_id``, ``body``). Both shapes are
those of OpenAI's Batch API, which vLLM's ``run_batch`` entry point reads and writes too.

What a grading pass has sent lives in one small JSON file beside the grade cache (:class:`BatchState`,
``<cache>.batch.json``): the jobs, their state and the custom ids each carries, so that any machine
holding the cache and that file can collect. Request files are kept in ``<cache>.batch/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from exam_harness.config.options import GraderOption, boolean, choice, integer, number, optional
from exam_harness.core.errors import InputError
from exam_harness.io.textio import atomic_write_text
from exam_harness.llm.cost import Prices

REQUEST_FIELDS = ("custom_id", "method", "url", "body")
OUTPUT_FIELDS = ("id", "custom_id", "response", "error")
RESPONSE_FIELDS = ("status_code", "request_id", "body")
# A provider's job states (OpenAI's Batch API); "written" is ours: a file for ``vllm run_batch``.
LIVE = frozenset({"written", "validating", "in_progress", "finalizing", "cancelling"})
FINISHED = frozenset({"completed", "failed", "expired", "cancelled"})
STATE_VERSION = 1
MAX_REQUESTS_PER_FILE = 50_000  # OpenAI's limit of one batch file

BATCH_OPTIONS: tuple[GraderOption, ...] = (
    GraderOption("batch", False, "grade through batch jobs instead of calls: the pairs the cache lacks are sent "
                 "as batch files, collected later (docs/batch.md; default: false)", boolean),
    GraderOption("batch_target", "server", "server (upload to /v1/files and create /v1/batches jobs) or vllm "
                 "(write files for vllm run_batch; default: server)", choice("server", "vllm")),
    GraderOption("batch_max_requests", MAX_REQUESTS_PER_FILE, "requests per batch file at most (default: "
                 f"{MAX_REQUESTS_PER_FILE:,})", integer(1)),
    GraderOption("batch_price_prompt", None, "price of 1,000 prompt tokens in a batch (default: half of "
                 "price_prompt)", optional(number(0))),
    GraderOption("batch_price_completion", None, "price of 1,000 completion tokens in a batch (default: half of "
                 "price_completion)", optional(number(0))),
)


@dataclass(frozen=True)
class BatchSettings:
    """What a grader's batch options ask for."""

    target: str = "server"
    max_requests: int = MAX_REQUESTS_PER_FILE
    prices: Prices | None = None


def batch_settings(values: Mapping[str, Any], prices: Prices | None) -> BatchSettings | None:
    """The settings of options read as :data:`BATCH_OPTIONS` declares them; None without ``batch=true``.
    Batch prices default to half the synchronous ones (OpenAI's Batch API discount)."""
    if not values["batch"]:
        return None
    prompt, completion = values["batch_price_prompt"], values["batch_price_completion"]
    batch_prices = None
    if prices is not None or prompt is not None or completion is not None:
        base = prices or Prices()
        batch_prices = Prices(base.prompt / 2 if prompt is None else prompt,
                              base.completion / 2 if completion is None else completion)
    return BatchSettings(values["batch_target"], values["batch_max_requests"], batch_prices)


# -- files -------------------------------------------------------------------------------------------
def request_line(custom_id: str, url: str, body: Mapping[str, Any]) -> str:
    """One line of a request file."""
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body},
                      ensure_ascii=False, sort_keys=False)


@dataclass
class OutputLine:
    """One answer of an output file: the body of a 2xx response, else why there is none."""

    custom_id: str
    body: Any = None
    error: str | None = None


def read_output(text: str, source: str) -> tuple[dict[str, OutputLine], list[str]]:
    """The answers of an output (or error) file by custom id, and what was wrong with lines that name no
    custom id (they can only be said: their requests are sent again)."""
    answers: dict[str, OutputLine] = {}
    problems: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{source}, line {lineno}: not JSON ({exc.msg})")
            continue
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(custom_id, str):
            problems.append(f"{source}, line {lineno}: no custom_id")
            continue
        answers[custom_id] = _answer_of(custom_id, item)
    return answers, problems


def _answer_of(custom_id: str, item: Mapping[str, Any]) -> OutputLine:
    error = item.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        return OutputLine(custom_id, error=str(message or error)[:300])
    response = item.get("response")
    if not isinstance(response, dict):
        return OutputLine(custom_id, error="no response")
    status = response.get("status_code")
    if status != 200:
        return OutputLine(custom_id, error=f"HTTP {status}")
    return OutputLine(custom_id, body=response.get("body"))


# -- state -------------------------------------------------------------------------------------------
@dataclass
class BatchJob:
    """One request file and, for a server, the job made of it."""

    name: str  # the request file's name in the batch folder
    target: str  # server or vllm
    url: str
    custom_ids: list[str]
    status: str = "written"
    created: float = field(default_factory=time.time)
    input_file_id: str | None = None
    batch_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0  # requests the server says are done / failed (its request_counts)
    failed: int = 0

    @property
    def live(self) -> bool:
        return self.status in LIVE


class BatchState:
    """The jobs of one grade cache, in ``<cache>.batch.json``; request and output files in ``<cache>.batch/``."""

    def __init__(self, cache_path: Path) -> None:
        self.path = cache_path.with_name(cache_path.name + ".batch.json")
        self.folder = cache_path.with_name(cache_path.name + ".batch")
        self.jobs: list[BatchJob] = []
        if self.path.exists():
            self.jobs = self._read()

    def _read(self) -> list[BatchJob]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            if document.get("version") != STATE_VERSION:
                raise ValueError(f"version {document.get('version')!r}, expected {STATE_VERSION}")
            return [BatchJob(**job) for job in document["jobs"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{self.path}: not a batch state file of this harness ({exc}); move it away to "
                             "start again (its jobs are then not collected)", field="jobs") from None

    def save(self) -> None:
        document = {"version": STATE_VERSION, "jobs": [asdict(job) for job in self.jobs]}
        atomic_write_text(self.path, json.dumps(document, indent=1) + "\n")

    def pending_ids(self) -> dict[str, BatchJob]:
        """Custom id -> the job carrying it, for every job not collected yet."""
        return {cid: job for job in self.jobs for cid in job.custom_ids}

    def output_path(self, job: BatchJob) -> Path:
        return self.folder / job.name.replace(".requests.jsonl", ".output.jsonl")

    def write_requests(self, lines: Iterable[tuple[str, str]], url: str, target: str, max_requests: int
                       ) -> list[BatchJob]:
        """Request files of ``(custom_id, line)`` pairs, ``max_requests`` each, written and recorded."""
        made: list[BatchJob] = []
        for chunk in _chunks(list(lines), max_requests):
            name = f"{time.strftime('%Y%m%dT%H%M%S')}-{len(self.jobs) + 1:04d}.requests.jsonl"
            atomic_write_text(self.folder / name, "".join(line + "\n" for _, line in chunk))
            job = BatchJob(name, target, url, [cid for cid, _ in chunk])
            self.jobs.append(job)
            made.append(job)
        return made


def _chunks(items: list[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- a server's Files and Batches API ------------------------------------------------------------------
def submit(client: Any, state: BatchState, job: BatchJob) -> None:
    """Upload ``job``'s request file (``/v1/files``, purpose batch) and create its job (``/v1/batches``)."""
    with open(state.folder / job.name, "rb") as fh:
        uploaded = client.files.create(file=(job.name, fh), purpose="batch")
    job.input_file_id = str(uploaded.id)
    created = client.batches.create(input_file_id=job.input_file_id, endpoint=job.url, completion_window="24h")
    job.batch_id = str(created.id)
    job.status = str(created.status or "validating")


def refresh(client: Any, state: BatchState, job: BatchJob) -> None:
    """``job``'s status as the server (or, for vllm, the output file's presence) says it now."""
    if job.target == "vllm":
        if job.status == "written" and state.output_path(job).exists():
            job.status = "completed"
        return
    if job.batch_id is None:
        return
    found = client.batches.retrieve(job.batch_id)  # a finished job too: its output file ids come with it
    job.status = str(found.status)
    job.output_file_id = found.output_file_id
    job.error_file_id = found.error_file_id
    counts = found.request_counts
    if counts is not None:
        job.completed, job.failed = int(counts.completed or 0), int(counts.failed or 0)


def outputs(client: Any, state: BatchState, job: BatchJob) -> list[tuple[str, str]]:
    """``(source, text)`` of ``job``'s output and error files (none for a job that made none)."""
    if job.target == "vllm":
        path = state.output_path(job)
        return [(str(path), path.read_text(encoding="utf-8"))] if path.exists() else []
    return [(f"batch {job.batch_id} file {file_id}", client.files.content(file_id).text)
            for file_id in (job.output_file_id, job.error_file_id) if file_id]

