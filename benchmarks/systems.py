"""Calling live systems: is the wall time bound by the system, not the harness?

    .venv/bin/python benchmarks/systems.py                 # 1000 calls, 50 ms each, concurrency 32
    .venv/bin/python benchmarks/systems.py --calls 200 --sleep 0.02 --concurrency 8

Three systems answer after sleeping ``--sleep`` seconds per query: a sync function (threads), an async
function (one event loop) and an HTTP endpoint on 127.0.0.1 (a threading server started here, in its own process), each
declared the way a user declares one (``exam_harness.system`` / ``http_system``, default deadline) and
recorded by the same pass a pytest session runs (``SystemsPass`` in ``record`` mode: calls, retries
machinery, progress hooks, the atomic responses file and manifest), into a temporary runs folder.
The ideal is ``calls * sleep / concurrency``. Then the three are called together, as a session calls
every declared system at once, under the global budget of calls in flight
(:data:`~exam_harness.features.live_systems.calling.GLOBAL_CONCURRENCY`); their ideal is ``3 * calls * sleep /
min(3 * concurrency, budget)``. The last line:
``systems: sync <s> s, async <a> s, http <h> s, together <t> s for 1000 calls at concurrency 32 (ideal 1.56 s;
together 2.34 s)``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from exam_harness.core.models import Query
from exam_harness.features.live_systems.calling import GLOBAL_CONCURRENCY
from exam_harness.features.live_systems.declare import System, clear, declared, http_system, system
from exam_harness.features.live_systems.session import SystemsPass

SERVER = """
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 would make concurrent connects wait for SYN retries
    daemon_threads = True

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and TCP_NODELAY, as a deployed server has
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(float(sys.argv[1]))
        reply = json.dumps({"answer": "answer to " + body["q"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def serve(sleep: float) -> tuple[subprocess.Popen[str], str]:
    """The endpoint in its own process, as a deployed system is (in this one it would share the GIL)."""
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(sleep)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    return server, f"http://127.0.0.1:{port}/answer"


def timed(systems: list[System], queries: list[Query]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        outcome = SystemsPass("record", Path(folder)).run([(s, queries) for s in systems])
        seconds = time.perf_counter() - start
        for declared in systems:
            if outcome.failures or outcome.recorded[declared.name] != len(queries):
                raise SystemExit(f"{declared.name}: {len(outcome.failures)} calls failed, e.g. "
                                 f"{next(iter(outcome.failures.values()), '')}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--sleep", type=float, default=0.05, help="Seconds each call takes (default: 0.05).")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    queries = [Query(id=f"q{i}", text=f"query number {i}") for i in range(args.calls)]
    sleep = args.sleep

    @system("bench-sync", concurrency=args.concurrency)
    def sync_system(query: Query) -> str:
        time.sleep(sleep)
        return f"answer to {query.text}"

    @system("bench-async", concurrency=args.concurrency)
    async def async_system(query: Query) -> str:
        await asyncio.sleep(sleep)
        return f"answer to {query.text}"

    server, url = serve(sleep)
    try:
        http = http_system("bench-http", url=url, body={"q": "{query.text}"}, answer="answer",
                           concurrency=args.concurrency)
        by_name = {s.name: s for s in (http, *declared())}
        figures = {form: timed([by_name[f"bench-{form}"]], queries) for form in ("sync", "async", "http")}
        figures["together"] = timed(list(by_name.values()), queries)
    finally:
        server.terminate()
        server.wait()
        clear()
    ideal = args.calls * sleep / args.concurrency
    together = 3 * args.calls * sleep / min(3 * args.concurrency, GLOBAL_CONCURRENCY)
    for form, seconds in figures.items():
        best = together if form == "together" else ideal
        print(f"{form:>8}: {seconds:.2f} s" + (f" = {seconds / best:.2f}x ideal" if best else ""))
    print(f"systems: sync {figures['sync']:.2f} s, async {figures['async']:.2f} s, http {figures['http']:.2f} s, "
          f"together {figures['together']:.2f} s for {args.calls} calls at concurrency {args.concurrency} "
          f"(ideal {ideal:.2f} s; together {together:.2f} s)")


if __name__ == "__main__":
    main()
