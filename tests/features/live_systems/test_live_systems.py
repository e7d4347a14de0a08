"""Live systems declared in conftest.py: examined beside the file runs, recorded, replayed (issue 18).

Each test builds the example project (banks/, runs/, the example conftest with its cheap lexical
grader) and adds systems to its conftest.py; sessions run in process, and read the JSON report and
the JUnit XML back the way a user's tooling would.
"""

from __future__ import annotations

import html
import json
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.features.live_systems.support import QUERIES, RANKING_SYSTEM, calls, conftest, exam, manifest
from tests.features.live_systems.support import example as example  # fixture

pytest_plugins = ["pytester"]

def covers(pytester: pytest.Pytester, folder: str = "reports") -> dict[str, float]:
    from exam_harness.results.read import read_report

    return read_report(pytester.path / folder / "exam-report.json").means("exam-cover")


def junit_errors(pytester: pytest.Pytester) -> dict[str, str]:
    """name -> message of every case the JUnit XML reports as an error."""
    root = ET.parse(pytester.path / "junit.xml").getroot()
    return {case.get("name", ""): (error.get("message") or "") for case in root.iter("testcase")
            for error in case.findall("error")}


@pytest.mark.slow
def test_a_dict_system_is_examined_with_the_file_runs_and_replayed_in_ci(example: pytest.Pytester,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    example.makeconftest(conftest(extra=RANKING_SYSTEM))
    first = exam(example)
    assert first.ret == 0, first.stdout.str()
    scores = covers(example)
    assert set(scores) == {"strong-ranker", "weak-ranker", "rag-generator", "dict-rag", "dict-retriever"}
    assert sorted(calls(example)) == sorted(QUERIES)
    runs = example.path / "runs"
    lines = [json.loads(line) for line in (runs / "dict-rag.responses.jsonl").read_text().splitlines()]
    assert {line["query_id"]: line["response"] for line in lines}["sky"].startswith("Rayleigh")
    assert (runs / "dict-retriever.run").read_text().count("dict-retriever") == 2 * len(QUERIES)
    recorded = manifest(example, "dict-rag")
    assert recorded["fingerprint"] and set(recorded["queries"]) == set(QUERIES)
    assert recorded["harness_version"] and not recorded["errors"]

    # CI replays the committed recording: a system that would raise if called gives the same scores; it
    # was edited since, so the recording is stale, which fails CI (stale=fail) with a case of its own
    example.makeconftest(conftest(body="raise RuntimeError('called in CI')", extra=RANKING_SYSTEM))
    monkeypatch.setenv("CI", "true")
    replayed = exam(example)
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED, replayed.stdout.str()
    assert covers(example) == scores
    assert calls(example) == []
    # the summary line is the report's live-systems section, said beside the stale note the pass made
    replayed.stdout.fnmatch_lines([
        "*stale recording: system 'dict-rag': 4 of its recorded answers were made by another version of the system "
        "(changed: function conftest.py::dict_rag)*"])
    replayed.stdout.fnmatch_lines([
        "systems (replay, stale=fail (default under CI=true)): 0 calls, 8 answers replayed; stale: dict-rag"])
    root = ET.parse(example.path / "junit.xml").getroot()
    stale_cases = {case.get("name"): case.find("failure") for case in root.iter("testcase")
                   if case.get("classname") == "exam gates"}
    failure = stale_cases["exam-stale[dict-rag]"]
    assert failure is not None and "stale=fail (default under CI=true)" in (failure.get("message") or "")
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    assert report["verdict"]["passed"] is False
    assert [g["gate"] for g in report["verdict"]["gates"] if not g["passed"]] == ["exam-stale"]
    shown = exam(example, "--exam-markdown", "summary.md", "--exam-html", "html")
    assert shown.ret == pytest.ExitCode.TESTS_FAILED
    assert "exam-stale" in (example.path / "summary.md").read_text()
    assert "exam-stale" in "".join(p.read_text() for p in (example.path / "html").rglob("*.html"))
    # told to warn, the same replay passes, saying so
    warned = exam(example, "--exam-stale=warn")
    assert warned.ret == 0, warned.stdout.str()
    warned.stdout.fnmatch_lines(["systems (replay, stale=warn (--exam-stale)): 0 calls, 8 answers replayed*"])


def test_ci_without_a_recording_fails_naming_the_system(example: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    example.makeconftest(conftest())
    monkeypatch.setenv("CI", "true")
    result = exam(example)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*replay mode calls no system*", "*system 'dict-rag': no recording in*"])
    assert calls(example) == []


@pytest.mark.slow
def test_a_system_failing_on_one_query_errs_on_exactly_those_cases(example: pytest.Pytester) -> None:
    # the shard is down while the file "down" exists: the system's source stays the same
    example.makeconftest(conftest(body="""if query.id == 'sky' and (Path(__file__).parent / "down").exists():
        raise ConnectionError('index shard 3 is down')"""))
    (example.path / "down").write_text("")
    result = exam(example)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = junit_errors(example)
    assert errors and all(name.startswith("sky/") and name.endswith("[dict-rag]") for name in errors)
    assert all("index shard 3 is down" in message for message in errors.values())
    n_sky = sum(1 for line in example.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning", "-k",
                                                "sky and dict-rag").stdout.lines if "::sky::" in line)
    assert len(errors) == n_sky > 0
    result.stdout.fnmatch_lines([
        "! incomplete: systems failed on some queries; the scores of 'dict-rag' (1 of 4 queries) count them as not*",
        "*FAIL incomplete exam: systems failed ('dict-rag' on 1 query)*"])
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    assert {s["run"]: s["incomplete_queries"] for s in report["systems"]}["dict-rag"] == ["sky"]
    recorded = manifest(example, "dict-rag")
    assert set(recorded["queries"]) == set(QUERIES) - {"sky"}
    assert "index shard 3 is down" in recorded["errors"]["sky"]["error"]
    calls(example)
    # nothing was recorded for the failed query: the next session asks again, and only for it
    (example.path / "down").unlink()
    again = exam(example)
    assert again.ret == 0, again.stdout.str()
    assert calls(example) == ["sky"]


def test_a_system_failing_on_every_query_is_said_once_while_each_case_stays_an_error(example: pytest.Pytester) -> None:
    example.makeconftest(conftest(body="raise ConnectionError('index is down')"))
    result = exam(example)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = junit_errors(example)
    assert len(errors) > len(QUERIES) and all(name.endswith("[dict-rag]") for name in errors)
    out = result.stdout.str()
    # one block in pytest's ERRORS section for the system, not one per case
    assert out.count("ERROR at setup of") == 1, out
    result.stdout.fnmatch_lines([
        f"system 'dict-rag' failed on 4 queries, so its {len(errors)} cases of them err (said once here;*",
        "  on photosynthesis, sky, tides, vaccines: failed after 1 attempt: ConnectionError: index is down",
        f"*{len(errors)} errors*"])
    # every case is still an error in the short summary
    assert sum(1 for line in result.stdout.lines if line.startswith("ERROR ") and "[dict-rag]" in line) == len(errors)

GOOD = "The moon's gravity. Two high tides occur at most coastal places each day. Chlorophyll absorbs light."


class _Answering(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = json.dumps({"data": {"answer": f"Answer to {body['q']}: {GOOD}"},
                            "usage": {"total_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/answer"
    httpd.shutdown()
    httpd.server_close()


def test_an_http_system_and_a_command_system_are_examined(example: pytest.Pytester, server: str) -> None:
    (example.path / "chain.py").write_text(f"import sys\nprint('The answer for', sys.argv[1], 'is:', {GOOD!r})\n")
    example.makeconftest(conftest() + f'''
exam_harness.http_system("prod-rag", url={server!r}, body={{"q": "{{query.text}}"}}, answer="data.answer",
                         tokens="usage.total_tokens")
exam_harness.command_system("legacy", [{sys.executable!r}, str(Path(__file__).parent / "chain.py"), "{{query.id}}"])
''')
    result = exam(example, "-k", "prod-rag or legacy")
    assert result.ret == 0, result.stdout.str()
    assert set(covers(example, "reports/partial")) >= {"prod-rag", "legacy"}
    runs = example.path / "runs"
    http = [json.loads(line) for line in (runs / "prod-rag.responses.jsonl").read_text().splitlines()]
    assert {line["query_id"] for line in http} == set(QUERIES)
    assert any(line["response"] == f"Answer to what causes ocean tides: {GOOD}" for line in http)
    assert manifest(example, "prod-rag")["totals"]["tokens"] == 7 * len(QUERIES)
    command = [json.loads(line) for line in (runs / "legacy.responses.jsonl").read_text().splitlines()]
    assert {line["response"] for line in command} == {f"The answer for {q} is: {GOOD}" for q in QUERIES}
    assert calls(example) == []  # -k left dict-rag's cases out: it was not called


def test_editing_the_system_records_it_again_in_once_mode(example: pytest.Pytester) -> None:
    example.makeconftest(conftest())
    assert exam(example).ret == 0
    assert len(calls(example)) == len(QUERIES)
    assert exam(example).ret == 0
    assert calls(example) == []  # recorded, unchanged: nothing is called
    before = manifest(example, "dict-rag")["fingerprint"]
    example.makeconftest(conftest(body="ANSWERS['sky'] = 'Blue light scatters more.'"))
    assert exam(example).ret == 0
    assert sorted(calls(example)) == sorted(QUERIES)
    assert manifest(example, "dict-rag")["fingerprint"] != before
    assert "Blue light scatters more." in (example.path / "runs" / "dict-rag.responses.jsonl").read_text()


@pytest.mark.slow
def test_an_interrupted_recording_resumes_without_calling_finished_queries(example: pytest.Pytester) -> None:
    # while the file "interrupt" exists, the third call is interrupted (Ctrl-C); one call at a time, so two
    # queries are finished by then
    here = "Path(__file__).parent"
    example.makeconftest(conftest(concurrency=1, body=f"""if ({here} / "interrupt").exists() and \\
            len(({here} / "calls.log").read_text().split()) == 3:
        raise KeyboardInterrupt"""))
    (example.path / "interrupt").write_text("")
    interrupted = exam(example, subprocess=True)  # in process, pytester passes the interrupt on to this test
    assert interrupted.ret == pytest.ExitCode.INTERRUPTED
    called_first = calls(example)
    finished = set(manifest(example, "dict-rag")["queries"])
    assert finished == set(called_first[:2])
    (example.path / "interrupt").unlink()  # the system's source is the same: the recording resumes
    resumed = exam(example)
    assert resumed.ret == 0, resumed.stdout.str()
    called_again = calls(example)
    assert sorted(called_again) == sorted(set(QUERIES) - finished)
    assert set(manifest(example, "dict-rag")["queries"]) == set(QUERIES)


@pytest.mark.slow
def test_record_and_queries_subcommands(example: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    assert main(["queries", str(example.path / "banks"), "--format", "jsonl"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [q["query_id"] for q in listed] == QUERIES and listed[0]["text"] == "what causes ocean tides"
    assert main(["queries", str(example.path / "banks")]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "sky\twhy is the sky blue"

    example.makeconftest(conftest(extra=RANKING_SYSTEM))
    code = f"import sys; from exam_harness.cli import main; sys.exit(main({['record', '--system', 'dict-rag']!r}))"
    recorded = example.run(sys.executable, "-c", code)
    assert recorded.ret == 0, recorded.stderr.str()
    recorded.stdout.fnmatch_lines(["dict-rag: 4 queries recorded"])
    assert sorted(calls(example)) == sorted(QUERIES)
    assert (example.path / "runs" / "dict-rag.system.json").exists()
    assert not (example.path / "runs" / "dict-retriever.system.json").exists()  # --system: that one only
    assert not (example.path / "reports").exists()  # nothing graded
    unknown = example.run(sys.executable, "-c", code.replace("dict-rag", "nope"))
    assert unknown.ret == 4
    unknown.stderr.fnmatch_lines(["*no declared system 'nope'; declared: dict-rag, dict-retriever*"])


def test_queries_piped_into_a_reader_that_stops_early_ends_quietly(example: pytest.Pytester) -> None:
    """``exam-harness queries banks | head -1``: a reader that went away ends the command without a traceback
    (here the reader closes before anything is written, so every write meets the closed pipe)."""
    import subprocess
    import sys

    script = ("import sys; sys.argv = ['exam-harness', 'queries', 'banks', '--format', 'tsv']; "
              "from exam_harness.cli import main; raise SystemExit(main())")
    with subprocess.Popen([sys.executable, "-c", script], cwd=example.path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        errors = process.stderr.read().decode()
        status = process.wait(timeout=120)
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    assert status == 141


def test_a_stale_recording_under_warn_is_in_every_output(example: pytest.Pytester) -> None:
    """Issue 28, item 2: the live systems' health is a section of the result document, so a stale recording a
    session only warns of reaches the JSON, the markdown summary and the HTML report, naming what changed."""
    example.makeconftest(conftest())
    assert exam(example).ret == 0
    example.makeconftest(conftest(body="x = 1"))  # the system's source changed since it was recorded
    warned = exam(example, "--exam-system-mode", "replay", "--exam-stale=warn", "--exam-markdown", "summary.md",
                  "--exam-html", "html")
    assert warned.ret == 0, warned.stdout.str()
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    live = report["sections"]["live-systems"]
    assert live["mode"] == "replay" and live["policy"] == "stale=warn (--exam-stale)"
    health = {h["system"]: h for h in live["systems"]}
    assert health["dict-rag"]["stale_policy"] == "warn"
    assert health["dict-rag"]["stale_queries"] == sorted(QUERIES)
    assert health["dict-rag"]["files_changed"] == ["function conftest.py::dict_rag"]
    assert live["calls"] == 0 and health["dict-rag"]["replayed"] == len(QUERIES)
    markdown = (example.path / "summary.md").read_text()
    assert "stale=warn (--exam-stale)" in markdown and "stale recording: system" in markdown
    assert "conftest.py::dict\\_rag" in markdown  # escaped: renders as dict_rag
    page = "".join(p.read_text() for p in (example.path / "html").rglob("*.html"))
    assert 'id="live-systems"' in page and "stale=warn (--exam-stale)" in page
    assert "conftest.py::dict_rag" in page and "stale recording: system" in page


def test_an_empty_answer_is_said_once_per_system_and_is_in_every_output(example: pytest.Pytester) -> None:
    """Issue 28, item 8: an empty answer is recorded and scored 0, and says so: a warning naming the system
    and its queries, counted, and a line of the live-systems section (JSON, markdown, HTML)."""
    example.makeconftest(conftest(body="if query.id in ('sky', 'vaccines'):\n        return '  '"))  # none required
    result = exam(example, "--exam-markdown", "summary.md", "--exam-html", "html")
    assert result.ret == 0, result.stdout.str()
    said = "system 'dict-rag' gave an empty answer for 2 queries (sky, vaccines); recorded as given, each scores 0"
    assert sum(1 for line in result.stdout.lines if said in line) == 1, result.stdout.str()
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    health = {h["system"]: h for h in report["sections"]["live-systems"]["systems"]}
    assert health["dict-rag"]["empty_answers"] == ["sky", "vaccines"]
    assert said in (example.path / "summary.md").read_text()
    assert html.escape(said) in "".join(p.read_text() for p in (example.path / "html").rglob("*.html"))
    assert sorted(calls(example)) == sorted(QUERIES)
    # replayed, the recorded empty answers are said again
    replayed = exam(example, "--exam-system-mode", "replay")
    assert replayed.ret == 0 and calls(example) == []
    assert any(said in line for line in replayed.stdout.lines)
