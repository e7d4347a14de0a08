"""Calling declared systems without pytest sessions: deadlines, retries, early stop, what a system may
return, and the recording files and manifest (exam_harness/systems)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import exam_harness
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Query
from exam_harness.features.live_systems import declare
from exam_harness.features.live_systems.calling import EARLY_STOP, Called, call_all, call_many
from exam_harness.features.live_systems.session import SystemsPass, resolve_mode
from exam_harness.io.generated import read_responses
from exam_harness.io.runs import load_runs

QUERIES = [Query(id=f"q{i}", text=f"query {i}") for i in range(8)]


def results(system: declare.System, queries: list[Query] = QUERIES) -> tuple[dict[str, Called], str | None]:
    got: dict[str, Called] = {}
    stopped = call_all(system, queries, lambda c: got.__setitem__(c.query_id, c))
    return got, stopped


def test_a_failed_call_is_tried_again_and_a_call_past_its_deadline_fails() -> None:
    tries: dict[str, int] = {}
    lock = threading.Lock()

    @exam_harness.system("flaky-first", timeout=2, retries=1, backoff=0.01)
    def flaky_first(query: Query) -> str:
        with lock:
            tries[query.id] = tries.get(query.id, 0) + 1
            first = tries[query.id] == 1
        if first and query.id == "q1":
            raise ConnectionError("reset")
        return f"answer {query.id}"

    @exam_harness.system("always-slow", timeout=0.1, concurrency=8)
    async def always_slow(query: Query) -> str:
        await asyncio.sleep(5)
        return "never"

    got, stopped = results(declare.declared()[0], QUERIES[:3])
    assert stopped is None
    assert all(c.error is None for c in got.values()) and got["q1"].attempts == 2
    got, _ = results(declare.declared()[1], QUERIES[:2])
    assert {c.error for c in got.values()} == {"TimeoutError: no answer within 0.1 s"}


def test_the_deadline_covers_the_retries_and_a_blocked_event_loop() -> None:
    @exam_harness.system("slow-retried", timeout=0.5, retries=5, backoff=0.05)
    def slow_retried(query: Query) -> str:
        time.sleep(0.3)
        raise ConnectionError("down")

    @exam_harness.system("blocks-its-loop", timeout=0.3, concurrency=2)
    async def blocks_its_loop(query: Query) -> str:
        time.sleep(3)  # a sync sleep in an async system: its event loop stands still
        return "late"

    start = time.monotonic()
    got, _ = results(declare.declared()[0], QUERIES[:2])
    assert time.monotonic() - start < 2.5  # six attempts of 0.3 s and their backoffs would take 3.3 s
    assert all(c.error is not None for c in got.values()) and all(c.attempts <= 2 for c in got.values())
    start = time.monotonic()
    got, _ = results(declare.declared()[1], QUERIES[:2])
    assert time.monotonic() - start < 2.5  # the two calls block the loop for 6 s
    assert {c.error for c in got.values()} == {"TimeoutError: no answer within 0.3 s"}


def test_a_call_cancelled_before_it_started_leaves_no_coroutine_never_awaited() -> None:
    """The second call of a system that blocks its loop (one call at a time: it is sent while the first, abandoned
    at its deadline, still blocks the loop) is abandoned too before its task ever ran, and the loop is stopped:
    no coroutine of the system's is left to be collected unawaited (its RuntimeWarning surfaced in whatever test
    ran later in the process, failing it)."""
    import gc
    import warnings

    release = threading.Event()

    @exam_harness.system("blocks-then-releases", timeout=0.2, concurrency=1, retries=0)
    async def blocks(query: Query) -> str:
        release.wait(3.0)  # a sync wait in an async system: its event loop stands still
        return "late"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, _ = results(declare.declared()[0], QUERIES[:2])
        assert {c.error for c in got.values()} == {"TimeoutError: no answer within 0.2 s"}
        release.set()
        time.sleep(0.5)  # the loop wakes, runs what was queued and ends
        gc.collect()
    assert not [str(w.message) for w in caught if "never awaited" in str(w.message)]


@pytest.mark.parametrize(("field", "value"), [("timeout", float("inf")), ("timeout", float("nan")),
                                          ("backoff", 1e9), ("backoff", float("inf")), ("retries", 10**9)])
def test_unbounded_deadlines_and_backoffs_are_refused(field: str, value: float) -> None:
    declared: dict[str, Any] = {field: value}
    with pytest.raises(ConfigError, match=field):
        exam_harness.system("unbounded", **declared)(lambda q: "x")


def test_a_wrong_return_type_fails_the_query_without_retries() -> None:
    @exam_harness.system("numbers", retries=3, backoff=0.01)
    def numbers(query: Query) -> object:
        return 42 if query.id == "q0" else "fine"

    got, _ = results(declare.declared()[0], QUERIES[:2])
    assert got["q0"].error is not None and "returned a int" in got["q0"].error and got["q0"].attempts == 1
    assert got["q1"].error is None


def test_a_system_failing_on_its_first_queries_stops_early() -> None:
    calls: list[str] = []

    @exam_harness.system("down", concurrency=1)
    def down(query: Query) -> str:
        calls.append(query.id)
        raise ConnectionError("connection refused")

    got, stopped = results(declare.declared()[0])
    assert stopped is not None and f"failed on each of its first {EARLY_STOP} queries" in stopped
    assert "connection refused" in stopped
    assert len(calls) < len(QUERIES) and all(c.error for c in got.values())


def test_systems_called_together_share_the_budget_and_finish_together() -> None:
    # a budget of 2 for three systems of concurrency 2: a freed slot given to the first system that can
    # take one starves the third until the others are done (it then runs alone, held to its own
    # concurrency, while the budget stands half unused); each slot goes where most queries are left
    def answering(name: str) -> None:
        @exam_harness.system(name, concurrency=2)
        def answer(query: Query) -> str:
            time.sleep(0.02)
            return f"{name} on {query.id}"

    for name in ("first", "second", "third"):
        answering(name)
    finished: list[str] = []
    stopped = call_many([(s, QUERIES) for s in declare.declared()],
                        lambda system, called: finished.append(system.name), budget=2)
    assert stopped == {} and len(finished) == 3 * len(QUERIES)
    last = {name: max(i for i, got in enumerate(finished) if got == name) for name in ("first", "second", "third")}
    assert finished.index("third") < last["first"], finished  # the third is called from the start
    assert min(last.values()) >= 2 * len(QUERIES), finished  # and no system is done while others have far to go


def test_rankings_and_answers_with_citations_are_recorded_as_ordinary_runs(tmp_path: Path) -> None:
    @exam_harness.system("ranker", kind="ranking")
    def ranker(query: Query) -> list[object]:
        return [exam_harness.Passage("d1", "shared passage", 3.0), ("d-" + query.id, f"own {query.id}", 2.0),
                exam_harness.Passage(None, "no id given", 1.0)]

    @exam_harness.system("cited")
    async def cited(query: Query) -> exam_harness.Answer:
        return exam_harness.Answer(references=("d1", "d2"), tokens=10, cost=0.5,
                                   sentences=(exam_harness.Sentence("First claim.", (0,)), ("Second claim.", [0, 1])))  # type: ignore[arg-type]  # a plain pair is accepted too

    outcome = SystemsPass("once", tmp_path).run([(s, QUERIES[:2]) for s in declare.declared()])
    assert not outcome.failures
    loaded = load_runs([tmp_path])
    assert set(loaded.data.runs) == {"ranker", "cited"}
    assert [r.passage_id for r in loaded.data.runs["ranker"].rankings["q1"]][:2] == ["d1", "d-q1"]
    assert loaded.responses["cited"]["q0"] == "First claim. Second claim."
    line = json.loads((tmp_path / "cited.responses.jsonl").read_text().splitlines()[0])
    assert line["references"] == ["d1", "d2"]
    assert line["answer"] == [{"text": "First claim.", "citations": [0]}, {"text": "Second claim.", "citations": [0, 1]}]
    read_responses(tmp_path / "cited.responses.jsonl")  # the existing loader reads it as it is
    manifest = json.loads((tmp_path / "cited.system.json").read_text())
    assert manifest["totals"]["tokens"] == 20 and manifest["totals"]["cost"] == 1.0
    # a second pass in once mode calls nothing
    assert SystemsPass("once", tmp_path).run([(s, QUERIES[:2]) for s in declare.declared()]).calls == 0


def test_one_passage_id_with_two_texts_fails_the_later_query(tmp_path: Path) -> None:
    @exam_harness.system("clash", kind="ranking", concurrency=1)
    def clash(query: Query) -> list[tuple[str, str]]:
        return [("same-id", f"text of {query.id}")]

    outcome = SystemsPass("once", tmp_path).run([(declare.declared()[0], QUERIES[:2])])
    assert list(outcome.failures) == [("clash", "q1")]
    assert "passage id 'same-id' was returned for query 'q0' with another text" in outcome.failures["clash", "q1"]
    assert set(load_runs([tmp_path]).data.runs["clash"].rankings) == {"q0"}


def test_modes_come_from_the_option_then_the_environment_then_ci() -> None:
    assert resolve_mode(None, {}) == "once"
    assert resolve_mode(None, {"CI": "true"}) == "replay"
    assert resolve_mode(None, {"CI": "true", "EXAM_SYSTEM_MODE": "record"}) == "record"
    assert resolve_mode("live", {"EXAM_SYSTEM_MODE": "record"}) == "live"
    with pytest.raises(ConfigError, match="EXAM_SYSTEM_MODE must be one of once, replay, record, live"):
        resolve_mode(None, {"EXAM_SYSTEM_MODE": "sometimes"})


def test_two_declarations_of_one_name_are_refused() -> None:
    exam_harness.http_system("twice", url="http://127.0.0.1:9/a")
    with pytest.raises(ConfigError, match="system 'twice' is declared twice"):
        exam_harness.command_system("twice", ["echo", "{query.text}"])


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections stay open between calls
    disable_nagle_algorithm = True
    connections: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        _KeepAlive.connections.add(id(self.connection))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, reply = (500, b"index down") if body["id"] == "q2" else (200, json.dumps(
            {"hits": [{"id": f"d{body['id']}", "text": f"about {body['id']}", "score": 1.5}]}).encode())
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_http_ranking_system_keeps_its_connections_and_reports_http_errors() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        system = exam_harness.http_system("hits", url=f"http://127.0.0.1:{server.server_address[1]}/search",
                                          body={"id": "{query.id}"}, answer="hits", kind="ranking", concurrency=2)
        got, _ = results(system)
    finally:
        server.shutdown()
        server.server_close()
    assert got["q0"].value == [("dq0", "about q0", 1.5)]
    assert got["q2"].error == "RuntimeError: HTTP 500 Internal Server Error from POST " \
        f"http://127.0.0.1:{server.server_address[1]}/search: index down"
    assert len(_KeepAlive.connections) <= 2 < len(QUERIES)  # one connection per calling thread


def test_a_refused_connection_names_the_url() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    system = exam_harness.http_system("closed", url=f"http://127.0.0.1:{port}/answer", body={"q": "{query.text}"},
                                      retries=0)
    got, _ = results(system, QUERIES[:1])
    assert got["q0"].error == f"ConnectionError: POST http://127.0.0.1:{port}/answer: Connection refused"


def test_once_asks_again_for_a_query_whose_text_changed_and_replay_says_it_is_stale(tmp_path: Path) -> None:
    asked: list[str] = []

    @exam_harness.system("echo")
    def echo(query: Query) -> str:
        asked.append(query.id)
        return query.text

    system = declare.declared()[0]
    SystemsPass("once", tmp_path).run([(system, QUERIES[:3])])
    edited = [QUERIES[0], Query(id="q1", text="an edited query"), QUERIES[2]]
    asked.clear()
    replayed = SystemsPass("replay", tmp_path).run([(system, edited)])
    assert asked == [] and replayed.notes == [
        "stale recording: system 'echo': queries q1 changed their text since recorded; its recorded answers are "
        "scored as they are (replay mode calls nothing)"]
    SystemsPass("once", tmp_path).run([(system, edited)])
    assert asked == ["q1"]
    assert read_responses(tmp_path / "echo.responses.jsonl").responses["echo"]["q1"] == "an edited query"
    with pytest.raises(ConfigError, match=r"system 'echo': no recorded answer for queries q3"):
        SystemsPass("replay", tmp_path).run([(system, QUERIES[:4])])
