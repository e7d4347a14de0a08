"""Hostile-input families of issues 31, 28 and 39 (``benchmarks/adversarial.py --hostile``): each family
probes one mechanism in-process, offline, and says how many of its probes held and how long they took.

Families (each with its test in tests/adversarial/):

* ``numeric-bounds``: every numeric option of the schema and of every grader refuses 10**30, 1e400, inf, nan;
* ``usage-count``: a 400-digit ``usage`` token count is capped, finite, priced;
* ``ranking-score``: a live system's score of 10**400, NaN or inf fails its call instead of crashing;
* ``early-stop``: the early-stop note counts the calls made;
* ``m-of-k``: an ``@MofK`` gate whose K is not the judge's repeats is refused before grading;
* ``measure-names``: trec_eval's printed spellings name measures, an unknown one suggests the close one;
* ``citation-2024``: a 2024 TREC RAG citation by segment id is an input error;
* ``killed-save``: a killed save's temp file in the history folder is removed by the next save;
* ``batch-state`` (issue 39.1): a tampered batch state file (a job naming a path, a string ``custom_ids``, an
  id that is a path, an unknown field) is refused whole, naming the field, and uploads nothing;
* ``batch-once`` (39.4, 39.5): a job a killed process was creating is found again by its tag (no second
  create); a request answered twice differently is no answer, one answered twice alike is one;
* ``run-ids`` (39.2): run ids that are paths, hidden names or 5,000 characters are refused where read and
  never become a file name;
* ``cache-merge`` (39.3, 39.12): a merge keeps what the output held, refuses a user's file there untouched,
  leaves damaged rows out.

Issue 39, findings 6-14:

* ``verdict-documents``: a gate that checks nothing fails; a run listed twice or more fallback grades than
  grades is no document; a compare-fail limit is never negative, so the session's report reads back;
* ``compare-refs``: a kept report that is a FIFO, a history folder that is a file, a path that is no report;
* ``retry-after-cap``: an hour, a 2099 date, inf, 1e308, 400 nines hold the pacer at most its cap;
* ``fifo-inputs``: the one opening of inputs refuses a FIFO at once;
* ``fingerprint-walk``: files= outside the root refused, a link loop ends, ``python -m`` covered;
* ``section-plugins``: a section that raises or gives the wrong type is left out and said; a reserved name
  or another placement is refused at registration; its escapes shown escaped; a NaN never reaches the JSON;
* ``slow-server`` (finding 10, tests/llm/test_timeouts.py): a server slow on a third of its calls fails those
  pairs and grades the rest without a stop; one that answers nothing stops after waves of silence, saying so.

A family "held" when every probe did; the script's exit status is 1 when one did not.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Probe = Callable[[], Iterator[tuple[str, bool]]]


def _refused(convert: Callable[[str], object], raw: str) -> bool:
    try:
        convert(raw)
    except ValueError:
        return True
    return False


def numeric_bounds() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.options import Integer, Number, Optional, specs
    from exam_harness.graders.base import declared_options
    from exam_harness.graders.registry import default_registry

    converters: list[tuple[str, object]] = [(f"--{s.name}", s.convert) for _, s in specs()]
    registry = default_registry()
    for grader in registry.names():
        converters += [(f"{grader}:{o.name}", o.convert) for o in declared_options(registry.get(grader))]
    for where, convert in converters:
        inner = convert.convert if isinstance(convert, Optional) else convert
        if isinstance(inner, (Integer, Number)):
            absurd = ("1" + "0" * 30, "9" * 5000) if isinstance(inner, Integer) else ()
            for raw in (*absurd, "1e400", "inf", "nan"):
                yield f"{where}={raw[:8]}", _refused(inner, raw)


def usage_count() -> Iterator[tuple[str, bool]]:
    import math

    from exam_harness.llm.cost import MAX_TOKEN_COUNT, Prices, TokenUsage, grade_tokens

    tokens = grade_tokens({"prompt_tokens": 10**400, "completion_tokens": 3})
    yield "capped", tokens is not None and tokens[0] == MAX_TOKEN_COUNT
    cost = Prices(1.0, 1.0).cost(TokenUsage(*(tokens or (0.0, 0.0))))
    yield "priced finite", math.isfinite(cost)


def ranking_score() -> Iterator[tuple[str, bool]]:
    from exam_harness.features.live_systems.calling import _passage

    for score in (10**400, float("nan"), float("inf")):
        try:
            _passage(("d1", "text", score), 0)
        except ValueError:
            yield f"score {str(score)[:6]}", True
        else:
            yield f"score {str(score)[:6]}", False


def early_stop() -> Iterator[tuple[str, bool]]:
    import re

    import exam_harness
    from exam_harness.core.models import Query
    from exam_harness.features.live_systems import declare
    from exam_harness.features.live_systems.calling import call_all

    declare.clear()
    made: list[str] = []

    @exam_harness.system("hostile-down", concurrency=1)
    def down(query: Query) -> str:
        made.append(query.id)
        raise ConnectionError("refused")

    try:
        stopped = call_all(declare.declared()[0], [Query(id=f"q{i}", text="t") for i in range(12)], lambda c: None)
    finally:
        declare.clear()
    found = re.search(r"the other (\d+) queries were not called \((\d+) calls made", stopped or "")
    yield "counts add up", found is not None and int(found[2]) == len(made) and int(found[1]) == 12 - len(made)


def m_of_k() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.gates import check_samples, parse_threshold
    from exam_harness.core.errors import ConfigError

    try:
        check_samples([parse_threshold("0.5@2of3")], 1)
    except ConfigError:
        yield "@2of3 with repeats=1", True
    else:
        yield "@2of3 with repeats=1", False


def measure_names() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.gates import check_measures
    from exam_harness.core.errors import ConfigError
    from exam_harness.measures.parsing import parse_measure

    for printed, name in (("success_10", "success.10"), ("iprec_at_recall_0.10", "iprec_at_recall.0.10")):
        yield printed, str(parse_measure(printed)) == str(parse_measure(name))
    try:
        check_measures(["cover"], None, "--exam-compare-fail")
    except ConfigError as exc:
        yield "cover ~ exam-cover", "Did you mean 'exam-cover'?" in str(exc)


def citation_2024() -> Iterator[tuple[str, bool]]:
    from exam_harness.core.errors import InputError
    from exam_harness.io.runs import load_runs

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        path.write_text(json.dumps({"run_id": "r", "topic_id": "t", "topic": "x", "references": ["s#1"], "response_length": 1,
                                    "answer": [{"text": "A.", "citations": ["s#1"]}]}) + "\n")
        try:
            load_runs([path])
        except InputError as exc:
            yield "segment id refused", "2025 form" in str(exc)
        else:
            yield "segment id refused", False


def killed_save() -> Iterator[tuple[str, bool]]:
    from exam_harness.results.history import _remove_stale_temp_files, entries

    with tempfile.TemporaryDirectory() as folder:
        history = Path(folder)
        (history / ".0001_main.json.abcd1234.tmp").write_text("{")
        (history / ".notes.tmp").write_text("mine")
        yield "never a kept report", entries(history) == []
        _remove_stale_temp_files(history)
        yield "temp file removed, user file kept", sorted(p.name for p in history.iterdir()) == [".notes.tmp"]


_GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "exam-report.json"


def _golden(folder: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """The golden exam report, edited, as ``folder/exam-report.json``."""
    document = json.loads(_GOLDEN.read_text())
    document.setdefault("tool_version", "golden")  # the golden file leaves out what changes between runs
    document.setdefault("created", "2025-01-01T00:00:00Z")
    if edit is not None:
        edit(document)
    path = folder / "exam-report.json"
    path.write_text(json.dumps(document))
    return path


def _raises(read: Callable[[], object], kind: type[Exception]) -> bool:
    """Whether ``read()`` refuses with ``kind``."""
    try:
        read()
    except kind:
        return True
    return False


def verdict_documents() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.gates import Allowance, GateResult, parse_allowance, parse_threshold
    from exam_harness.core.errors import InputError
    from exam_harness.results.document import read_document
    from exam_harness.results.verdict import Checks, decide

    def no_runs(doc: dict[str, Any]) -> None:
        doc["systems"], doc["per_query"], doc["outcomes"] = [], [], []

    def twice(doc: dict[str, Any]) -> None:
        doc["systems"].append(json.loads(json.dumps(doc["systems"][0])))

    def inflated(doc: dict[str, Any]) -> None:
        doc["systems"][0]["fallbacks"] = 10**9

    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        empty = read_document(_golden(here, no_runs))
        yield "systems [] with a threshold fails", not decide(empty, Checks(thresholds=(parse_threshold("0.7"),))).passed
        whole = read_document(_golden(here))
        absent = Checks(thresholds=(parse_threshold("gone=0.1"),))
        yield "a threshold on an absent run fails", not decide(whole, absent).passed
        other = whole.model_copy(update={"systems": [s.model_copy(update={"run": "x-" + s.run}) for s in whole.systems]})
        renamed = Checks(allowances=(parse_allowance("exam-cover:0.1"),), reference=("kept", other))
        yield "no run in common fails", not decide(whole, renamed).passed
        yield "a run listed twice refused", _raises(lambda: read_document(_golden(here, twice)), InputError)
        yield "fallbacks 10**9 refused", _raises(lambda: read_document(_golden(here, inflated)), InputError)
    yield "limit of a weak baseline is 0", Allowance("exam-cover", 0.05, False).lowest(0.0143) == 0.0
    yield "a negative limit cannot be held", _raises(
        lambda: GateResult(gate="exam-compare-fail", limit=-0.0143, passed=False, message=""), ValueError)


def compare_refs() -> Iterator[tuple[str, bool]]:
    import os

    from exam_harness.core.errors import ConfigError, ExamError
    from exam_harness.results.history import NothingKept, load, resolve

    def usage_error(folder: Path, ref: str, base: Path) -> bool:
        """Whether ``--compare ref`` is a usage error, not "nothing kept" (a warning, the gate unchecked)."""
        try:
            load(resolve(folder, ref, base))
        except NothingKept:
            return False
        except ExamError:
            return True
        return False

    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        history = base / "history"
        history.mkdir()
        os.mkfifo(history / "0001_main.json")
        yield "a FIFO as kept report", _raises(lambda: resolve(history, "main", base), ConfigError)
        (base / "file").write_text("")
        yield "a history folder that is a file", usage_error(base / "file", "latest", base)
        for ref in ("../../etc/passwd", "missing/kept.json"):
            yield ref, usage_error(base / "none", ref, base)


def retry_after_cap() -> Iterator[tuple[str, bool]]:
    import asyncio

    from exam_harness.llm.pacing import Pacer
    from exam_harness.llm.retry import parse_retry_after

    async def held(header: str) -> float:
        """Seconds the next request waits after a 429 carrying ``header`` (a fake clock)."""
        now = [0.0]

        async def sleep(seconds: float) -> None:
            now[0] += seconds

        pacer = Pacer(4, hold_max=120.0, clock=lambda: now[0], sleep=sleep)
        await pacer.start()
        await pacer.finish(429, retry_after=parse_retry_after(header))
        await pacer.start()
        return now[0]

    for label, header in (("3600", "3600"), ("2099", "Thu, 01 Jan 2099 00:00:00 GMT"), ("inf", "inf"),
                          ("1e308", "1e308"), ("400 nines", "9" * 400)):
        yield label, asyncio.run(held(header)) <= 120.0


def fifo_inputs() -> Iterator[tuple[str, bool]]:
    import os

    from exam_harness.core.errors import InputError
    from exam_harness.io.textio import iter_lines, read_bytes

    with tempfile.TemporaryDirectory() as folder:
        for name in ("report.json", "run.gz", "labels.jsonl"):
            fifo = Path(folder) / name
            os.mkfifo(fifo)
            yield name, _raises(lambda f=fifo: read_bytes(f) if f.suffix == ".json" else list(iter_lines(f)), InputError)


def fingerprint_walk() -> Iterator[tuple[str, bool]]:
    import os

    from exam_harness.core.errors import ConfigError
    from exam_harness.features.live_systems.fingerprint import command_covers, plain_covers

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        (root / "pyproject.toml").write_text("")
        (root / "prompts" / "sub").mkdir(parents=True)
        (root / "prompts" / "a.txt").write_text("a")
        (root / "prompts" / "sub" / "up").symlink_to("..")
        (root / "prompts" / "x").symlink_to("y")
        (root / "prompts" / "y").symlink_to("x")
        (root / "rag").mkdir()
        (root / "rag" / "cli.py").write_text("import rag.util\n")
        (root / "rag" / "util.py").write_text("")
        here = Path.cwd()
        os.chdir(root)
        try:
            for outside in ("/etc/passwd", "../outside.txt"):
                yield f"files={outside}", _raises(lambda o=outside: plain_covers([o], None, "x"), ConfigError)
            yield "link loop ends", sorted(plain_covers(["prompts"], None, "x")) == ["file prompts/a.txt"]
            covers = command_covers(["python", "-m", "rag.cli"], str(root), [], None, "x")
            yield "python -m covered", {"module rag/cli.py", "module rag/util.py"} <= set(covers)
        finally:
            os.chdir(here)


def section_plugins() -> Iterator[tuple[str, bool]]:
    from pydantic import BaseModel

    from exam_harness.results.json_writer import json_document, json_text
    from exam_harness.results.left_out import taken
    from exam_harness.results.sections import FAILED, contained, section_lines, section_problem

    class Content(BaseModel):
        n: float = 1.0

    class Plugin:
        name, title, model, placement = "mine", "Mine", Content, "after"

        def compute(self, scored: object) -> object:
            raise RuntimeError("boom")

        def terminal(self, content: object) -> object:
            return ["\x1b[2J\x1b[32mALL GATES PASSED"]

        def markdown(self, content: object, escape: object) -> str:
            return ""

        def html(self, content: object) -> object:
            return b"<section></section>"

    section: Any = Plugin()
    taken()
    raised = contained(section, "the document", lambda: section.compute(None), "x", lambda _: True)
    yield "compute raises: left out", raised is FAILED
    wrong = contained(section, "HTML", lambda: section.html(None), "str", lambda h: isinstance(h, str))
    yield "html bytes: left out", wrong is FAILED
    yield "each said", len(taken()) == 2
    yield "escapes escaped", all("\x1b" not in line for line in section_lines(section, Content(), 80))
    named = Plugin()
    named.name = "verdict"
    yield "name verdict refused", section_problem(named) is not None
    sideways = Plugin()
    sideways.placement = "sideways"
    yield "placement sideways refused", section_problem(sideways) is not None
    doc = json_document({"sections": {"mine": {"n": float("nan")}}, "x": 1.0}, "r.json")
    yield "NaN section left out", doc == {"sections": {}, "x": 1.0}
    yield "NaN elsewhere is null", json.loads(json_text({"a": float("nan")}, "r.json")) == {"a": None}
    taken()
def batch_state() -> Iterator[tuple[str, bool]]:
    from exam_harness.core.errors import InputError
    from exam_harness.llm.batch_state import BatchState

    good = {"name": "20261127T120000-0001.requests.jsonl", "target": "server", "url": "/v1/chat/completions",
            "custom_ids": ["ab" * 32]}
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "grades.sqlite"
        for label, change in (("absolute name", {"name": "/home/u/.ssh/id_rsa"}), ("../ name", {"name": "../x"}),
                              ("string custom_ids", {"custom_ids": "abc"}), ("batch id path", {"batch_id": "../f"}),
                              ("unknown field", {"run": "curl x | sh"}), ("target", {"target": "shell"})):
            (Path(folder) / "grades.sqlite.batch.json").write_text(json.dumps({"version": 1, "jobs": [{**good, **change}]}))
            try:
                BatchState(cache)
            except InputError as exc:
                yield label, "jobs[0]" in str(exc) and "not a batch state file" in str(exc)
            else:
                yield label, False


def batch_once() -> Iterator[tuple[str, bool]]:
    from types import SimpleNamespace

    from exam_harness.llm import batch
    from exam_harness.llm.batch_state import BatchJob, BatchState

    with tempfile.TemporaryDirectory() as folder:
        state = BatchState(Path(folder) / "grades.sqlite")
        job = BatchJob("20261127T120000-0001.requests.jsonl", "server", "/v1/chat/completions", ["ab" * 32],
                       status="submitting")
        state.jobs.append(job)
        made: list[str] = []
        found = SimpleNamespace(id="batch_1", status="in_progress", metadata={batch.TAG_KEY: job.tag}, created_at=None,
                                input_file_id="file_1", output_file_id=None, error_file_id=None, request_counts=None)
        client = SimpleNamespace(
            batches=SimpleNamespace(list=lambda **_: [found], create=lambda **_: made.append("created")),
            files=SimpleNamespace(list=lambda **_: [], create=lambda **_: made.append("uploaded")))
        batch.submit(client, state, job)
        yield "a killed create found again", job.batch_id == "batch_1" and not made
    line = {"custom_id": "k", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "3"}}]}}}
    other = json.loads(json.dumps(line))
    other["response"]["body"]["choices"][0]["message"]["content"] = "0"
    answers, _ = batch.read_outputs([("out", json.dumps(line) + "\n" + json.dumps(other) + "\n")])
    yield "differing duplicate is no answer", answers["k"].error is not None and "answered twice" in answers["k"].error
    answers, problems = batch.read_outputs([("out", json.dumps(line) + "\n" + json.dumps(line) + "\n")])
    yield "equal duplicate is one answer", answers["k"].error is None and not problems


def run_ids() -> Iterator[tuple[str, bool]]:
    from exam_harness.core.errors import InputError, OutputError
    from exam_harness.core.ids import file_name, name_problem
    from exam_harness.features.trec_rag.assignments import read_assignment_files

    hostile = ("../../x", "..", "a/b", "a\\b", ".hidden", "r" * 5000, "run\x1b[2J")
    for run in hostile:
        yield f"rule: {run[:8]!a}", name_problem(run, "run_id") is not None
        try:
            file_name(run, ".metrics.jsonl")
        except OutputError:
            yield f"guard: {run[:8]!a}", True
        else:
            yield f"guard: {run[:8]!a}", False
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "team.jsonl"
        path.write_text(json.dumps({"qid": "t1", "run_id": "../../x", "nuggets": [
            {"text": "n", "importance": "vital", "assignment": "support"}]}) + "\n")
        try:
            read_assignment_files([path])
        except InputError as exc:
            yield "assignment file refused where read", exc.line == 1 and exc.field == "run_id"
        else:
            yield "assignment file refused where read", False


def cache_merge() -> Iterator[tuple[str, bool]]:
    import sqlite3

    from exam_harness.core.errors import ConfigError
    from exam_harness.core.models import Grade
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.merge import merge_caches

    def cache_with(path: Path, grades: dict[str, int]) -> Path:
        cache = GradeCache(path, notify=lambda _: None)
        try:
            cache.put_many({k: Grade(grade=g, grader="g") for k, g in grades.items()})
        finally:
            cache.close()
        return path

    quiet = {"notify": lambda _: None}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        out = cache_with(root / "grades.sqlite", {"aa" * 32: 1, "bb" * 32: 2})
        shard = cache_with(root / "shard.sqlite", {"cc" * 32: 3, "dd" * 32: 4})
        yield "output's grades kept", merge_caches([shard], out, **quiet).written == 4
        notes = root / "notes.txt"
        notes.write_text("mine\n")
        try:
            merge_caches([shard], notes, **quiet)
        except ConfigError:
            yield "a user's file refused untouched", notes.read_text() == "mine\n"
        else:
            yield "a user's file refused untouched", False
        with sqlite3.connect(shard) as db:
            db.execute("UPDATE grades SET grade = 999 WHERE key = ?", (bytes.fromhex("cc" * 32),))
        done = merge_caches([shard], root / "new.sqlite", **quiet)
        yield "damaged row left out, named", done.written == 1 and len(done.left_out) == 1


def slow_server() -> Iterator[tuple[str, bool]]:
    from exam_harness.core.models import GradeFailure
    from exam_harness.llm.backend import Generation, PromptParts
    from exam_harness.llm.openai import OpenAIBackend
    from tests.fake_openai_server import FakeOpenAIServer, Fault

    def backend(server: FakeOpenAIServer, timeout: float, retries: int) -> OpenAIBackend:
        return OpenAIBackend("fake-model", base_url=server.base_url, api_key="k", timeout=timeout,
                             max_retries=retries, backoff_base=0.001, backoff_max=0.002, concurrency=4,
                             max_consecutive_failures=3)

    prompts = [PromptParts(f"Rate question {i}: ", f"passage {i}.", " GRADE=3") for i in range(9)]
    with FakeOpenAIServer() as server:
        for i in range(0, 9, 3):
            server.add_faults(f"passage {i}.", Fault("slow", delay=5.0), Fault("slow", delay=5.0))
        slow = backend(server, 0.3, 1)
        results = slow.generate(prompts, max_new_tokens=1, rating_scale=5)
    yield "slow third: no stop", slow.stopped is None
    yield "slow third: those pairs fail", all(isinstance(r, GradeFailure) for r in results[::3])
    yield "slow third: the rest graded", all(isinstance(r, Generation) for i, r in enumerate(results) if i % 3)
    with FakeOpenAIServer() as server:
        server.add_next_faults(*[Fault("slow", delay=30.0)] * 100)
        silent = backend(server, 0.2, 5)  # the third wave of silence stops it
        silent.generate(prompts[:4], max_new_tokens=1, rating_scale=5)
    yield "silence: stopped, saying so", (silent.stopped or "").startswith("3 waves of requests in a row timed out")


FAMILIES: dict[str, Probe] = {
    "numeric-bounds": numeric_bounds, "usage-count": usage_count, "ranking-score": ranking_score,
    "early-stop": early_stop, "m-of-k": m_of_k, "measure-names": measure_names, "citation-2024": citation_2024,
    "killed-save": killed_save, "batch-state": batch_state, "batch-once": batch_once, "run-ids": run_ids,
    "cache-merge": cache_merge,
    "verdict-documents": verdict_documents, "compare-refs": compare_refs, "retry-after-cap": retry_after_cap,
    "fifo-inputs": fifo_inputs, "fingerprint-walk": fingerprint_walk, "section-plugins": section_plugins,
    "slow-server": slow_server,
}


def run_families() -> tuple[list[str], bool]:
    """One line per family: ``hostile[NAME]: held 12/12 probes in 3.1 ms`` (and the probes that broke)."""
    lines, all_held = [], True
    for name, probe in FAMILIES.items():
        started = time.perf_counter()
        results: list[tuple[str, bool]] = []
        try:
            results.extend(probe())
        except Exception as exc:  # a probe that crashes broke its family (main before the fixes: ImportError)
            results.append((f"raised {type(exc).__name__}: {str(exc)[:60]}", False))
        ms = (time.perf_counter() - started) * 1000
        broke = [label for label, held in results if not held]
        all_held = all_held and not broke and bool(results)
        held = len(results) - len(broke)
        lines.append(f"hostile[{name}]: held {held}/{len(results)} probes in {ms:.1f} ms"
                     + (f"; broke: {', '.join(broke[:5])}" if broke else ""))
    return lines, all_held
