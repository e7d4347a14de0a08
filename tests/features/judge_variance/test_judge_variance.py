"""Judge variance, measured (issue 20, item 3): an LLM grader asked ``repeats=K`` times per pair against a local
OpenAI-compatible server that answers each prompt from a seeded sequence; each sample is cached under its
index; the reducer makes the pair's grade; every output shows the spread, the flaky cases and the judge's
share of each run's variance; ``--exam-fail-under ...@MofK`` gates on verdicts holding in M of K samples."""

from __future__ import annotations

import json
import random
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai_server import FakeOpenAIServer, Fault
from tests.helpers import doc_example, printed_block, write_project
from tests.plugin.support import BANK, openai_args

pytest_plugins = ["pytester"]
pytest.importorskip("openai")

# Each passage says which grade the server answers on its n-th call for a prompt (SEQ=a,b,c); the
# samples are asked one after the other, so call n of a prompt is its sample n.
COLLECTION = """\
id\ttext
p1\tSEQ=5,5,5 a passage that answers everything
p2\tSEQ=5,0,0 a passage the judge accepts once
p3\tSEQ=0,5,5 a passage the judge accepts twice
p4\tSEQ=0,0,0 an unrelated passage
"""
RUNS = {
    "good.run": "q1 Q0 p1 1 2.0 good\nq2 Q0 p3 1 1.0 good\n",
    "weak.run": "q1 Q0 p2 1 2.0 weak\nq2 Q0 p4 1 1.0 weak\n",
}
PAIRS = 6  # q1: {p1, p2} x {a, b}; q2: {p3, p4} x {c}


class SequenceJudge:
    """Answers the n-th call of a prompt with the n-th grade of its passage's SEQ; a prompt with
    ``P=x`` instead answers 5 with probability x and 1 otherwise, drawn from a seeded generator."""

    def __init__(self, seed: int = 7) -> None:
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.seed = seed

    def __call__(self, prompt: str) -> str:
        with self.lock:
            n = self.calls.get(prompt, 0)
            self.calls[prompt] = n + 1
        seq = re.search(r"SEQ=([0-9,]+)", prompt)
        if seq:
            grades = seq.group(1).split(",")
            return grades[n % len(grades)]
        p = re.search(r"P=([0-9.]+)", prompt)
        assert p is not None, prompt
        draw = random.Random(f"{self.seed}:{prompt}:{n}").random()
        return "5" if draw < float(p.group(1)) else "1"


@pytest.fixture
def judge() -> SequenceJudge:
    return SequenceJudge()


@pytest.fixture
def server(judge: SequenceJudge) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(judge) as srv:
        yield srv


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return write_project(pytester, BANK, COLLECTION, RUNS)


def args(server: FakeOpenAIServer, repeats: int, *extra: str) -> list[str]:
    # timeout=10 over openai_args' 0.5: on a loaded machine a slow answer is not what these tests are about
    return openai_args(server, "timeout=10", "temperature=1", f"repeats={repeats}", *extra)


def _report(project: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return report


def _jv(report: dict[str, Any]) -> dict[str, Any]:
    """The report's judge-variance figures at its one tau (its judge-variance section)."""
    per_tau: list[dict[str, Any]] = report["sections"]["judge-variance"]["per_tau"]
    assert len(per_tau) == 1
    return per_tau[0]


def _runs(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["run"]: r for r in _jv(report)["runs"]}


def test_samples_are_cached_by_index_and_reduced(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    two = project.runpytest(*args(server, 2))
    assert server.count() == 2 * PAIRS
    assert _jv(_report(project))["repeats"] == 2
    three = project.runpytest(*args(server, 3))
    assert server.count() == 3 * PAIRS  # K=3 after K=2 asks the third sample only
    again = project.runpytest(*args(server, 3))
    assert server.count() == 3 * PAIRS  # a rerun asks nothing
    for result in (two, three, again):
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    report = _report(project)
    assert report["cache"]["unique_pairs"] == 3 * PAIRS and report["cache"]["hits"] == 3 * PAIRS
    # this judge answers 0 or 5 only: by default its samples reduce by majority (issue 35): (0, 5, 5) is 5 and
    # (5, 0, 0) is 0, so good covers q2/c too
    assert _jv(report)["reducer"] == "majority"
    assert {s["run"]: s["scores"][report["measures"][0]["name"]]["mean"] for s in report["systems"]} == {
        "good": 1.0, "weak": 0.0}
    # mean of (0, 5, 5) is 3 < tau 4: one 0 sample sinks the pair (mean acts as min); from the cache, nothing asked
    project.runpytest(*args(server, 3, "reducer=mean"))
    assert server.count() == 3 * PAIRS
    mean = _report(project)
    assert {s["run"]: s["scores"][mean["measures"][0]["name"]]["mean"] for s in mean["systems"]} == {
        "good": 0.5, "weak": 0.0}
    assert _jv(mean)["reducer"] == "mean"


def test_two_reducers_agree_per_case(project: pytest.Pytester, server: FakeOpenAIServer,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``analyze agreement --grades`` over the reports of two sessions: the same samples, reduced by mean and
    by majority, compared case by case."""
    from exam_harness.cli import main

    project.runpytest(*args(server, 3, "reducer=mean"))
    mean = project.path / "mean.json"
    mean.write_bytes((project.path / "reports" / "exam-report.json").read_bytes())
    project.runpytest(*args(server, 3, "reducer=majority"))
    out = project.path / "agreement.json"
    assert main(["analyze", "agreement", "--grades", str(mean), "--grades",
                 str(project.path / "reports" / "exam-report.json"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    # mean: good 5, 5, 3 and weak 2, 2, 0; majority: good 5, 5, 5 and weak 0, 0, 0
    assert result["unit"] == "case" and result["common"] == 6
    assert result["confusion"]["3"]["5"] == 1 and result["confusion"]["2"]["0"] == 2
    assert result["verdicts"] == {"1": {"1": 2, "0": 0}, "0": {"1": 1, "0": 3}}
    assert result["verdict_kappa"] == pytest.approx((5 / 6 - (2 * 3 + 4 * 3) / 36) / (1 - (2 * 3 + 4 * 3) / 36))
    assert server.count() == 3 * PAIRS


def test_known_spread_flaky_cases_and_judge_share(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = project.runpytest(*args(server, 3, "reducer=mean"), "--exam-markdown=summary.md", "--exam-html=html")
    report = _report(project)
    runs = _runs(report)
    good, weak = runs["good"], runs["weak"]
    # good: sample scores (q1 1, q2 0), (1, 1), (1, 1) -> 0.5, 1, 1: variance 1/12; reduced per-query
    # covers 1 and 0 -> squared standard error 0.5 / 2 = 1/4; share (1/12) / (1/12 + 1/4) = 1/4
    assert good["sample_scores"] == [0.5, 1.0, 1.0]
    assert good["judge_variance"] == pytest.approx(1 / 12)
    assert good["query_variance"] == pytest.approx(1 / 4)
    assert good["judge_share"] == pytest.approx(0.25)
    # weak: 0.5, 0, 0 (only its first sample accepts p2); reduced covers 0 and 0: all its variance is the judge's
    assert weak["sample_scores"] == [0.5, 0.0, 0.0]
    assert weak["judge_variance"] == pytest.approx(1 / 12) and weak["query_variance"] == 0
    assert weak["judge_share"] == 1.0
    assert good["cover_at_least"] == [1.0, 1.0, 0.5] and weak["cover_at_least"] == [0.5, 0.0, 0.0]
    cases = {(c["run"], c["test_point_id"]): c for c in _jv(report)["cases"]}
    assert {key for key, c in cases.items() if c["flaky"]} == {("good", "q2/c"), ("weak", "q1/a"), ("weak", "q1/b")}
    assert cases[("good", "q2/c")]["best_grades"] == [0, 5, 5] and cases[("good", "q2/c")]["answered_in"] == 2
    assert cases[("good", "q1/a")]["best_grades"] == [5, 5, 5] and not cases[("good", "q1/a")]["flaky"]
    assert (good["flaky"], weak["flaky"], good["cases"]) == (1, 2, 3)
    # terminal, markdown and HTML say the same
    result.stdout.fnmatch_lines([
        "judge variance: 3 samples per pair, reduced by mean; 'good' 0.5000 (samples 0.5000, 1.0000, 1.0000), "
        "judge share 25%, 1 of 3 cases flaky; 'weak' 0.0000 (samples 0.5000, 0.0000, 0.0000), judge share 100%, "
        "2 of 3 cases flaky",
        "  flaky good q2/c: answered in 2 of 3 samples (best grades 0, 5, 5)",
        "  note: samples that agree are not verdicts that are right: a judge wrong the same way every time shows no "
        "flaky case and no judge share; only labels tell (exam-harness analyze agreement --team-labels)"])
    markdown = (project.path / "summary.md").read_text()
    assert "Note: samples that agree are not verdicts that are right" in markdown
    assert "### Judge variance: 3 samples per pair, reduced by mean" in markdown
    assert "| good | 0.5000 | 0.5000, 1.0000, 1.0000 | 0.08333 | 0.25000 | 25% | 1 of 3 | 1.0000 / 1.0000 / 0.5000 |" \
        in markdown
    assert "- **flaky** good q2/c: answered in 2 of 3, best grades 0, 5, 5" in markdown
    html = (project.path / "html" / "index.html").read_text()
    assert '<section id="judge-variance">' in html
    assert '<a href="#judge-variance">Judge variance</a>' in html  # the nav bar leads to it
    assert '<tr class="flaky"><td>weak</td><td>q1/a</td><td>flaky</td><td>1 of 3</td><td>5, 0, 0</td></tr>' in html
    assert "samples that agree are not verdicts that are right" in html


def test_m_of_k_gate_reads_back_from_junit(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = project.runpytest(*args(server, 3, "reducer=mean"), "--junitxml=junit.xml", "--exam-fail-under=0.9@2of3",
                               "--exam-fail-under=good=exam-cover:0.9@3of3", "--exam-fail-under=weak=0.5@1of3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    root = ET.parse(project.path / "junit.xml").getroot()
    gates = {c.get("name"): c.find("failure") is None for c in root.iter("testcase")
             if c.get("classname") == "exam gates"}
    # good holds 1.0 of its cover in 2 of 3 samples but 0.5 in 3 of 3; weak 0.5 in 1 of 3 and 0 in 2 of 3
    # (a run's own threshold replaces the default one of the same measure and M of K only)
    assert gates == {"exam-fail-under[good-exam-cover@2of3]": True, "exam-fail-under[good-exam-cover@3of3]": False,
                     "exam-fail-under[weak-exam-cover@1of3]": True, "exam-fail-under[weak-exam-cover@2of3]": False}
    result.stdout.fnmatch_lines([
        "FAIL Required EXAM-Cover@20 with verdicts holding in 3 of 3 samples of 0.9 not reached by run 'good': 0.5000"])
    # each exam case carries its samples in JUnit: answered in n of K, and flaky where the verdict flips
    props = {(c.get("name")): {p.get("name"): p.get("value") for p in c.iter("property")}
             for c in root.iter("testcase") if c.get("classname", "").startswith("banks.")}
    assert {name: (p["exam_judge_samples"], p["exam_flaky"]) for name, p in props.items()} == {
        "q1/a[good]": ("3/3", "False"), "q1/b[good]": ("3/3", "False"), "q2/c[good]": ("2/3", "True"),
        "q1/a[weak]": ("1/3", "True"), "q1/b[weak]": ("1/3", "True"), "q2/c[weak]": ("0/3", "False")}
    missed = {c.get("name"): c.find("skipped") for c in root.iter("testcase")}
    flagged = missed["q2/c[good]"]
    assert flagged is not None and flagged.get("message", "").endswith(
        "best grade 3 (passage p3 'SEQ=0,5,5 a passage the judge accepts twice', reason '0 | 5 | 5') < min grade 4 in the run's top 20; flaky: answered in 2 of 3 "
        "judge samples")
    verdict = _report(project)["verdict"]
    assert sorted((g["run"], g["measure"], g["value"], g["passed"]) for g in verdict["gates"]
                  if g["gate"] == "exam-fail-under") == [("good", "exam-cover@2of3", 1.0, True),
                                                         ("good", "exam-cover@3of3", 0.5, False),
                                                         ("weak", "exam-cover@1of3", 0.5, True),
                                                         ("weak", "exam-cover@2of3", 0.0, False)]
    # a library caller deciding on the saved report without the front end's gate figures: the in-tree feature's
    # figure of @MofK reads the judge-variance section all the same, with the session's words
    from exam_harness.config.gates import parse_threshold
    from exam_harness.results.document import read_document
    from exam_harness.results.verdict import Checks, decide

    thresholds = tuple(parse_threshold(t) for t in ("0.9@2of3", "good=exam-cover:0.9@3of3", "weak=0.5@1of3"))
    again = decide(read_document(project.path / "reports" / "exam-report.json"), Checks(thresholds=thresholds))
    assert sorted((g.run, g.measure, g.value, g.passed, g.message) for g in again.gates
                  if g.gate == "exam-fail-under") == sorted(
        (g["run"], g["measure"], g["value"], g["passed"], g["message"]) for g in verdict["gates"]
        if g["gate"] == "exam-fail-under")


def test_m_of_k_gate_needs_as_many_samples(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    # found before grading (and paying), in a dry run too (issue 28, item 7)
    for dry in ([], ["--exam-dry-run"]):
        result = project.runpytest(*args(server, 2), "--junitxml=junit.xml", "--exam-fail-under=0.1@2of3", *dry)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--exam-fail-under exam-cover:0.1@2of3: @2of3 reads 3 judge samples per pair, "
                                     "but the grader asks 2 samples per pair (grader option repeats=2)*"])
    assert server.requests == []
    bad = project.runpytest(*args(server, 2), "--exam-fail-under=0.5@3of2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--exam-fail-under @3of2 asks for verdicts holding in 3 of 2 samples; "
                              "M of K needs 1 <= M <= K*"])


def test_a_failed_sample_is_never_a_grade(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    project.runpytest(*args(server, 1))  # sample 1 of every pair cached
    # p1's pairs fail in both attempts of their second sample (max_retries=1: a dropped connection is retried)
    server.add_faults("SEQ=5,5,5", *[Fault("status", status=500)] * 4)
    failed = project.runpytest(*args(server, 2, "max_retries=1"))
    assert failed.ret != 0
    report = _report(project)
    assert report["cache"]["failures"] == 2  # p1's two pairs: no grade, though their first sample is cached
    assert {s["run"]: s["incomplete_queries"] for s in report["systems"]} == {"good": ["q1"], "weak": ["q1"]}  # n-EXAM reads the pool
    failed.stdout.fnmatch_lines(["*sample 2 of 2: *HTTP 500*"])
    # the next session asks only the failed samples, and grades them
    before = len(server.requests)
    project.runpytest(*args(server, 2, "max_retries=1"))
    asked = server.requests[before:]
    assert asked and all("SEQ=5,5,5" in r.prompt for r in asked)
    assert _report(project)["cache"]["failures"] == 0


def test_repeats_need_sampling(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    result = project.runpytest(*openai_args(server, "repeats=3"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*repeats=3 needs temperature > 0*"])
    assert server.count() == 0


def test_seeded_distribution_share_matches_the_samples(project: pytest.Pytester, server: FakeOpenAIServer,
                                                       judge: SequenceJudge) -> None:
    """A judge that accepts each passage with probability P, seeded: the report's per-sample scores are the
    scores of the answers the server gave, and a judge that always agrees (P=1 or 0) has no variance."""
    bank = "queries:\n" + "".join(
        f"  - id: q{i}\n    text: query {i}\n    questions:\n      - {{id: q{i}/a, text: question {i}}}\n"
        for i in range(8))
    (project.path / "banks" / "exam.yaml").write_text(bank)
    probs = [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 0.0, 0.0]
    rows = "".join(f"d{i}\tP={p} passage {i}\n" for i, p in enumerate(probs))
    (project.path / "runs" / "collection.tsv").write_text("id\ttext\n" + rows)
    (project.path / "runs" / "good.run").write_text("".join(f"q{i} Q0 d{i} 1 1.0 good\n" for i in range(8)))
    (project.path / "runs" / "weak.run").write_text("".join(f"q{i} Q0 d{(i + 4) % 8} 1 1.0 weak\n"
                                                            for i in range(8)))
    project.runpytest(*args(server, 4))
    runs = _runs(_report(project))
    # the answers the seeded generator gave: sample s of a prompt is its s-th draw
    expected: dict[str, list[float]] = {}
    for run, shift in (("good", 0), ("weak", 4)):
        per_sample = [0.0] * 4
        for i in range(8):
            d = (i + shift) % 8
            prompt = next(r.prompt for r in server.requests if f"question {i}" in r.prompt and f"passage {d}" in r.prompt)
            for s in range(4):
                draw = random.Random(f"{judge.seed}:{prompt}:{s}").random()
                per_sample[s] += (draw < probs[d]) / 8
        expected[run] = per_sample
    for run in ("good", "weak"):
        assert runs[run]["sample_scores"] == pytest.approx(expected[run])
        flips = sum(0 < c["answered_in"] < 4 for c in _jv(_report(project))["cases"] if c["run"] == run)
        assert runs[run]["flaky"] == flips
    # the four fair coins make some case flaky; the sure passages never are
    cases = {(c["run"], c["query_id"]): c for c in _jv(_report(project))["cases"]}
    assert all(not cases[("good", f"q{i}")]["flaky"] for i in range(4, 8))


def test_dry_run_counts_every_sample_not_cached(project: pytest.Pytester, server: FakeOpenAIServer) -> None:
    project.runpytest(*args(server, 1))
    result = project.runpytest(*args(server, 3), "--exam-dry-run")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"*{PAIRS} pairs, {PAIRS} cached; *would be asked {2 * PAIRS} pairs in "
                                 f"{2 * PAIRS} calls*"])
    assert server.count() == PAIRS


@pytest.mark.parametrize(("reducer", "samples", "grade"), [
    ("mean", (3, 4), 4), ("mean", (0, 5, 5), 3), ("mean", (2, 3, 3, 2), 3),
    ("median", (0, 5, 4), 4), ("median", (1, 5, 2, 4), 2),
    ("majority", (5, 0, 0), 0), ("majority", (5, 4, 5, 4), 4), ("min", (5, 3, 4), 3),
])
def test_reducers(reducer: str, samples: tuple[int, ...], grade: int) -> None:
    from exam_harness.graders.repeats import reduce_grades

    assert reduce_grades(reducer, samples) == grade


@pytest.mark.parametrize(("samples", "max_grade", "reducer"), [
    ([(5, 5, 0), (0, 0, 0), (5, 5, 5)], 5, "majority"),  # a 0/5 judge: mean would act as min ((5, 5, 0) -> 3)
    ([(5, 5, 0), (4, 5, 5)], 5, "mean"),  # a grade between the ends: averaged
    ([(1, 0), (0, 0)], 1, "majority"),  # a scale of two grades
    ([(2, 2), (0, 1)], 2, "mean"),
])
def test_the_default_reducer_is_majority_for_a_binary_like_judge(samples: list[tuple[int, ...]], max_grade: int,
                                                                 reducer: str) -> None:
    from exam_harness.graders.repeats import AUTO, REPEAT_OPTIONS, auto_reducer

    assert next(o.default for o in REPEAT_OPTIONS if o.name == "reducer") == AUTO
    assert auto_reducer(samples, max_grade) == reducer


def test_sample_keys_extend_the_grader_s_own() -> None:
    from exam_harness.core.models import Passage, Query, TestPoint
    from exam_harness.graders.base import GraderConfig, GradingRequest
    from exam_harness.graders.registry import default_registry
    from exam_harness.graders.repeats import SampleGrader

    def grader(repeats: int) -> Any:
        return default_registry().create("openai", GraderConfig(options={
            "model": "m", "base_url": "http://127.0.0.1:9/v1", "temperature": "1", "repeats": str(repeats),
            "seed": "10"}))

    one, three = grader(1), grader(3)
    request = GradingRequest(Query(id="q", text="q"), TestPoint(id="q/1", query_id="q", kind="question", text="t"),
                             Passage(id="p", text="x"))
    assert one.spec().fingerprint() == three.spec().fingerprint()  # repeats leave the grader's identity
    assert SampleGrader(three, 0).cache_payload(request) == one.cache_payload(request)
    assert SampleGrader(three, 2).cache_payload(request) == {**one.cache_payload(request), "sample": 2}
    seen: list[int] = []

    def record_seed(batch: object) -> list[object]:
        seen.append(three.backend.seed)
        return []

    three.grade_batch = record_seed
    SampleGrader(three, 2).grade_batch([])
    assert seen == [12] and three.backend.seed == 10  # sample i sends seed + i, then the seed is back
    one.close()
    three.close()


def test_max_cost_bounds_every_sample_together(tmp_path: Path) -> None:
    """``max_cost`` holds for the K samples of a pass together, not per sample; the figures sum every sample's
    tokens, and what was graded is cached for a rerun with a larger budget."""
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.passes import run_grading_pass
    from tests.llm.support import PRICES, SeededServer, make_grader, requests

    pool = requests(4)
    with SeededServer() as server:
        bound = make_grader(server, **PRICES).meter.bound([pool[0]])[2]
        # one sample of the 4 pairs costs at most 4 bounds: a budget per sample would let all 12 calls through
        max_cost = 6.5 * bound
        cache = GradeCache(tmp_path / "grades.sqlite")
        grader = make_grader(server, **PRICES, temperature="1", repeats="3", max_cost=f"{max_cost!r}")
        outcome = run_grading_pass(grader, pool, cache)
        asked = server.spent().calls
        assert 4 <= asked < 12 and outcome.graded == asked
        cost = outcome.cost
        assert cost is not None and cost.stopped is not None
        spent = cost.cost(cost.session)
        assert spent is not None and 0 < spent <= max_cost
        assert (cost.session.prompt_tokens, cost.session.completion_tokens) == (
            server.spent().prompt_tokens, server.spent().completion_tokens)
        # a pair without all 3 samples is no grade; each says the budget stopped it
        assert len(outcome.grades) + len(outcome.failures) == 4 and outcome.failures
        assert all("max_cost" in why for why in outcome.failures.values())
        rest = run_grading_pass(make_grader(server, **PRICES, temperature="1", repeats="3", max_cost="100"),
                                pool, cache)
        assert rest.cache_hits == asked and rest.graded == 12 - asked and len(rest.grades) == 4
        assert all(len(samples) == 3 for samples in rest.samples.values())
        cache.close()


# --- exam-harness evaluate ------------------------------------------------------------------------------------


def _evaluate(tmp_path: Path, server: FakeOpenAIServer, *options: str, min_grades: tuple[str, ...] = ("3", "4"),
              ) -> list[str]:
    """``exam-harness evaluate`` over the project's bank, collection and runs (written into ``tmp_path``)."""
    (tmp_path / "exam.yaml").write_text(BANK)
    (tmp_path / "collection.tsv").write_text(COLLECTION)
    for name, text in RUNS.items():
        (tmp_path / name).write_text(text)
    argv = ["evaluate", str(tmp_path / "collection.tsv"), *(str(tmp_path / name) for name in RUNS), "--bank",
            str(tmp_path / "exam.yaml"), "--grader", "openai", "--cache", str(tmp_path / "grades.sqlite"),
            "--min-grade", *min_grades, "--bootstrap", "0", "--no-progress", "--json", str(tmp_path / "out.json")]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", "timeout=10",
                   "backoff_base=0.001", "backoff_max=0.002", *options):
        argv += ["--grader-option", option]
    return argv


def test_evaluate_shows_the_judge_variance_at_each_tau(tmp_path: Path, server: FakeOpenAIServer,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``evaluate --grader openai`` with repeats=3 prints and writes the pytest report's figures, once per tau:
    the scripted answers give good the sample scores 0.5, 1, 1 and weak 0.5, 0, 0 at either tau; good's q2/c
    (grades 0, 5, 5: mean 3) is covered at tau 3 and missed at tau 4, which moves its score and the share."""
    from exam_harness.cli import main
    from exam_harness.results.document import validate_document
    from exam_harness.results.evaluation import EvaluationReport

    monkeypatch.setenv("COLUMNS", "200")  # every table column on one line
    assert main(_evaluate(tmp_path, server, "temperature=1", "repeats=3", "reducer=mean")) == 0
    printed = capsys.readouterr().out
    assert server.count() == 3 * PAIRS
    # the pytest session's summary line, once per tau (the section's terminal rendering)
    assert ("judge variance at tau=4: 3 samples per pair, reduced by mean; 'good' 0.5000 (samples 0.5000, 1.0000, "
            "1.0000), judge share 25%, 1 of 3 cases flaky; 'weak' 0.0000 (samples 0.5000, 0.0000, 0.0000), judge "
            "share 100%, 2 of 3 cases flaky") in printed
    assert ("judge variance at tau=3: 3 samples per pair, reduced by mean; 'good' 1.0000 (samples 0.5000, 1.0000, "
            "1.0000), judge share 100%") in printed
    assert printed.count("  flaky good q2/c: answered in 2 of 3 samples (best grades 0, 5, 5)") == 2
    example = doc_example("judge-variance.md", "evaluate-judge-variance")  # what the document shows is printed
    assert printed_block(printed, example[0], len(example)) == example
    assert printed.count("  flaky weak q1/a: answered in 1 of 3 samples (best grades 5, 0, 0)") == 2

    document = json.loads((tmp_path / "out.json").read_text())
    assert isinstance(validate_document(document), EvaluationReport)  # the one schema
    by_tau = {jv["min_grade"]: jv for jv in document["sections"]["judge-variance"]["per_tau"]}
    assert sorted(by_tau) == [3, 4]
    assert by_tau[4]["measure"] == "exam-cover(tau=4)@20" and by_tau[4]["measure"] in [
        m["name"] for m in document["measures"]]
    runs = {r["run"]: r for r in by_tau[4]["runs"]}
    assert runs["good"]["sample_scores"] == [0.5, 1.0, 1.0]
    assert runs["good"]["judge_variance"] == pytest.approx(1 / 12) and runs["good"]["judge_share"] == pytest.approx(0.25)
    assert runs["weak"]["cover_at_least"] == [0.5, 0.0, 0.0]
    # the score beside the figures is the leaderboard's EXAM-Cover at that tau
    means = {s["run"]: s["scores"]["exam-cover(tau=3)@20"]["mean"] for s in document["systems"]}
    assert {r["run"]: r["score"] for r in by_tau[3]["runs"]} == means == {"good": 1.0, "weak": 0.0}
    cases = {(c["run"], c["test_point_id"]): c for c in by_tau[4]["cases"]}
    assert {key for key, c in cases.items() if c["flaky"]} == {("good", "q2/c"), ("weak", "q1/a"), ("weak", "q1/b")}
    assert cases[("good", "q2/c")]["best_grades"] == [0, 5, 5]

    # reducer=majority is read from the cache (nothing asked): (0, 5, 5) reduces to 5, so good covers q2/c at 4
    assert main(_evaluate(tmp_path, server, "temperature=1", "repeats=3", "reducer=majority")) == 0
    assert server.count() == 3 * PAIRS
    majority = json.loads((tmp_path / "out.json").read_text())["sections"]["judge-variance"]["per_tau"]
    good = next(r for r in majority[1]["runs"] if r["run"] == "good")
    assert (majority[1]["reducer"], good["score"], good["sample_scores"]) == ("majority", 1.0, [0.5, 1.0, 1.0])


def test_evaluate_without_repeats_shows_no_judge_variance(tmp_path: Path, server: FakeOpenAIServer,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    assert main(_evaluate(tmp_path, server, min_grades=("4",))) == 0
    assert server.count() == PAIRS
    assert "Judge variance" not in capsys.readouterr().out
    assert "judge-variance" not in json.loads((tmp_path / "out.json").read_text())["sections"]
