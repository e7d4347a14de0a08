"""The fake OpenAI-compatible server (tests/fake_openai_server.py) with the Files and Batches API.

Besides chat and text completions it serves ``POST /v1/files`` (a multipart upload), ``GET
/v1/files/{id}/content``, ``POST /v1/batches`` and ``GET /v1/batches/{id}``. A job answers each line
of its input file with the same responder as a synchronous call. What the next jobs do is scripted
(:meth:`FakeBatchServer.script`): ``completed`` (answered at once), ``in_progress`` (until
:meth:`finish`), ``failed`` (no output), ``expired`` (only the first ``partial`` lines answered, the rest
in the error file). ``malformed`` answers of custom ids can be scripted too (a body without choices,
a line that is not JSON, an answer off the scale).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Self

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


@dataclass
class JobScript:
    status: str = "completed"
    partial: int = 0


@dataclass
class BatchRecord:
    uploads: list[str] = field(default_factory=list)  # the uploaded files' text, in order
    created: list[str] = field(default_factory=list)  # job ids


class FakeBatchServer(FakeOpenAIServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.files: dict[str, str] = {}
        self.jobs: dict[str, FakeJob] = {}
        self.scripts: list[JobScript] = []
        # custom id -> how its answer line is spoiled: "no_choices", "not_json", "off_scale"
        self.malformed: dict[str, str] = {}
        self.record = BatchRecord()
        self._batch_lock = threading.Lock()

    def script(self, *statuses: str, partial: int = 0) -> None:
        """What the next jobs do, in order (default: completed)."""
        self.scripts.extend(JobScript(s, partial) for s in statuses)

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

    def create_job(self, input_file_id: str, endpoint: str) -> FakeJob:
        with self._batch_lock:
            script = self.scripts.pop(0) if self.scripts else JobScript()
            job = FakeJob(f"batch_{len(self.jobs) + 1}", input_file_id, endpoint, "in_progress", script.partial)
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
        job.output_file_id = self._store("\n".join(out) + "\n") if out else None
        job.error_file_id = self._store("\n".join(errors) + "\n") if errors else None
        job.completed, job.failed = answered, job.total - answered
        job.status = "completed"

    def _store(self, text: str) -> str:
        file_id = f"file_{len(self.files) + 1}"
        self.files[file_id] = text
        return file_id

    def job_object(self, job: FakeJob) -> dict[str, Any]:
        return {"id": job.id, "object": "batch", "endpoint": job.endpoint, "input_file_id": job.input_file_id,
                "completion_window": "24h", "status": job.status, "created_at": 0,
                "output_file_id": job.output_file_id, "error_file_id": job.error_file_id,
                "request_counts": {"total": job.total, "completed": job.completed, "failed": job.failed}}


def _multipart_file(content_type: str, data: bytes) -> str:
    """The ``file`` part of a multipart/form-data body."""
    boundary = content_type.split("boundary=", 1)[1].strip().strip('"').encode()
    for part in data.split(b"--" + boundary):
        head, _, rest = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return rest.rsplit(b"\r\n", 1)[0].decode("utf-8")
    raise ValueError("no file part")


class _BatchHandler(_Handler):
    owner: FakeBatchServer

    def do_GET(self) -> None:
        server = self.owner
        parts = self.path.strip("/").split("/")
        if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in server.jobs:
            self._send(200, server.job_object(server.jobs[parts[2]]))
        elif parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content" and parts[2] in server.files:
            self._send_raw(200, server.files[parts[2]].encode(), "application/octet-stream")
        else:
            super().do_GET()

    def do_POST(self) -> None:
        server = self.owner
        if self.path == "/v1/files":
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            text = _multipart_file(self.headers.get("Content-Type", ""), data)
            server.record.uploads.append(text)
            file_id = server._store(text)
            self._send(200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                             "filename": "requests.jsonl", "purpose": "batch", "status": "processed"})
        elif self.path == "/v1/batches":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            job = server.create_job(body["input_file_id"], body["endpoint"])
            self._send(200, server.job_object(job))
        else:
            super().do_POST()
