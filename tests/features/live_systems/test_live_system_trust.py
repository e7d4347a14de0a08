"""Live systems a team can trust in CI (issue 28): fingerprints that see the system's own modules and
files, recordings that survive kills and interrupts, deadlines the session keeps, good answers never
dropped, a mistyped runs folder that calls nothing.

Kills, signals and deadlines run in a child process (a small script over the systems pass, or a pytest
session), so what is checked is what the user sees: the process's exit, its output, the files left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import exam_harness
from exam_harness.core.models import Query
from exam_harness.features.live_systems import declare
from exam_harness.features.live_systems.session import SystemsPass
from tests.features.live_systems.support import QUERIES, calls, conftest, exam, manifest
from tests.features.live_systems.support import example as example  # fixture
from tests.paths import REPO

pytest_plugins = ["pytester"]
EIGHT = [Query(id=f"q{i}", text=f"query {i}") for i in range(8)]


# -- fingerprints --------------------------------------------------------------------------------------
HELPER_SYSTEM = '''
import rag

@exam_harness.system("thin-rag", files=["prompts/*.txt"])
def thin_rag(query):
    with open(Path(__file__).parent / "thin.log", "a") as log:
        log.write(query.id + "\\n")
    return rag.answer(ANSWERS.get(query.id, ""))
'''


def thin_calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "thin.log"
    found = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return found


@pytest.mark.slow
def test_editing_a_module_the_system_imports_or_a_covered_file_makes_the_recording_stale(
        example: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The README's own shape: a thin wrapper around the project's code. rag.py imports tokens.py.
    (example.path / "tokens.py").write_text("def words(text):\n    return text.split()\n")
    (example.path / "rag.py").write_text("import tokens\n\ndef answer(text):\n    return ' '.join(tokens.words(text))\n")
    (example.path / "prompts").mkdir()
    (example.path / "prompts" / "answer.txt").write_text("Answer briefly.")
    example.makeconftest(conftest() + HELPER_SYSTEM)
    assert exam(example).ret == 0
    assert sorted(thin_calls(example)) == sorted(QUERIES)
    covered = manifest(example, "thin-rag")["covers"]
    assert {"module rag.py", "module tokens.py", "file prompts/answer.txt"} <= set(covered)
    assert any(label.startswith("function conftest.py::thin_rag") for label in covered)

    # a helper two imports away changes: CI fails naming the file; a local session records it again
    (example.path / "tokens.py").write_text("def words(text):\n    return text.lower().split()\n")
    monkeypatch.setenv("CI", "true")
    stale = exam(example)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines(["*stale recording: system 'thin-rag'*(changed: module tokens.py)*"])
    assert thin_calls(example) == []
    monkeypatch.delenv("CI")
    assert exam(example).ret == 0
    assert sorted(thin_calls(example)) == sorted(QUERIES)

    # a prompt file named by files= changes: stale too
    (example.path / "prompts" / "answer.txt").write_text("Answer at length.")
    monkeypatch.setenv("CI", "true")
    stale = exam(example)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines(["*(changed: file prompts/answer.txt)*"])


def test_version_may_be_a_callable_and_is_part_of_the_fingerprint() -> None:
    tag = {"value": "v1"}

    def first(query: Query) -> str:
        return query.text

    one = exam_harness.system("versioned", version=lambda: tag["value"])(first)
    fingerprint = declare.declared()[0].fingerprint
    declare.clear()
    tag["value"] = "v2"
    exam_harness.system("versioned", version=lambda: tag["value"])(one)
    assert declare.declared()[0].fingerprint != fingerprint
    assert declare.declared()[0].covers["version"] == "v2"


# -- kills, interrupts, deadlines ---------------------------------------------------------------------
SCRIPT = '''
import os, signal, sys, time
from pathlib import Path
import exam_harness
from exam_harness.core.models import Query
from exam_harness.features.live_systems.declare import declared
from exam_harness.features.live_systems.session import SystemsPass

folder = Path(sys.argv[1])
log = folder.parent / "calls.log"
SLEEP = float(os.environ.get("SLEEP", "0"))
KILL_AT = int(os.environ.get("KILL_AT", "0"))
HANG_AT = int(os.environ.get("HANG_AT", "0"))
STARTED = folder.parent / "started"  # the hung call's start, written by the system itself


def started():
    STARTED.write_text(repr(time.time()))

@exam_harness.system("sys", concurrency=1, timeout=float(os.environ.get("TIMEOUT", "60")))
def answer(query):
    with open(log, "a") as fh:
        fh.write(query.id + "\\n")
    if KILL_AT and len(log.read_text().split()) == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    if SLEEP >= 10:
        started()
    time.sleep(60 if HANG_AT and len(log.read_text().split()) == HANG_AT else SLEEP)
    return "answer " + query.id

if os.environ.get("FORM") == "async":  # an async system blocking its own event loop
    declared_system = exam_harness.system("sys-async", timeout=float(os.environ["TIMEOUT"]))
    @declared_system
    async def blocking(query):
        started()
        time.sleep(SLEEP)
        return "late"
elif os.environ.get("FORM") == "command":  # a command whose child keeps its output open
    exam_harness.command_system("sys-command", ["sh", "-c", f"date +%s.%N > {STARTED}; sleep {SLEEP}; echo late"],
                                timeout=float(os.environ["TIMEOUT"]))

queries = [Query(id=f"q{i}", text=f"query {i}") for i in range(int(os.environ.get("QUERIES", "8")))]
print("START", time.time(), flush=True)
try:
    outcome = SystemsPass("once", folder).run([(declared()[-1], queries)])
except KeyboardInterrupt as exc:
    print("INTERRUPTED", exc, flush=True)
    print("END", time.time(), flush=True)
    sys.exit(2)
print("FAILURES", len(outcome.failures), sorted(set(outcome.failures.values())), flush=True)
print("END", time.time(), flush=True)  # the harness is done: what follows is the interpreter's exit
'''


def child(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    script = tmp_path / "record.py"
    script.write_text(SCRIPT)
    (tmp_path / "runs").mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "runs")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO), **env})


def logged(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    found = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return found


def test_a_sigkill_after_k_answers_keeps_them_and_the_rerun_calls_only_the_rest(tmp_path: Path) -> None:
    killed = child(tmp_path, KILL_AT="4")  # killed during the 4th call: 3 answers finished
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert logged(tmp_path) == ["q0", "q1", "q2", "q3"]
    rerun = child(tmp_path)
    _out, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert logged(tmp_path) == ["q3", "q4", "q5", "q6", "q7"]
    recorded = json.loads((tmp_path / "runs" / "sys.system.json").read_text())
    assert len(recorded["queries"]) == 8 and not (tmp_path / "runs" / ".sys.journal.jsonl").exists()


def ended(out: str) -> float:
    """The time the child script said the harness was done (its END line)."""
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("END ")))


@pytest.mark.parametrize("form", ["sync", "async", "command"])
def test_a_deadline_of_2_s_on_a_25_s_call_ends_the_session_within_4_s(tmp_path: Path, form: str) -> None:
    session = child(tmp_path, SLEEP="25", TIMEOUT="2", QUERIES="1", FORM=form)
    out, err = session.communicate(timeout=60)
    exited = time.time()
    # from the hung call's start, as the system wrote it, to the process's exit (interpreter start-up
    # excluded, its exit included): the session does not wait for the 25 s call
    started = float((tmp_path / "started").read_text())
    print(f"TIMING deadline {form}: harness done {ended(out) - started:.2f} s, exited {exited - started:.2f} s")
    assert exited - started < 4, (f"call started {started}, harness done {ended(out) - started:.2f} s later, "
                                  f"process exited {exited - started:.2f} s later\n{out}{err}")
    assert "TimeoutError: no answer within 2 s" in out


def test_ctrl_c_with_a_hung_call_stops_at_once_on_the_second_and_keeps_what_finished(tmp_path: Path) -> None:
    session = child(tmp_path)
    session.communicate(timeout=60)  # a first recording of q0..q7
    logged(tmp_path)
    hung = child(tmp_path, SLEEP="60", QUERIES="10")  # q8 hangs; q9 waits behind it (concurrency 1)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    hung.send_signal(signal.SIGINT)
    time.sleep(0.3)
    second = time.time()
    hung.send_signal(signal.SIGINT)
    out, err = hung.communicate(timeout=30)
    exited = time.time()
    # the hung call sleeps 60 s: from the second Ctrl-C to the process's exit nothing waits for it
    print(f"TIMING ctrl-c script: harness done {ended(out) - second:.2f} s, exited {exited - second:.2f} s")
    assert exited - second < 2, (f"harness done {ended(out) - second:.2f} s after the second Ctrl-C, process exited "
                                 f"{exited - second:.2f} s after\n{out}{err}")
    assert "Traceback" not in err, err
    assert "interrupted; waiting for 1 call in flight" in err and "press Ctrl-C again to abandon them" in err
    assert "abandoning 1 call in flight" in err
    assert "INTERRUPTED interrupted while calling systems: 0 finished answers kept, 2 queries not answered" in out
    assert logged(tmp_path) == ["q8"]


def test_ctrl_c_wakes_the_scheduler_at_once_not_at_its_next_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal handler wakes the waiting scheduler: with a tick of a minute, two Ctrl-C still end the
    calls at once (before, the scheduler noticed an interrupt only when its wait ran out)."""
    import threading

    from exam_harness.features.live_systems import calling

    monkeypatch.setattr(calling, "TICK", 60.0)
    started, release = threading.Event(), threading.Event()

    @exam_harness.system("hangs", timeout=None)
    def hangs(query: Query) -> str:
        started.set()
        release.wait(60)
        return "late"

    sent: list[float] = []

    def press_ctrl_c_twice() -> None:
        started.wait(30)
        for _ in range(2):
            time.sleep(0.2)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c_twice, daemon=True)
    presser.start()
    try:
        with pytest.raises(calling.CallsInterrupted, match="0 finished answers kept, 1 query not answered"):
            calling.call_all(declare.declared()[0], EIGHT[:1], lambda called: None)
        assert len(sent) == 2 and time.monotonic() - sent[1] < 30  # not the minute-long tick
    finally:
        release.set()
        presser.join(30)


@pytest.mark.slow
def test_ctrl_c_in_a_pytest_session_exits_without_a_traceback(example: pytest.Pytester) -> None:
    # the frames of the interrupt's traceback pytest formats (reading and parsing each one's source)
    frames = '''
import pytest as _pytest

@_pytest.hookimpl(trylast=True)
def pytest_keyboard_interrupt(excinfo):
    (Path(__file__).parent / "frames").write_text(str(len(excinfo.traceback)))
'''
    example.makeconftest(conftest(concurrency=1, body="import time; time.sleep(60)", extra=frames))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # without this test environment's hypothesis plugin, whose end-of-session import of hypothesis (0.2 to
    # 0.9 s on a loaded machine) is no part of the harness
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
         "-W", "ignore::pytest.PytestAssertRewriteWarning",
         "--exam-grader", "lexical", "--exam-cache", "none", "--exam-no-progress"],
        cwd=example.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (example.path / "calls.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    session.send_signal(signal.SIGINT)
    time.sleep(0.3)
    second = time.time()
    session.send_signal(signal.SIGINT)
    out, err = session.communicate(timeout=30)
    exited = time.time()
    # the hung call sleeps 60 s: from the second Ctrl-C to the session's exit nothing waits for it
    print(f"TIMING ctrl-c pytest: exited {exited - second:.2f} s")
    assert exited - second < 2, f"the session exited {exited - second:.2f} s after the second Ctrl-C\n{out}{err}"
    assert session.returncode == pytest.ExitCode.INTERRUPTED
    assert "Traceback" not in out + err, out + err
    assert "press Ctrl-C again to abandon them" in err
    assert "interrupted while calling systems" in out
    assert (example.path / "frames").read_text() == "1"  # the harness's own frames are not formatted


def test_sigterm_is_an_interrupt_that_keeps_the_finished_answers(tmp_path: Path) -> None:
    hung = child(tmp_path, HANG_AT="3")  # q0, q1 answered; q2 hangs
    deadline = time.monotonic() + 30
    while len((tmp_path / "calls.log").read_text().split() if (tmp_path / "calls.log").exists() else []) < 3 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    hung.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    hung.send_signal(signal.SIGTERM)
    out, err = hung.communicate(timeout=30)
    assert "INTERRUPTED interrupted while calling systems: 2 finished answers kept, 6 queries not answered" in out, err
    assert logged(tmp_path) == ["q0", "q1", "q2"]
    rerun = child(tmp_path)
    rerun.communicate(timeout=60)
    assert logged(tmp_path) == ["q2", "q3", "q4", "q5", "q6", "q7"]


# -- never drop good data --------------------------------------------------------------------------------
def test_record_mode_keeps_the_recorded_answer_of_a_query_that_fails_now(tmp_path: Path) -> None:
    down: set[str] = set()

    @exam_harness.system("flaky", concurrency=1)
    def flaky(query: Query) -> str:
        if query.id in down:
            raise ConnectionError("index shard 3 is down")
        return f"answer {query.id}"

    system = declare.declared()[0]
    SystemsPass("record", tmp_path).run([(system, EIGHT)])
    down.add("q2")
    again = SystemsPass("record", tmp_path).run([(system, EIGHT)])
    assert list(again.failures) == [("flaky", "q2")]
    assert any("failed now on queries q2; their recorded answers are kept" in note for note in again.notes)
    assert again.health["flaky"].kept_after_failure == ["q2"]
    lines = [json.loads(line) for line in (tmp_path / "flaky.responses.jsonl").read_text().splitlines()]
    assert {line["query_id"]: line["response"] for line in lines}["q2"] == "answer q2"
    replayed = SystemsPass("replay", tmp_path).run([(system, EIGHT)])  # the next CI replay has every answer
    assert not replayed.failures


def test_a_mistyped_runs_folder_calls_nothing_unless_record_into_names_it(example: pytest.Pytester) -> None:
    example.makeconftest(conftest())
    typo = exam(example, "--exam-runs", "run")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(["*the runs folder run does not exist*--exam-record-into run*"])
    assert calls(example) == [] and not (example.path / "run").exists()
    new = exam(example, "--exam-runs", "runs", "--exam-record-into", "recorded")
    assert new.ret == 0, new.stdout.str()
    assert sorted(calls(example)) == sorted(QUERIES)
    assert (example.path / "recorded" / "dict-rag.system.json").exists()
    assert not (example.path / "runs" / "dict-rag.system.json").exists()


def test_the_dry_run_calls_no_system(example: pytest.Pytester) -> None:
    example.makeconftest(conftest())
    dry = exam(example, "--exam-dry-run")
    assert dry.ret == 0, dry.stdout.str()
    assert calls(example) == []
    dry.stdout.fnmatch_lines(["*dry run: system 'dict-rag' has no recording; a session would call it for 4 queries "
                              "(nothing was called)*"])


def test_several_systems_are_called_together(tmp_path: Path) -> None:
    import threading

    running: set[str] = set()
    seen_together: set[frozenset[str]] = set()
    lock = threading.Lock()

    def make(name: str) -> None:
        @exam_harness.system(name, concurrency=1)
        def slow(query: Query) -> str:
            with lock:
                running.add(name)
                seen_together.add(frozenset(running))
            time.sleep(0.05)
            with lock:
                running.discard(name)
            return "x"

    make("first")
    make("second")
    SystemsPass("once", tmp_path).run([(s, EIGHT[:3]) for s in declare.declared()])
    assert frozenset({"first", "second"}) in seen_together


def test_an_object_imported_from_a_project_module_covers_that_module(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # the README's shape: `chain.invoke(query.text)` with `chain` an object built in the project's code
    from exam_harness.features.live_systems.fingerprint import python_covers

    chain_v1 = "class Chain:\n    def invoke(self, text):\n        return text\n\nchain = Chain()\n"
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trust_chains.py").write_text(chain_v1)
    (tmp_path / "trust_declared.py").write_text(
        "from trust_chains import chain\n\ndef my_rag(query):\n    return chain.invoke(query.text)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import trust_declared  # type: ignore[import-not-found]

        before = python_covers(trust_declared.my_rag, [], None, "trust_declared.py")
        assert "module trust_chains.py" in before
        (tmp_path / "trust_chains.py").write_text(chain_v1.replace("return text", "return text.upper()"))
        after = python_covers(trust_declared.my_rag, [], None, "trust_declared.py")
        assert after["module trust_chains.py"] != before["module trust_chains.py"]
    finally:
        sys.modules.pop("trust_declared", None)
        sys.modules.pop("trust_chains", None)
