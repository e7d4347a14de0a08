"""Issue 39, findings 13 and 14: live systems a new user starts the usual way never go stale in silence.

A command system run as ``python -m MODULE`` is covered like the file form; a config file a Python system
reads from disk without ``files=`` is seen while recording (an audit hook, PEP 578) and covered by the
recording, so editing it makes CI fail; ``files=`` outside the project root is refused; a link loop in a
``files=`` folder ends. What the session says is true and said once: why a local session records again
(a conftest that rewrites a module at import names that module), a package's old and new version, the
answers a killed session journaled (resumed, or called again because the system changed), a system no
longer declared whose recording still makes its run incomplete.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.features.live_systems.fingerprint import changed_files, command_covers, plain_covers
from exam_harness.features.live_systems.health import SystemHealth
from tests.features.live_systems.support import QUERIES, calls, conftest, exam, manifest
from tests.features.live_systems.support import example as example  # fixture
from tests.paths import REPO

pytest_plugins = ["pytester"]


# -- what the fingerprint covers -------------------------------------------------------------------------


def test_python_dash_m_covers_the_module_and_what_it_imports_like_the_file_form(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag" / "__init__.py").write_text("")
    (tmp_path / "rag" / "cli.py").write_text("from rag import util\n\nprint(util.answer())\n")
    (tmp_path / "rag" / "util.py").write_text("def answer():\n    return 'a'\n")
    argv = ["python", "-m", "rag.cli", "{query.text}"]
    before = command_covers(argv, str(tmp_path), [], None, "conftest.py:1")
    assert {"module rag/cli.py", "module rag/util.py", "module rag/__init__.py"} <= set(before)
    assert command_covers([sys.executable, "-mrag.cli"], str(tmp_path), [], None, "x").keys() >= {"module rag/cli.py"}
    (tmp_path / "rag" / "util.py").write_text("def answer():\n    return 'b'\n")  # a module the module imports
    after = command_covers(argv, str(tmp_path), [], None, "conftest.py:1")
    assert changed_files(before, after) == ["module rag/util.py"]
    # a package run with -m: its __main__.py; an option's value naming a project file is covered too
    (tmp_path / "rag" / "__main__.py").write_text("import rag.cli\n")
    (tmp_path / "prompt.txt").write_text("Answer briefly.")
    covers = command_covers(["python3", "-m", "rag", "--prompt=prompt.txt"], str(tmp_path), [], None, "x")
    assert {"module rag/__main__.py", "module rag/cli.py", "module prompt.txt"} <= set(covers)


@pytest.mark.parametrize("outside", ["/etc/passwd", "../outside.txt", "prompts/../../outside.txt"])
def test_files_outside_the_project_root_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   outside: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (tmp_path / "outside.txt").write_text("not the project's")
    monkeypatch.chdir(project)
    with pytest.raises(ConfigError, match="names a path outside the project root"):
        plain_covers([outside], None, "conftest.py:3")


def test_a_link_loop_in_a_files_folder_ends_and_covers_the_real_files(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    prompts = tmp_path / "prompts"
    (prompts / "sub").mkdir(parents=True)
    (prompts / "a.txt").write_text("a")
    (prompts / "sub" / "b.txt").write_text("b")
    (prompts / "sub" / "up").symlink_to("..")  # a folder linking back to its parent
    (prompts / "self").symlink_to(".")
    (prompts / "loop-1").symlink_to("loop-2")  # two links naming each other
    (prompts / "loop-2").symlink_to("loop-1")
    monkeypatch.chdir(tmp_path)
    found: dict[str, dict[str, str]] = {}
    worker = threading.Thread(target=lambda: found.setdefault("covers", plain_covers(["prompts"], None, "x")),
                              daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the walk of a folder with a link loop did not end"
    assert sorted(found["covers"]) == ["file prompts/a.txt", "file prompts/sub/b.txt"]


# -- files a system reads from disk ----------------------------------------------------------------------
READER = '''
@exam_harness.system("reader", concurrency=2)
def reader(query):
    prompt = (Path(__file__).parent / "config" / "prompt.txt").read_text()
    with open(Path(__file__).parent / "calls.log", "a") as log:
        log.write(query.id + "\\n")
    return prompt + " " + ANSWERS.get(query.id, "")
'''


@pytest.mark.slow
def test_a_file_the_system_reads_without_files_is_covered_by_the_recording(
        example: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (example.path / "config").mkdir()
    (example.path / "config" / "prompt.txt").write_text("Briefly:")
    example.makeconftest(conftest(extra=READER))
    first = exam(example)
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(["*system 'reader' read project file its declaration does not cover: "
                                "config/prompt.txt; the recording covers it*name them with files=*"])
    recorded = manifest(example, "reader")["queries"]
    assert all(set(info["reads"]) == {"config/prompt.txt"} for info in recorded.values())  # calls.log: written
    calls(example)

    (example.path / "config" / "prompt.txt").write_text("At length:")  # the template changes, the code does not
    monkeypatch.setenv("CI", "true")
    stale = exam(example)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED, stale.stdout.str()
    stale.stdout.fnmatch_lines(["*stale recording: system 'reader': 4 of its recorded answers were made by another "
                                "version of the system (changed: file config/prompt.txt (read by its calls))*"])
    assert calls(example) == []
    monkeypatch.delenv("CI")
    again = exam(example)
    assert again.ret == 0, again.stdout.str()
    again.stdout.fnmatch_lines(["*system 'reader': 4 recorded answers were made by another version of the system "
                                "(changed: file config/prompt.txt (read by its calls)); called again*"])
    assert sorted(calls(example)) == sorted(QUERIES)
    assert exam(example).ret == 0 and calls(example) == []  # recorded from the file as it is: fresh


CACHING = '''
import json as _json


@exam_harness.system("caching", concurrency=1)
def caching(query):
    cache = Path(__file__).parent / "answers-cache.json"
    known = _json.loads(cache.read_text()) if cache.exists() else {}
    with open(Path(__file__).parent / "calls.log", "a") as log:
        log.write(query.id + "\\n")
    if query.id not in known:  # a miss: filled in, as a cache is
        known[query.id] = ANSWERS.get(query.id, "")
        cache.write_text(_json.dumps(known))
    return known[query.id]
'''


def test_a_file_the_system_writes_is_its_state_not_an_input(example: pytest.Pytester) -> None:
    """A cache the system reads in one call and fills in another changes under every call: it is no input of
    the answers, or every later session would find it changed and record the system again."""
    example.makeconftest(conftest(extra=CACHING))
    tides = "The gravitational pull of the moon raises two tidal bulges; spring and neap tides follow."
    (example.path / "answers-cache.json").write_text(json.dumps({"tides": tides}))  # tides: read, not written
    assert exam(example).ret == 0
    assert len(calls(example)) == 2 * len(QUERIES)  # dict-rag's and caching's
    assert all("reads" not in info for info in manifest(example, "caching")["queries"].values())
    assert exam(example).ret == 0 and calls(example) == []  # nothing changed: nothing is called again


REWRITER = '''
import time
(Path(__file__).parent / "generated.py").write_text(f"STAMP = {time.time_ns()!r}\\n")  # rewritten at import
import generated


@exam_harness.system("stamped")
def stamped(query):
    return str(generated.STAMP and ANSWERS.get(query.id, ""))
'''


def test_a_conftest_rewriting_a_module_at_import_names_it_when_the_system_records_again(
        example: pytest.Pytester) -> None:
    example.makeconftest(conftest(extra=REWRITER))
    assert exam(example).ret == 0
    again = exam(example)
    assert again.ret == 0, again.stdout.str()
    again.stdout.fnmatch_lines(["*system 'stamped': 4 recorded answers were made by another version of the system "
                                "(changed: module generated.py); called again*"])


def test_a_changed_package_is_named_with_its_old_and_new_version() -> None:
    assert changed_files({"package rank-bm25": "0.2.1", "module rag.py": "aa"},
                         {"package rank-bm25": "0.2.2", "module rag.py": "bb"}) == [
        "module rag.py", "package rank-bm25 0.2.1 -> 0.2.2"]
    assert changed_files({"version": "v1"}, {}) == ["version v1 -> (none)"]
    health = SystemHealth(system="bm25", mode="replay", stale_policy="fail", stale_queries=["q1"],
                          files_changed=changed_files({"package rank-bm25": "0.2.1"}, {"package rank-bm25": "0.2.2"}))
    assert "(changed: package rank-bm25 0.2.1 -> 0.2.2)" in health.stale_message()


# -- what the session says -------------------------------------------------------------------------------
KILLER = '''
import os, signal
KILL = Path(__file__).parent / "kill"


@exam_harness.system("killed", concurrency=1)
def killed(query):
    log = Path(__file__).parent / "killed.log"
    with open(log, "a") as fh:
        fh.write(query.id + "\\n")
    if KILL.exists() and len(log.read_text().split()) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return ANSWERS.get(query.id, "") + SUFFIX
'''


def _record(example: pytest.Pytester) -> pytest.RunResult:
    code = "import sys; from exam_harness.cli import main; sys.exit(main(['record', '--system', 'killed']))"
    return example.run(sys.executable, "-c", code)


def _killed_calls(example: pytest.Pytester) -> list[str]:
    log = example.path / "killed.log"
    found = log.read_text().split()
    log.unlink()
    return found


@pytest.mark.parametrize("edited", [False, True], ids=["same system", "system edited"])
def test_the_resume_line_after_a_kill_is_said_once_and_says_what_happened(example: pytest.Pytester,
                                                                         edited: bool) -> None:
    example.makeconftest(conftest(extra=KILLER.replace("SUFFIX", "''")))
    (example.path / "kill").write_text("")
    killed = _record(example)
    assert killed.ret == -signal.SIGKILL, killed.stdout.str()
    assert len(_killed_calls(example)) == 3  # two answers journaled, killed during the third call
    (example.path / "kill").unlink()
    if edited:
        example.makeconftest(conftest(extra=KILLER.replace("SUFFIX", "' (edited)'")))
    rerun = _record(example)
    assert rerun.ret == 0, rerun.stdout.str() + rerun.stderr.str()
    said = [line for line in rerun.stdout.lines if "cut-short session journaled" in line]
    assert len(said) == 1, rerun.stdout.str()
    if edited:
        assert "2 answers a cut-short session journaled were made by another version of the system (changed: " \
               "function conftest.py::killed), so called again" in said[0]
        assert sorted(_killed_calls(example)) == sorted(QUERIES)
    else:
        assert "2 answers a cut-short session journaled were resumed, not called again" in said[0]
        assert len(_killed_calls(example)) == len(QUERIES) - 2


def test_a_system_no_longer_declared_is_said_with_how_to_remove_its_recording(example: pytest.Pytester) -> None:
    failing = "if query.id == 'sky':\n        raise RuntimeError('index is down')"
    example.makeconftest(conftest(body=failing))
    assert exam(example).ret == pytest.ExitCode.TESTS_FAILED  # failed on one query: recorded with its error
    assert manifest(example, "dict-rag")["errors"]
    example.makeconftest((REPO / "conftest.py").read_text())  # the system is removed
    later = exam(example)
    assert later.ret == pytest.ExitCode.TESTS_FAILED  # its recording still makes run dict-rag incomplete
    out = later.stdout.str()
    assert "warning: system 'dict-rag' is no longer declared, yet its recording in " in out, out
    assert "is scored as run 'dict-rag'; the query it failed on (sky) makes that run incomplete" in out
    assert f"to drop it, remove {example.path / 'runs' / 'dict-rag.system.json'}" in out.replace("\n", "")
    os.remove(example.path / "runs" / "dict-rag.system.json")
    os.remove(example.path / "runs" / "dict-rag.responses.jsonl")
    assert exam(example).ret == 0
    assert json.loads((example.path / "reports" / "exam-report.json").read_text())["systems"]
