"""Every grade says why (issue 20): the grade's reason and the best passage's text, cut, beside its id, as a
user reads them in ``-rs``, the JSON report, the markdown summary and the HTML drill-down (in Chromium);
never for a secret bank, whose answering passage or a reason quoting it would tell the secret answer."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_openai_server import FakeAnswer, FakeOpenAIServer
from tests.report.support import _browse, parse

pytest_plugins = ["pytester"]

# A grader whose reason quotes the passage, as the default grader quotes its best span: grade 5 when a
# gold answer is in the passage, else 1.
CONFTEST = '''
from exam_harness.graders.base import Grader
from exam_harness.core.models import Grade, GraderSpec

class QuotingGrader(Grader):
    name = "quoting"
    def __init__(self, config):
        pass
    def spec(self):
        return GraderSpec(name="quoting", version="1", default_min_grade=4)
    def grade_batch(self, requests):
        out = []
        for r in requests:
            found = any(g.lower() in r.passage.text.lower() for g in r.test_point.gold_answers)
            out.append(Grade(grade=5 if found else 1, grader="quoting",
                             raw_response="best span: " + r.passage.text[:70]))
        return out

def pytest_exam_register_graders(registry):
    registry.register("quoting", QuotingGrader, "test grader")
'''

BANK = """\
queries:
  - id: q1
    text: home battery storage
    questions:
      - {id: q1/hours, text: How long does the pack supply its rated power, answers: [four hours]}
"""
GOLD = "four hours"
ANSWERING = "The pack supplies its rated power for four hours before it needs charging again from the panels."
OTHER = ("Lithium iron phosphate cells tolerate many thousands of cycles and rarely catch fire, which is why "
         "installers prefer them for garages, basements and other rooms of a house where people spend little "
         "time but which must stay safe.")
COLLECTION = f"id\ttext\np1\t{ANSWERING}\np2\t{OTHER}\n"
RUNS = {"good.run": "q1 Q0 p1 1 2.0 good\n", "weak.run": "q1 Q0 p2 1 2.0 weak\n"}
CUT = OTHER[:159] + "…"  # the best passage's text as every output cuts it (160 characters)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(textwrap.dedent("""
        [pytest]
        exam_grader = quoting
        exam_banks = banks
        exam_runs = runs
        exam_cache = .cache/grades.sqlite
        exam_report_dir = reports
        """))
    (pytester.path / "banks").mkdir()
    (pytester.path / "banks" / "exam.yaml").write_text(BANK)
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "collection.tsv").write_text(COLLECTION)
    for name, text in RUNS.items():
        (pytester.path / "runs" / name).write_text(text)
    return pytester


def _outcome(project: pytest.Pytester, run: str) -> dict[str, object]:
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    [found] = [o for o in report["outcomes"] if o["run"] == run]
    return dict(found)


def test_a_miss_says_why_in_every_output(project: pytest.Pytester, tmp_path: Path) -> None:
    result = project.runpytest("banks", "-rs", "--exam-markdown=summary.md", "--exam-html=html")
    reason = "best span: " + OTHER[:70]
    result.stdout.fnmatch_lines([
        f"MISSED banks/exam.yaml::q1::q1/hours[[]weak[]] - missed 'How long does the pack supply its rated power': "
        f"best grade 1 (passage p2 {CUT!r}, reason {reason!r}) < min grade 4 in the run's top 20"])
    missed = _outcome(project, "weak")
    assert (missed["reason"], missed["best_passage_text"], missed["best_grade"]) == (reason, CUT, 1)
    answered = _outcome(project, "good")
    assert (answered["reason"], answered["best_passage_text"]) == ("best span: " + ANSWERING[:70], ANSWERING)
    summary = (project.path / "summary.md").read_text()
    assert f"best grade 1 (passage `p2` “{CUT}”, reason `{reason}`)" in summary
    # the HTML drill-down as Chromium shows it: the passage's text beside its id, the reason in its column
    page = project.path / "html" / "index.html"
    dom = parse(_browse(tmp_path, page.as_uri(), "--dump-dom").stdout.decode("utf-8"))
    [row] = dom.find("details", data_run="weak").find_all("tr", cls="tp")
    assert row.find("summary").find("code").text() == "p2"
    assert row.find("span", cls="passage-text").text() == CUT
    assert row.find("td", cls="reason").text() == reason


def test_a_secret_banks_reasons_and_passages_stay_out(project: pytest.Pytester) -> None:
    """The quoting grader's reason holds the gold answer, and so does the answering passage: a secret bank
    shows neither, in any output."""
    (project.path / "banks" / "exam.yaml").write_text("secret: true\n" + BANK)
    (project.path / "runs" / "weak.run").write_text("q1 Q0 p2 1 2.0 weak\nq1 Q0 p1 2 1.0 weak\n")
    (project.path / "runs" / "good.run").write_text("q1 Q0 p2 1 2.0 good\n")  # misses: p2 is its best
    result = project.runpytest("banks", "-v", "-rA", "-l", "--junitxml=junit.xml", "--exam-markdown=summary.md",
                               "--exam-html=html")
    assert result.ret == 0
    shown = [result.stdout.str(), result.stderr.str()]
    shown += [p.read_text() for p in (project.path / "reports").rglob("*") if p.is_file()]
    shown += [(project.path / name).read_text() for name in ("junit.xml", "summary.md", "html/index.html")]
    everything = "\n".join(shown).lower()
    assert GOLD not in everything and "rated power" not in everything and "best span" not in everything
    result.stdout.fnmatch_lines(["*q1/*[[]good[]] - missed: best grade 1 (passage p2) < min grade 4*"])
    assert all(o["reason"] is None and o["best_passage_text"] is None
               for o in json.loads((project.path / "reports" / "exam-report.json").read_text())["outcomes"])


def test_the_answer_key_says_whether_a_gold_answer_was_found(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "-rs", "--exam-grader=answer-key", "--exam-cases=query")
    result.stdout.fnmatch_lines(["  q1/hours: missed *: best grade 0 (passage p2 *, reason 'no gold answer in the "
                                 "passage (closest span at relative edit distance 0.* >= 0.2)') < min grade 1 *"])
    # the grade (and the cache) names no gold answer; a bank that is not secret shows which one was found
    assert _outcome(project, "good")["reason"] == (
        "gold answer 'four hours' found in the passage (relative edit distance 0.00 < 0.2)")
    (project.path / "banks" / "exam.yaml").write_text("secret: true\n" + BANK)
    project.runpytest("banks", "--exam-grader=answer-key")
    assert _outcome(project, "good")["reason"] is None
    stored = [p.read_bytes() for p in (project.path / ".cache").iterdir() if p.is_file()]  # with a WAL file
    assert stored and not any(GOLD.encode() in data for data in stored)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    def responder(prompt: str) -> FakeAnswer:
        said = "four hours" if "four hours" in prompt else "no figure for how long"
        return FakeAnswer(f"2 - the passage is about the pack but gives {said}")

    with FakeOpenAIServer(responder) as srv:
        yield srv


def test_an_llm_graders_reason_is_its_raw_answer(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    options = [f"base_url={server.base_url}", "model=fake-model", "api_key=test", "timeout=5"]
    args = ["banks", "-rs", "--exam-grader", "openai"] + [a for o in options for a in ("--exam-grader-option", o)]
    result = project.runpytest(*args)
    # an answer holding no lone digit: grade 1 by the method's fallback rule, and the raw answer shows why
    result.stdout.fnmatch_lines(["*[[]weak[]] - missed *: best grade 1 (passage p2 *, reason '2 - the passage is "
                                 "about the pack but gives no figure for how long') < min grade *"])
    assert _outcome(project, "good")["reason"] == "2 - the passage is about the pack but gives four hours"
