"""Batch files and jobs in the OpenAI Batch format: for a provider's ``/v1/files`` + ``/v1/batches``
API, or for ``vllm run_batch`` on a team's own GPUs.

A request file holds one JSON object a line with the fields :data:`REQUEST_FIELDS`
(``custom_id``, ``method``, ``url``, ``body``: the request a synchronous call would send). An output
file holds one object a line with :data:`OUTPUT_FIELDS` (``id``, ``custom_id``, ``response``, ``error``),
the response with :data:`RESPONSE_FIELDS` (``status_code``, ``request_id``, ``body``). Both shapes are
those of OpenAI's Batch API, which vLLM's ``run_batch`` entry point reads and writes too.

What a grading pass has sent lives in one small JSON file beside the grade cache (:class:`BatchState`,
``<cache>.batch.json``, read as untrusted input: llm/batch_state.py): the jobs, their state and the custom
ids each carries, so that any machine holding the cache and that file can collect. Request files are kept
in ``<cache>.batch/``. Creating a job is idempotent (:func:`submit`: a tag in the job's metadata, found
again after a kill), and one job's answers are read as one set (:func:`read_outputs`: a request answered
twice differently is a failure naming it).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from exam_harness.config.options import GraderOption, boolean, choice, integer, number, optional
from exam_harness.core.errors import InfrastructureError
from exam_harness.io import limits
from exam_harness.io.textio import json_too_deep, open_binary
from exam_harness.llm.batch_state import STATUS, server_id
from exam_harness.llm.batch_state import BatchJob as BatchJob
from exam_harness.llm.batch_state import BatchState as BatchState
from exam_harness.llm.cost import Prices, with_batch_prices

REQUEST_FIELDS = ("custom_id", "method", "url", "body")
OUTPUT_FIELDS = ("id", "custom_id", "response", "error")
RESPONSE_FIELDS = ("status_code", "request_id", "body")
MAX_REQUESTS_PER_FILE = 50_000  # OpenAI's limit of one batch file
TAG_KEY: Final = "exam_harness_job"  # the metadata key of a job's tag (finding a job again after a kill)
# Finding a job or an upload again walks the server's listing, newest first (OpenAI's order), back to a day
# before the job was written (clocks differ) and over at most this many entries.
FIND_BACK_S: Final = 86_400.0
MAX_LISTED: Final = 10_000
DEFAULT_WAIT_S: Final = 86_400.0  # a job's completion window (24h): by then it is done or expired
DEFAULT_POLL_S: Final = 30.0
MAX_POLL_S: Final = 600.0  # the backoff's longest pause between two looks at the jobs

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
    GraderOption("batch_wait", DEFAULT_WAIT_S, "seconds a session (or grade) waits in one process for its batch "
                 "jobs, looking with backoff and saying their progress; 0: submit and stop at once with exit "
                 f"status 75 (default: {DEFAULT_WAIT_S:,.0f}, the jobs' 24h window)", number(0, 864_000)),
    GraderOption("batch_poll", DEFAULT_POLL_S, "seconds before the first look at waiting batch jobs, doubled "
                 f"after each up to {MAX_POLL_S:.0f} (default: {DEFAULT_POLL_S:.0f})",
                 number(0, MAX_POLL_S, open_low=True)),
)


@dataclass(frozen=True)
class BatchSettings:
    """What a grader's batch options ask for."""

    target: str = "server"
    max_requests: int = MAX_REQUESTS_PER_FILE
    prices: Prices | None = None
    wait: float = DEFAULT_WAIT_S  # seconds to wait for the jobs in one process (0: stop at once, exit 75)
    poll: float = DEFAULT_POLL_S  # seconds before the first look, doubled after each up to MAX_POLL_S


def batch_settings(values: Mapping[str, Any], prices: Prices | None) -> BatchSettings | None:
    """The settings of options read as :data:`BATCH_OPTIONS` declares them; None without ``batch=true``.
    Batch prices default to half the synchronous ones (OpenAI's Batch API discount; llm/cost.py)."""
    if not values["batch"]:
        return None
    priced = with_batch_prices(prices, values["batch_price_prompt"], values["batch_price_completion"])
    return BatchSettings(values["batch_target"], values["batch_max_requests"], priced.batch if priced else None,
                         values["batch_wait"], values["batch_poll"])


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


def read_outputs(texts: Iterable[tuple[str, str]]) -> tuple[dict[str, OutputLine], list[str]]:
    """The answers of one job's output and error files (``(source, text)`` pairs) by custom id, and what was
    wrong with lines: a line naming no custom id can only be said (its request is sent again); a custom id
    answered twice is one answer when both lines say the same, and a failure naming it when they differ
    (neither is taken: its request is sent again), never the last line winning in silence."""
    answers: dict[str, OutputLine] = {}
    first_seen: dict[str, str] = {}
    conflicts: set[str] = set()
    problems: list[str] = []
    for source, text in texts:
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            if json_too_deep(line.encode("utf-8", "surrogatepass"), limits.MAX_NESTING_DEPTH):  # json.loads recurses
                problems.append(f"{source}, line {lineno}: nested deeper than {limits.MAX_NESTING_DEPTH} levels")
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{source}, line {lineno}: not JSON ({exc.msg})")
                continue
            except ValueError:  # an integer of more digits than Python converts
                problems.append(f"{source}, line {lineno}: a number with more digits than can be read")
                continue
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str):
                problems.append(f"{source}, line {lineno}: no custom_id")
                continue
            answer, where = _answer_of(custom_id, item), f"{source}, line {lineno}"
            seen = answers.get(custom_id)
            if seen is None:
                answers[custom_id], first_seen[custom_id] = answer, where
            elif custom_id not in conflicts and seen != answer:
                conflicts.add(custom_id)
                why = (f"custom_id {custom_id} is answered twice, differently ({first_seen[custom_id]} and {where}): "
                       "neither answer is taken")
                answers[custom_id] = OutputLine(custom_id, error=why)
                problems.append(why)
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


# -- a server's Files and Batches API ------------------------------------------------------------------
def upload_name(job: BatchJob) -> str:
    """The file name a job's request file is uploaded under: its tag in it, to be found again."""
    return f"exam-harness-{job.tag}.requests.jsonl"


def submit(client: Any, state: BatchState, job: BatchJob) -> None:
    """Upload ``job``'s request file (``/v1/files``, purpose batch) and create its job (``/v1/batches``), once.

    Idempotent across kills: the job is marked ``submitting`` in the state file before anything is sent, its
    tag goes into the upload's file name and the job's metadata, and a job found ``submitting`` (a process
    died while sending it) is first looked for on the server: the job it made is taken, else its upload, and
    only what the server lacks is sent. So a rerun never pays for a job twice."""
    if job.status == "submitting":
        found = find_job(client, job)
        if found is not None:
            _take(job, found, "batch")
            return
        if job.input_file_id is None:
            job.input_file_id = find_upload(client, job)
    job.status = "submitting"
    state.save()  # from here on a kill leaves a job to find again, not one to send again
    if job.input_file_id is None:
        uploaded = client.files.create(file=(upload_name(job), state.request_bytes(job)), purpose="batch")
        job.input_file_id = server_id(uploaded.id, "file id", "/v1/files")
        state.save()
    created = client.batches.create(input_file_id=job.input_file_id, endpoint=job.url, completion_window="24h",
                                    metadata={TAG_KEY: job.tag})
    _take(job, created, "batch")


def _listed(page: Any, job: BatchJob) -> Iterator[Any]:
    """The entries of a server's listing (auto-paginated) back to :data:`FIND_BACK_S` before ``job`` was
    written, at most :data:`MAX_LISTED`."""
    for seen, item in enumerate(page):
        if seen >= MAX_LISTED:
            return
        created = getattr(item, "created_at", None)
        if isinstance(created, (int, float)) and created < job.created - FIND_BACK_S:
            return
        yield item


def find_job(client: Any, job: BatchJob) -> Any | None:
    """The server's batch whose metadata carries ``job``'s tag, if a killed process created it."""
    try:
        for batch in _listed(client.batches.list(limit=100), job):
            metadata = getattr(batch, "metadata", None)
            if isinstance(metadata, Mapping) and metadata.get(TAG_KEY) == job.tag:
                return batch
    except Exception as exc:
        _unlisted(exc, "/v1/batches", job)
    return None


def find_upload(client: Any, job: BatchJob) -> str | None:
    """The id of ``job``'s request file on the server, if a killed process uploaded it."""
    try:
        for uploaded in _listed(client.files.list(purpose="batch", limit=100, order="desc"), job):
            if getattr(uploaded, "filename", None) == upload_name(job):
                return server_id(uploaded.id, "file id", "/v1/files")
    except Exception as exc:
        _unlisted(exc, "/v1/files", job)
    return None


def _unlisted(exc: Exception, where: str, job: BatchJob) -> None:
    """A server that has no listing (404, 405, 501) cannot say what a killed process sent: said, and the job is
    sent as if nothing was (docs/batch.md); any other failure of the listing is the caller's to report."""
    status = getattr(exc, "status_code", None)
    if status not in (404, 405, 501):
        raise exc
    logging.getLogger("exam_harness.batch").warning(
        "%s", f"batch job {job.name}: the server lists nothing at {where} (HTTP {status}), so what a killed "
        "process sent cannot be found again; it is sent again")


def _take(job: BatchJob, batch: Any, where: str) -> None:
    """``job``'s fields from the server's batch object, each checked before it is kept."""
    job.batch_id = server_id(batch.id, "batch id", where) or job.batch_id
    job.input_file_id = server_id(getattr(batch, "input_file_id", None), "file id", where) or job.input_file_id
    status = str(batch.status or "validating")
    if re.fullmatch(STATUS, status) is None:
        raise InfrastructureError(f"{where}: the server returned a job status that is not a word "
                                  f"({status[:40]!a}); nothing was kept")
    job.status = status
    job.output_file_id = server_id(getattr(batch, "output_file_id", None), "file id", where)
    job.error_file_id = server_id(getattr(batch, "error_file_id", None), "file id", where)
    counts = getattr(batch, "request_counts", None)
    if counts is not None:
        job.completed, job.failed = (max(0, int(getattr(counts, name, 0) or 0)) for name in ("completed", "failed"))


def refresh(client: Any, state: BatchState, job: BatchJob) -> None:
    """``job``'s status as the server (or, for vllm, the output file's presence) says it now."""
    if job.target == "vllm":
        if job.status == "written" and state.output_path(job).exists():
            job.status = "completed"
        return
    if job.batch_id is None:
        return
    # a finished job too: its output file ids come with it
    _take(job, client.batches.retrieve(job.batch_id), f"/v1/batches/{job.batch_id}")


def outputs(client: Any, state: BatchState, job: BatchJob) -> list[tuple[str, str]]:
    """``(source, text)`` of ``job``'s output and error files (none for a job that made none)."""
    if job.target == "vllm":
        path = state.output_path(job)
        if not path.exists():
            return []
        with open_binary(path) as fh:  # the one opening of inputs: a regular file only (a FIFO would block)
            return [(str(path), fh.read().decode("utf-8"))]
    return [(f"batch {job.batch_id} file {file_id}", client.files.content(file_id).text)
            for file_id in (job.output_file_id, job.error_file_id) if file_id]
