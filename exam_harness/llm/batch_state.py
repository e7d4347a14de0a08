"""What a grading pass has sent as batch jobs: one small JSON file beside the grade cache
(``<cache>.batch.json``), request and output files in ``<cache>.batch/`` (docs/batch.md).

The file travels between machines (a CI artifact, a pull request), so it is read as untrusted input:
every job must be what this harness writes (:class:`BatchJob`'s declared fields and nothing else), and
anything else refuses the whole file (an :class:`~exam_harness.errors.InputError` naming the file and
the field, exit status 4) before anything is read, uploaded or fetched. In particular a job's ``name``
is a bare request file name of the form :data:`JOB_NAME` (a file inside the batch folder, never a path:
a tampered name such as ``/home/u/.ssh/id_rsa`` would otherwise be uploaded to the server), its custom
ids are cache keys, its server ids are plain tokens (they go into request URLs), and the request file
read for an upload is a regular file in the batch folder (not a link).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, field
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass

from exam_harness.core.errors import InfrastructureError, InputError
from exam_harness.io.textio import atomic_write_text

STATE_VERSION: Final = 1
# The name of a request file the harness writes: a timestamp and the job's number
JOB_NAME: Final = r"^\d{8}T\d{6}-\d{4}\.requests\.jsonl$"
# An id a server gave (a file or a batch): it becomes part of a request URL, so a plain token
SERVER_ID: Final = r"^[A-Za-z0-9_-][A-Za-z0-9_.:=+-]{0,199}$"
CACHE_KEY: Final = r"^[0-9a-f]{64}$"  # custom ids are cache keys (cache.cache_key)
TAG: Final = r"^[0-9a-f]{16,64}$"  # the job's own tag, sent as its metadata (llm/batch.py: finding it again)
STATUS: Final = r"^[a-z_]{1,40}$"  # a provider's job status (OpenAI's, or one it adds), or ours
# The job states in which a job is not done yet: a provider's (OpenAI's Batch API), and ours: "written" (a file
# for ``vllm run_batch``, or not sent yet) and "submitting" (being sent: it may exist on the server, so it is
# found again before a new one is made). Any other (completed, failed, expired, cancelled) is finished.
LIVE: Final = frozenset({"written", "submitting", "validating", "in_progress", "finalizing", "cancelling"})
MAX_STATE_BYTES: Final = 256 * 1024 * 1024  # the state of millions of pending requests fits far below this

_ServerId = Annotated[str, Field(pattern=SERVER_ID)]


@dataclass(config=ConfigDict(extra="forbid", strict=True))
class BatchJob:
    """One request file and, for a server, the job made of it. Validated on construction (reading the state
    file builds each job from its JSON); the fields change as the job moves on, checked where they arrive."""

    name: Annotated[str, Field(pattern=JOB_NAME)]  # the request file's name in the batch folder
    target: Literal["server", "vllm"]
    url: Literal["/v1/chat/completions", "/v1/completions"]
    custom_ids: list[Annotated[str, Field(pattern=CACHE_KEY)]]
    status: Annotated[str, Field(pattern=STATUS)] = "written"
    created: Annotated[float, Field(ge=0, allow_inf_nan=False)] = field(default_factory=time.time)
    input_file_id: _ServerId | None = None
    batch_id: _ServerId | None = None
    output_file_id: _ServerId | None = None
    error_file_id: _ServerId | None = None
    completed: Annotated[int, Field(ge=0)] = 0  # requests the server says are done / failed (its request_counts)
    failed: Annotated[int, Field(ge=0)] = 0
    # sent as the job's metadata and in the uploaded file's name, so that a rerun finds a job (or an upload) a
    # killed process made before the state file could say so (a job of an older state file gets a new one)
    tag: Annotated[str, Field(pattern=TAG)] = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def live(self) -> bool:
        return self.status in LIVE


def server_id(value: object, what: str, where: str) -> str | None:
    """A file or batch id a server returned, checked before it is kept (it goes into request URLs and the state
    file); an id that is no plain token is the server's fault: an InfrastructureError, nothing is kept."""
    if value is None:
        return None
    if not isinstance(value, str) or re.fullmatch(SERVER_ID, value) is None:
        raise InfrastructureError(f"{where}: the server returned a {what} that is not a plain id "
                                  f"({str(value)[:80]!a}); nothing was kept")
    return value


class BatchState:
    """The jobs of one grade cache, in ``<cache>.batch.json``; request and output files in ``<cache>.batch/``."""

    def __init__(self, cache_path: Path) -> None:
        self.path = cache_path.with_name(cache_path.name + ".batch.json")
        self.folder = cache_path.with_name(cache_path.name + ".batch")
        self.jobs: list[BatchJob] = []
        if self.path.exists():
            self.jobs = self._read()

    def _refuse(self, why: str, field_name: str | None = None, value: object = None,
                expected: str | None = None) -> InputError:
        return InputError(f"not a batch state file this harness wrote: {why}; move it away to start again (its "
                          "jobs are then not collected)", path=self.path, field=field_name, value=value,
                          expected=expected)

    def _read(self) -> list[BatchJob]:
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                raise self._refuse("it is not a regular file")
            with open(self.path, "rb") as fh:
                data = fh.read(MAX_STATE_BYTES + 1)
            if len(data) > MAX_STATE_BYTES:
                raise self._refuse(f"it is larger than {MAX_STATE_BYTES // 2**20} MiB")
            document = json.loads(data.decode("utf-8"))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise self._refuse(f"it cannot be read as JSON ({exc})") from None
        if not isinstance(document, dict) or set(document) != {"version", "jobs"}:
            raise self._refuse("it must be an object with the keys version and jobs", None, None,
                               '{"version": 1, "jobs": [...]}')
        if document["version"] != STATE_VERSION or isinstance(document["version"], bool):
            raise self._refuse(f"version {document['version']!r}, expected {STATE_VERSION}", "version",
                               document["version"], str(STATE_VERSION))
        if not isinstance(document["jobs"], list):
            raise self._refuse("jobs must be a list", "jobs", type(document["jobs"]).__name__, "a list of jobs")
        jobs = []
        for index, job in enumerate(document["jobs"]):
            if not isinstance(job, dict):
                raise self._refuse("a job must be an object", f"jobs[{index}]", type(job).__name__)
            try:
                jobs.append(BatchJob(**job))
            except (ValidationError, TypeError) as exc:
                raise self._job_error(exc, index, job) from None
        names = [job.name for job in jobs]
        if len(set(names)) != len(names):
            raise self._refuse("two jobs name one request file", "jobs", None, "each request file once")
        return jobs

    def _job_error(self, exc: ValidationError | TypeError, index: int, job: dict[str, object]) -> InputError:
        if isinstance(exc, TypeError):  # a field missing or unknown
            return self._refuse(str(exc).split(".", 1)[-1].strip(), f"jobs[{index}]")
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        expected = {"name": "a request file name the harness writes (20261127T120000-0001.requests.jsonl), a bare "
                            "name inside the batch folder"}.get(str(first["loc"][0]) if first["loc"] else "")
        return self._refuse(first["msg"], f"jobs[{index}].{where}", first.get("input"), expected)

    def save(self) -> None:
        document = {"version": STATE_VERSION, "jobs": [asdict(job) for job in self.jobs]}
        atomic_write_text(self.path, json.dumps(document, indent=1) + "\n")

    def pending_ids(self) -> dict[str, BatchJob]:
        """Custom id -> the job carrying it, for every job not collected yet."""
        return {cid: job for job in self.jobs for cid in job.custom_ids}

    def request_path(self, job: BatchJob) -> Path:
        return self.folder / job.name

    def output_path(self, job: BatchJob) -> Path:
        return self.folder / job.name.replace(".requests.jsonl", ".output.jsonl")

    def request_bytes(self, job: BatchJob) -> bytes:
        """The request file of ``job`` as written: a regular file in the batch folder, not a link to one elsewhere."""
        path = self.request_path(job)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise InputError(f"the request file of a batch job cannot be read ({exc.strerror or exc}); a link is "
                             "never followed", path=path) from None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise InputError("the request file of a batch job is not a regular file", path=path)
            return fh.read()

    def write_requests(self, lines: Iterable[tuple[str, str]], url: str, target: str, max_requests: int
                       ) -> list[BatchJob]:
        """Request files of ``(custom_id, line)`` pairs, ``max_requests`` each, written and recorded."""
        made: list[BatchJob] = []
        for chunk in _chunks(list(lines), max_requests):
            name = self._new_name()
            atomic_write_text(self.folder / name, "".join(line + "\n" for _, line in chunk))
            job = BatchJob(name, target, url, [cid for cid, _ in chunk])  # type: ignore[arg-type]
            self.jobs.append(job)
            made.append(job)
        return made


    def _new_name(self) -> str:
        """A request file name no job of the state holds and no file in the folder has (a job collected in the
        same second as the next one is written left its file behind)."""
        used = {job.name for job in self.jobs}
        for number in range(len(self.jobs) + 1, len(self.jobs) + 10_000):
            name = f"{time.strftime('%Y%m%dT%H%M%S')}-{number % 10_000:04d}.requests.jsonl"
            if name not in used and not (self.folder / name).exists():
                return name
        raise InputError("no free request file name in the batch folder this second", path=self.folder)


def _chunks(items: list[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
