"""The fake OpenAI-compatible server (tests/fake_openai_server.py) with the Files and Batches API.

Besides chat and text completions it serves ``POST /v1/files`` (a multipart upload), ``GET /v1/files``
(the listing, newest first, ``purpose``, ``limit`` and ``after`` as OpenAI's), ``GET
/v1/files/{id}/content``, ``POST /v1/batches`` (with ``metadata``), ``GET /v1/batches`` (the listing,
newest first, paginated) and ``GET /v1/batches/{id}``. A job answers each line of its input file with
the same responder as a synchronous call. What the next jobs do is scripted
(:meth:`FakeBatchServer.script`): ``completed`` (answered at once), ``in_progress`` (until
:meth:`finish`, or until it has been looked at ``after`` times), ``failed`` (no output), ``expired``
(only the first ``partial`` lines answered, the rest in the error file). ``malformed`` answers of custom
ids can be scripted too (a body without choices, a line that is not JSON, an answer off the scale), and
``duplicated`` ones (the line written twice: the same answer, or a second one with another grade).
:meth:`stall` makes the next upload or job creation happen on the server and then hold its answer, so
that a test can kill the client at that moment.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import parse_qs, urlsplit

from tests.fake_openai_server import FakeOpenAIServer, _Handler, _prompt_of


@dataclass
class FakeJob:
    id: str
    input_file_id: str
    endpoint: str
    status: str
    partial: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    metadata: dict[str, str] | None = None
    created_at: int = 0
    finish_after: int | None = None  # in progress until looked at this many times
    looks: int = 0


@dataclass
class JobScript:
    status: str = "completed"
    partial: int = 0
    after: int | None = None


@dataclass
class StoredFile:
    id: str
    text: str
    filename: str
    created_at: int


@dataclass
class BatchRecord:
    uploads: list[str] = field(default_factory=list)  # the uploaded files' text, in order
    created: list[str] = field(default_factory=list)  # job ids


class FakeBatchServer(FakeOpenAIServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.files: dict[str, str] = {}
        self.stored: dict[str, StoredFile] = {}  # uploads (purpose batch), by id
        self.jobs: dict[str, FakeJob] = {}
        self.scripts: list[JobScript] = []
        # custom id -> how its answer line is spoiled: "no_choices", "not_json", "off_scale"
        self.malformed: dict[str, str] = {}
        # custom id -> its answer line written twice: "same" (equal lines) or "differing" (another grade)
        self.duplicated: dict[str, str] = {}
        self.record = BatchRecord()
        self._batch_lock = threading.Lock()
        self._stall: str | None = None
        self.stalled = threading.Event()  # set once the stalled request happened on the server
        self.release = threading.Event()  # the stalled request answers once this is set
        self.listings = 0  # GET /v1/batches and GET /v1/files listings
        self.lists = True  # False: a server without the listings (they answer 404)

    def script(self, *statuses: str, partial: int = 0, after: int | None = None) -> None:
        """What the next jobs do, in order (default: completed); ``after``: an ``in_progress`` job completes
        when it has been looked at that many times."""
        self.scripts.extend(JobScript(s, partial, after) for s in statuses)

    def stall(self, what: Literal["upload", "create"]) -> None:
        """The next upload (or job creation) is done on the server, then its answer waits for :attr:`release`."""
        self._stall = what
        self.stalled.clear()
        self.release.clear()

    def _stall_here(self, what: str) -> None:
        if self._stall == what:
            self._stall = None
            self.stalled.set()
            self.release.wait(60)

    def finish(self) -> None:
        """Every job in progress completes."""
        with self._batch_lock:
            for job in self.jobs.values():
                if job.status == "in_progress":
                    self._complete(job, len(self._lines(job)))

    def start(self) -> Self:
        server: FakeBatchServer = self

        class Handler(_BatchHandler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-batch", daemon=True)
        self._thread.start()
        return self

    # -- jobs -------------------------------------------------------------------------------
    def _lines(self, job: FakeJob) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.files[job.input_file_id].splitlines() if line.strip()]

    def create_job(self, input_file_id: str, endpoint: str, metadata: dict[str, str] | None = None) -> FakeJob:
        with self._batch_lock:
            script = self.scripts.pop(0) if self.scripts else JobScript()
            job = FakeJob(f"batch_{len(self.jobs) + 1}", input_file_id, endpoint, "in_progress", script.partial,
                          metadata=metadata, created_at=int(time.time()), finish_after=script.after)
            self.jobs[job.id] = job
            self.record.created.append(job.id)
            job.total = len(self._lines(job))
            if script.status == "completed":
                self._complete(job, job.total)
            elif script.status == "failed":
                job.status = "failed"
            elif script.status == "expired":
                self._complete(job, script.partial)
                job.status = "expired"
            return job

    def _complete(self, job: FakeJob, answered: int) -> None:
        out, errors = [], []
        for number, line in enumerate(self._lines(job)):
            cid = line["custom_id"]
            if number >= answered:
                errors.append(json.dumps({"id": f"req_{number}", "custom_id": cid, "response": None,
                                          "error": {"code": "batch_expired", "message": "not done in time"}}))
                continue
            body = self.answer_body(line["url"], line["body"], _prompt_of(line["url"], line["body"]), None)
            spoil = self.malformed.get(cid)
            if spoil == "not_json":
                out.append("{\"custom_id\": " + json.dumps(cid) + ", \"response\": {")
                continue
            if spoil == "no_choices":
                body["choices"] = []
            elif spoil == "off_scale":
                body["choices"][0]["message"]["content"] = "9"
            out.append(json.dumps({"id": f"req_{number}", "custom_id": cid,
                                   "response": {"status_code": 200, "request_id": f"r{number}", "body": body},
                                   "error": None}))
            twice = self.duplicated.get(cid)
            if twice is not None:  # the line again: equal but for its own id, or with another grade
                again = json.loads(json.dumps(body))
                if twice == "differing":
                    grade = again["choices"][0]["message"]["content"]
                    again["choices"][0]["message"]["content"] = "0" if grade != "0" else "5"
                out.append(json.dumps({"id": f"req_{number}_again", "custom_id": cid,
                                       "response": {"status_code": 200, "request_id": f"r{number}", "body": again},
                                       "error": None}))
        job.output_file_id = self._store("\n".join(out) + "\n") if out else None
        job.error_file_id = self._store("\n".join(errors) + "\n") if errors else None
        job.completed, job.failed = answered, job.total - answered
        job.status = "completed"

    def _store(self, text: str) -> str:
        file_id = f"file_{len(self.files) + 1}"
        self.files[file_id] = text
        return file_id

    def looked_at(self, job: FakeJob) -> FakeJob:
        """``job`` as a retrieve finds it: one more look, after which a job scripted to finish does."""
        with self._batch_lock:
            job.looks += 1
            if job.status == "in_progress" and job.finish_after is not None and job.looks >= job.finish_after:
                self._complete(job, len(self._lines(job)))
        return job

    def job_object(self, job: FakeJob) -> dict[str, Any]:
        return {"id": job.id, "object": "batch", "endpoint": job.endpoint, "input_file_id": job.input_file_id,
                "completion_window": "24h", "status": job.status, "created_at": job.created_at,
                "output_file_id": job.output_file_id, "error_file_id": job.error_file_id, "metadata": job.metadata,
                "request_counts": {"total": job.total, "completed": job.completed, "failed": job.failed}}

    def file_object(self, stored: StoredFile) -> dict[str, Any]:
        return {"id": stored.id, "object": "file", "bytes": len(stored.text.encode()), "created_at": stored.created_at,
                "filename": stored.filename, "purpose": "batch", "status": "processed"}


def _page(items: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
    """A cursor page of ``items`` (newest first) as OpenAI's listings give it: ``limit`` and ``after``."""
    limit = int(query.get("limit", ["20"])[0])
    after = query.get("after", [None])[0]
    start = next((i + 1 for i, item in enumerate(items) if item["id"] == after), 0) if after else 0
    data = items[start : start + limit]
    return {"object": "list", "data": data, "has_more": start + limit < len(items),
            "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}


def _multipart_file(content_type: str, data: bytes) -> tuple[str, str]:
    """The ``file`` part of a multipart/form-data body: (its file name, its text)."""
    boundary = content_type.split("boundary=", 1)[1].strip().strip('"').encode()
    for part in data.split(b"--" + boundary):
        head, _, rest = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            name = head.split(b'filename="', 1)[1].split(b'"', 1)[0].decode() if b'filename="' in head else ""
            return name, rest.rsplit(b"\r\n", 1)[0].decode("utf-8")
    raise ValueError("no file part")


class _BatchHandler(_Handler):
    owner: FakeBatchServer

    def do_GET(self) -> None:
        server = self.owner
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        parts = url.path.strip("/").split("/")
        if parts in (["v1", "batches"], ["v1", "files"]) and not server.lists:
            self._send(404, {"error": {"message": f"no route {url.path}"}})
        elif parts == ["v1", "batches"]:
            server.listings += 1
            jobs = sorted(server.jobs.values(), key=lambda j: int(j.id.split("_")[1]), reverse=True)
            self._send(200, _page([server.job_object(job) for job in jobs], query))
        elif parts == ["v1", "files"]:
            server.listings += 1
            stored = sorted(server.stored.values(), key=lambda f: int(f.id.split("_")[1]), reverse=True)
            self._send(200, _page([server.file_object(f) for f in stored], query))
        elif parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in server.jobs:
            self._send(200, server.job_object(server.looked_at(server.jobs[parts[2]])))
        elif parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content" and parts[2] in server.files:
            self._send_raw(200, server.files[parts[2]].encode(), "application/octet-stream")
        else:
            super().do_GET()

    def do_POST(self) -> None:
        server = self.owner
        if self.path == "/v1/files":
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            filename, text = _multipart_file(self.headers.get("Content-Type", ""), data)
            server.record.uploads.append(text)
            file_id = server._store(text)
            server.stored[file_id] = stored = StoredFile(file_id, text, filename, int(time.time()))
            server._stall_here("upload")
            self._send(200, server.file_object(stored))
        elif self.path == "/v1/batches":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            job = server.create_job(body["input_file_id"], body["endpoint"], body.get("metadata"))
            server._stall_here("create")
            self._send(200, server.job_object(job))
        else:
            super().do_POST()
