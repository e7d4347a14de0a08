"""Hostile input against live systems and their recordings (issue 31, findings 1-7, 10, 12, 15-17):
secrets, links and FIFOs, answers the loaders would refuse, failures while writing, concurrent
sessions, hand-edited manifests, endless HTTP replies, commands that leave children behind."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import exam_harness
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.core.models import Query
from exam_harness.features.live_systems import declare, forms, recording
from exam_harness.features.live_systems.session import SystemsPass
from exam_harness.io import textio
from exam_harness.io.runs import load_runs

QUERIES = [Query(id=f"q{i}", text=f"query {i}") for i in range(4)]
KEY = "sk-live-0123456789abcdef"


class _Echo(BaseHTTPRequestHandler):
    """Answers 500 with the request's headers (a debug page), or drips, or never ends, by path."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/drip"):
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(50):
                self.wfile.write(b"  ")
                self.wfile.flush()
                time.sleep(0.5)
            return
        if self.path.startswith("/endless"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 4096
            try:
                for _ in range(100_000):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                return
            return
        reply = f"debug: {dict(self.headers)}".encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# -- 31.1 secrets --------------------------------------------------------------------------------------------
def test_a_key_echoed_by_the_endpoint_reaches_neither_message_nor_manifest(server: str, tmp_path: Path) -> None:
    system = exam_harness.http_system("echoing", url=f"{server}/answer?api_key={KEY}&k=5", body={"q": "{query.text}"},
                                      headers={"X-Custom-Token": f"Bearer {KEY}"})
    outcome = SystemsPass("once", tmp_path).run([(system, QUERIES[:1])])
    message = outcome.failures["echoing", "q0"]
    assert "HTTP 500" in message and KEY not in message
    written = (tmp_path / "echoing.system.json").read_text()
    assert KEY not in written, written[written.find(KEY) - 300:written.find(KEY) + 40]
    assert "api_key=[redacted]" in written
    fingerprint = system.fingerprint
    declare.clear()
    again = exam_harness.http_system("echoing", url=f"{server}/answer?api_key=sk-live-rotated9876543&k=5",
                                     body={"q": "{query.text}"}, headers={"X-Custom-Token": "Bearer other"})
    assert again.fingerprint == fingerprint  # rotating a key records nothing again


def test_a_key_read_with_its_line_break_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as caught:
        exam_harness.http_system("newline", url="http://127.0.0.1:9/a", headers={"Authorization": f"Bearer {KEY}\n"})
    assert "line break" in str(caught.value) and KEY not in str(caught.value)


def test_a_secret_command_argument_is_kept_out_of_manifest_and_messages(tmp_path: Path) -> None:
    system = exam_harness.command_system(
        "secret-cmd", ["python3", "-c", "import sys; sys.stderr.write('bad key ' + sys.argv[1]); sys.exit(1)",
                       exam_harness.Secret(KEY)])
    outcome = SystemsPass("once", tmp_path).run([(system, QUERIES[:1])])
    assert "bad key" in outcome.failures["secret-cmd", "q0"] and KEY not in outcome.failures["secret-cmd", "q0"]
    assert KEY not in (tmp_path / "secret-cmd.system.json").read_text()


# -- 31.2 links, 31.17 FIFOs ------------------------------------------------------------------------------------
def test_a_recording_is_never_written_through_a_link(tmp_path: Path) -> None:
    runs, outside = tmp_path / "runs", tmp_path / "outside"
    runs.mkdir()
    outside.mkdir()
    (runs / "linked.responses.jsonl").symlink_to(outside / "answers.jsonl")  # dangling
    called: list[str] = []

    @exam_harness.system("linked")
    def linked(query: Query) -> str:
        called.append(query.id)
        return "an answer"

    with pytest.raises(ConfigError, match="symbolic link"):
        SystemsPass("once", runs).run([(declare.declared()[0], QUERIES)])
    assert not (outside / "answers.jsonl").exists() and called == []


def test_a_fifo_as_manifest_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "piped.system.json")

    @exam_harness.system("piped")
    def piped(query: Query) -> str:
        return "x"

    with pytest.raises(ConfigError, match="not a regular file"):
        SystemsPass("replay", tmp_path).run([(declare.declared()[0], QUERIES)])


# -- 31.3 answers the loaders would refuse ---------------------------------------------------------------------
BAD: list[tuple[str, str, Any]] = [
    ("answer", "longer than", "x" * 1_100_000),
    ("answer", "tokens must be", exam_harness.Answer("fine", tokens="12")),  # type: ignore[arg-type]
    ("answer", "lone surrogate", "half \ud800 a pair"),
    ("answer", "out of range", exam_harness.Answer("x", references=("d1",), sentences=(exam_harness.Sentence("x", (3,)),))),
    ("ranking", "finite", [exam_harness.Passage("d1", "text", float("nan"))]),
    ("ranking", "must not contain", [exam_harness.Passage("d\x1b[2J", "text", 1.0)]),
    ("ranking", "must not contain", [exam_harness.Passage("d\u200b1", "text", 1.0)]),
    ("ranking", "no passage", []),
]


@pytest.mark.parametrize(("kind", "why", "bad"), BAD, ids=[f"{kind}-{why}" for kind, why, _ in BAD])
def test_an_answer_the_loaders_refuse_fails_its_call_and_the_recording_stays_readable(
        tmp_path: Path, kind: str, why: str, bad: Any) -> None:
    good: Any = "a fine answer" if kind == "answer" else [("d-ok", "a fine passage", 1.0)]

    @exam_harness.system("hostile", kind=kind)  # type: ignore[arg-type]
    def hostile(query: Query) -> Any:
        return bad if query.id == "q1" else good

    outcome = SystemsPass("once", tmp_path).run([(declare.declared()[0], QUERIES)])
    assert list(outcome.failures) == [("hostile", "q1")] and why in outcome.failures["hostile", "q1"]
    loaded = load_runs([tmp_path])  # what was recorded reads back
    assert "hostile" in loaded.data.runs
    assert SystemsPass("replay", tmp_path).run([(declare.declared()[0], [q for q in QUERIES if q.id != "q1"])])


def test_system_names_that_would_break_file_names_or_terminals_are_refused() -> None:
    for name in ("evil\x1b[2J", "x" * 300, ".hidden"):
        with pytest.raises(ConfigError, match="system name"):
            exam_harness.system(name)(lambda q: "x")


# -- 31.4, 31.6 a failure while writing; a recording cut short -------------------------------------------------------
def test_a_failed_write_keeps_the_answers_and_the_next_session_resumes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []

    @exam_harness.system("disk-full", concurrency=1)
    def disk_full(query: Query) -> str:
        called.append(query.id)
        return f"answer {query.id}"

    real = textio.atomic_write_text  # what recording.py imported

    def manifest_fails(path: Path, text: str) -> None:
        if path.name.endswith(".system.json"):  # the data file is written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(recording, "atomic_write_text", manifest_fails)
    system = declare.declared()[0]
    with pytest.raises(ConfigError, match=r"(?s)No space left on device.*kept in the journal"):
        SystemsPass("once", tmp_path).run([(system, QUERIES)])
    assert (tmp_path / "disk-full.responses.jsonl").exists() and not (tmp_path / "disk-full.system.json").exists()
    monkeypatch.setattr(recording, "atomic_write_text", real)
    called.clear()
    resumed = SystemsPass("once", tmp_path).run([(system, QUERIES)])
    assert called == [] and resumed.recorded["disk-full"] == len(QUERIES)
    assert any("were resumed, not called again" in note for note in resumed.notes)


# -- 31.7 two sessions at once ---------------------------------------------------------------------------------------
def test_two_sessions_recording_one_system_at_once_keep_both_sessions_answers(tmp_path: Path) -> None:
    @exam_harness.system("shared", concurrency=1)
    def shared(query: Query) -> str:
        time.sleep(0.05)
        return f"answer {query.id}"

    system = declare.declared()[0]
    sessions = [threading.Thread(target=SystemsPass("once", tmp_path).run, args=([(system, half)],))
                for half in (QUERIES[:2], QUERIES[2:])]
    for session in sessions:
        session.start()
    for session in sessions:
        session.join(timeout=30)
    manifest = json.loads((tmp_path / "shared.system.json").read_text())
    assert sorted(manifest["queries"]) == [q.id for q in QUERIES]


# -- 31.10 hand-edited manifests ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("edit", "field"), [
    (lambda m: m.update(fingerprint=42), "fingerprint"),
    (lambda m: m["queries"]["q0"].pop("latency_s"), "queries.q0.latency_s"),
    (lambda m: m.update(queries=[]), "queries"),
])
def test_a_hand_edited_manifest_is_an_input_error_naming_its_field(tmp_path: Path, edit: Any, field: str) -> None:
    @exam_harness.system("edited")
    def edited(query: Query) -> str:
        return "x"

    system = declare.declared()[0]
    SystemsPass("once", tmp_path).run([(system, QUERIES)])
    path = tmp_path / "edited.system.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    with pytest.raises(InputError) as caught:
        SystemsPass("replay", tmp_path).run([(system, QUERIES)])
    assert caught.value.field == field


def test_a_deeply_nested_manifest_is_refused_before_parsing(tmp_path: Path) -> None:
    @exam_harness.system("deep")
    def deep(query: Query) -> str:
        return "x"

    (tmp_path / "deep.system.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="deep"):
        SystemsPass("replay", tmp_path).run([(declare.declared()[0], QUERIES)])


# -- 31.12 HTTP replies bounded in time and size ------------------------------------------------------------------------
def test_a_dripping_reply_fails_at_the_deadline(server: str, tmp_path: Path) -> None:
    system = exam_harness.http_system("drip", url=f"{server}/drip", body={"q": "{query.text}"}, timeout=1)
    start = time.monotonic()
    outcome = SystemsPass("once", tmp_path).run([(system, QUERIES[:1])])
    assert time.monotonic() - start < 5  # the drip takes 25 s
    assert "no answer within 1 s" in outcome.failures["drip", "q0"]


def test_an_endless_reply_fails_at_the_byte_cap(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forms, "MAX_REPLY_BYTES", 100_000)
    system = exam_harness.http_system("endless", url=f"{server}/endless", body={"q": "{query.text}"}, timeout=20)
    outcome = SystemsPass("once", tmp_path).run([(system, QUERIES[:1])])
    assert "the reply is longer than" in outcome.failures["endless", "q0"]


# -- 31.16 a command's children end with it -----------------------------------------------------------------------------
def test_a_command_past_its_deadline_ends_with_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    system = exam_harness.command_system(
        "forking", ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], timeout=1)
    outcome = SystemsPass("once", tmp_path / "runs").run([(system, QUERIES[:1])])
    assert "no answer within 1 s" in outcome.failures["forking", "q0"]
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; only its parent's reaping is left
