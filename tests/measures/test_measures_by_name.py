"""Every measure by name, from the registry (issue 17): built-in, trec_eval (any name pytrec_eval takes)
and plugin measures are selected by ``--exam-measures``/``--measures``, reach every output, and can be
gated and compared by name; kept reports of schema 2.x read as 3.0."""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval

from exam_harness.cli import main as cli_main
from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import GraderSpec
from exam_harness.exam.plan import make_plan
from exam_harness.measures import Bindings, ExamCover, NExam, TrecMeasure, parse_measure
from exam_harness.measures.lookup import find_measure
from exam_harness.results.read import read_report
from exam_harness.results.schema import SCHEMA_VERSION, ExamReport, MeasureInfo
from tests.helpers import CONFTEST, evaluation_boards, report_means
from tests.measures.support import HITS, HITS_PLUGIN
from tests.paths import GOLDEN

pytest_plugins = ["pytester"]
BOUND = Bindings(k=20, min_grade=4, pool="judged", qrels_m=2, label="max-grade", beta=3.0, redundancy_alpha=0.5,
                 empty="skip")

@pytest.fixture
def plugin_project(project: pytest.Pytester) -> pytest.Pytester:
    project.makeconftest(CONFTEST + HITS_PLUGIN)
    return project


def _report(project: pytest.Pytester) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return loaded


# --- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "canonical", "title"), [
    ("ndcg_cut.5", "ndcg@5", "nDCG@5"), ("recip_rank", "mrr", "MRR"), ("P.10", "P@10", "P@10"),
    ("map_cut.100", "map@100", "MAP@100"), ("success.10", "success.10", "success.10"),
    ("success@10", "success.10", "success.10"), ("set_F.0.5", "set_F.0.5", "set_F.0.5"),
    ("iprec_at_recall.0.10", "iprec_at_recall.0.10", "iprec_at_recall.0.10"), ("infAP", "infAP", "infAP"),
])
def test_any_trec_eval_name_parses_and_prints_back(text: str, canonical: str, title: str) -> None:
    measure = parse_measure(text)
    assert isinstance(measure, TrecMeasure) and measure.name == canonical and measure.title == title
    bound = measure.bind(BOUND)
    assert parse_measure(str(bound)) == bound


def test_generic_trec_measures_are_pytrec_evals_values() -> None:
    from exam_harness.measures.trec import trec_eval

    qrels = {"q": {"a": 1, "b": 0, "c": 1}}
    rankings = {"r": {"q": ["b", "a", "c"]}}
    ours = trec_eval(qrels, rankings, ["success.1", "set_F.0.5", "infAP"])["r"]["q"]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"success.1", "set_F.0.5", "infAP"})
    theirs = evaluator.evaluate({"q": {"b": 3.0, "a": 2.0, "c": 1.0}})["q"]
    assert ours == {"success.1": theirs["success_1"], "set_F.0.5": theirs["set_F"], "infAP": theirs["infAP"]}
    assert ours["success.1"] == 0.0  # the first passage is not relevant


def test_two_measures_pytrec_eval_reports_under_one_key_are_refused() -> None:
    from exam_harness.measures.trec import trec_eval

    with pytest.raises(ConfigError, match="both reported by pytrec_eval as 'set_F'"):
        trec_eval({"q": {"a": 1}}, {"r": {"q": ["a"]}}, ["set_F.0.5", "set_F.1"])


@pytest.mark.parametrize(("text", "message"), [
    ("P.5,10", "gives 2 values"), ("gm_map", "geometric mean"), ("sucess.10", "unknown measure"),
    ("hits@2", "unknown measure"),
])
def test_names_that_are_no_single_measure_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_measure(text)


def test_a_name_finds_the_held_measure_with_its_parameters() -> None:
    held = [MeasureInfo.of(m.bind(BOUND)) for m in (
        ExamCover(), NExam(), TrecMeasure(name="ndcg@10"), TrecMeasure(name="ndcg@10", label="count"))]
    assert find_measure(held, "exam-cover") is held[0]
    assert find_measure(held, "exam-cover@10") is None  # the exam holds EXAM-Cover@20 only
    assert find_measure(held, "n-exam") is held[1]  # the registry's alias
    assert find_measure(held, "ndcg_cut.10") is held[2]  # the first label variant's
    assert find_measure(held, "ndcg(label=count)@10") is held[3]
    assert find_measure(held, held[3].name) is held[3]


def test_the_plan_computes_what_was_asked_once_per_label() -> None:
    spec = GraderSpec(name="g", version="1", default_min_grade=4)
    options = ExamOptions(measures=("exam-cover@10", "ndcg_cut.5", "recip_rank", "mrr"), labels=("max-grade", "count"))
    names = [str(m) for m in make_plan(options, spec, alpha_ndcg=False).measures(4, nuggets=False)]
    assert names == [
        "exam-cover(tau=4)@20", "n-exam-cover(tau=4,pool=judged,empty=skip)@20", "exam-cover(tau=4)@10",
        "ndcg(label=max-grade,tau=4,pool=judged,k=20)@5", "mrr(label=max-grade,tau=4,pool=judged,k=20)",
        "ndcg(label=count,tau=4,pool=judged,k=20)@5", "mrr(label=count,tau=4,pool=judged,k=20)"]
    with pytest.raises(ConfigError, match="reads each run's top 50, but the exam grades the top 20"):
        make_plan(ExamOptions(measures=("exam-cover@50",)), spec)


# --- a plugin's measure, end to end ------------------------------------------------------------------


def test_a_plugin_measure_reaches_every_output(plugin_project: pytest.Pytester) -> None:
    result = plugin_project.runpytest("banks", "--exam-measures=hits@2", "--exam-markdown=summary.md",
                                      "--exam-html=html")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*run*EXAM-Cover@20*n-EXAM@20*Hits@2*", "*good*0.750*", "*weak*0.250*"])
    report = _report(plugin_project)
    assert report_means(report, "hits@2") == pytest.approx(HITS)
    assert report_means(report, "hits(tau=4)@2") == pytest.approx(HITS)
    assert "hits(tau=4)@2" in [m["name"] for m in report["measures"]]
    markdown = (plugin_project.path / "summary.md").read_text()
    assert "| Hits@2 |" in markdown.replace("| n-EXAM@20 ", "") and "0.7500 ± 0.2500" in markdown
    page = (plugin_project.path / "html" / "index.html").read_text()
    assert ">Hits@2</th>" in page and 'data-v="0.75"' in page


def test_a_plugin_measure_can_be_gated(plugin_project: pytest.Pytester) -> None:
    result = plugin_project.runpytest("banks", "--exam-measures=hits@2", "--exam-fail-under=hits@2:0.5",
                                      "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL Required Hits@2 of 0.5 not reached by run 'weak': 0.2500*"])
    assert "| weak | Hits@2 | 0.2500 | 0.5 | ❌ |" in (plugin_project.path / "summary.md").read_text()
    unknown = plugin_project.runpytest("banks", "--exam-fail-under=hitz@2:0.5")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*--exam-fail-under: unknown measure 'hitz@2'*"])


def test_a_plugin_measure_can_be_compared(plugin_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    kept = plugin_project.runpytest("banks", "--exam-measures=hits@2", "--exam-save=base")
    assert kept.ret == 0, kept.stdout.str()
    base = plugin_project.path / "reports" / "exam-report.json"
    old = plugin_project.path / "old.json"
    old.write_text(base.read_text())
    (plugin_project.path / "runs" / "weak.run").write_text("q1 Q0 p3 1 3.0 weak\nq2 Q0 p5 1 1.0 weak\n")
    result = plugin_project.runpytest("banks", "--exam-measures=hits@2", "--exam-compare=base",
                                      "--exam-compare-fail=hits@2:0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL run 'weak' regressed on Hits@2 against *: 0.2500 -> 0.0000*"])
    monkeypatch.chdir(plugin_project.path)  # the command line loads ./conftest.py, as pytest does
    code = cli_main(["compare", str(old), str(base), "--measure", "hits@2", "--fail", "hits:0.1"])
    out, err = capsys.readouterr()
    assert code == 1 and "Hits@2" in out and "regressed on Hits@2" in err


# --- built-in and trec_eval measures by name ----------------------------------------------------------


def test_pytest_takes_builtin_and_trec_eval_names(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-measures=exam-cover@10", "--exam-measures=ndcg_cut.5",
                               "--exam-measures=recip_rank", "--exam-labels=max-grade")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*EXAM-Cover@20*n-EXAM@20*EXAM-Cover@10*", "*nDCG@5*MRR*"])
    report = _report(project)
    assert report["settings"]["measures"] == ["exam-cover@10", "ndcg@5", "mrr"]
    assert report_means(report, "exam-cover@10") == report_means(report, "exam-cover@20")  # runs of 2 passages
    # the trec measures are pytrec_eval's over the qrels file the session wrote, a query not ranked scoring 0
    qrels: dict[str, dict[str, int]] = {}
    for line in (project.path / "reports" / "exam-max-grade.qrels").read_text().splitlines():
        q, _, pid, label = line.split()
        qrels.setdefault(q, {})[pid] = int(label)
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for name in ("good", "weak"):
        for line in (project.path / "runs" / f"{name}.run").read_text().splitlines():
            q, _, pid, _, score, _ = line.split()
            runs.setdefault(name, {}).setdefault(q, {})[pid] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "recip_rank"})
    for name, run in runs.items():
        values = evaluator.evaluate(run)
        for ours, theirs in (("ndcg_cut.5", "ndcg_cut_5"), ("recip_rank", "recip_rank")):
            expected = sum(values.get(q, {}).get(theirs, 0.0) for q in qrels) / len(qrels)
            assert report_means(report, ours)[name] == pytest.approx(expected, abs=1e-12)


def test_pytest_computes_alpha_ndcg_and_n_exam_at_another_tau_when_named(project: pytest.Pytester) -> None:
    result = project.runpytest("banks", "--exam-measures=alpha-ndcg@2", "--exam-measures=n-exam-cover(tau=3)@20")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*EXAM-Cover@20*n-EXAM@20 (tau=4)*"])
    report = _report(project)
    names = [m["name"] for m in report["measures"]]
    # two n-EXAM columns would read alike: their titles name the parameter that tells them apart
    assert [m["title"] for m in report["measures"]][:4] == [
        "EXAM-Cover@20", "n-EXAM@20 (tau=4)", "α-nDCG@2", "n-EXAM@20 (tau=3)"]
    assert "alpha-ndcg(tau=4,alpha=0.5,pool=judged)@2" in names
    assert "n-exam-cover(tau=3,pool=judged,empty=skip)@20" in names
    # the marker grader grades 0 or 5, so n-EXAM at tau 3 equals n-EXAM at tau 4
    assert report_means(report, "n-exam-cover(tau=3)") == report_means(report, "n-exam-cover(tau=4)")
    assert report_means(report, "alpha-ndcg")["good"] > report_means(report, "alpha-ndcg")["weak"]


def test_evaluate_takes_builtin_and_trec_eval_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import write_exam

    paragraphs, _official = write_exam(tmp_path)
    out = tmp_path / "eval.json"
    code = cli_main(["evaluate", str(paragraphs), "--k", "2", "--bootstrap", "0", "--no-progress", "--json", str(out),
                     "--measures", "exam-cover@1", "ndcg_cut.2", "recip_rank", "--labels", "max-grade"])
    assert code == 0, capsys.readouterr()
    document = json.loads(out.read_text())
    assert document["settings"]["measures"] == ["exam-cover@1", "ndcg@2", "mrr"]
    boards = {(b["measure"], b.get("label")) for b in evaluation_boards(document)}
    assert {("exam-cover@1", None), ("ndcg@2", "max-grade"), ("mrr", "max-grade")} <= boards
    assert ("P@20", "max-grade") not in boards


# --- kept reports -------------------------------------------------------------------------------------


def test_a_kept_report_of_schema_2_reads_as_3() -> None:
    old = read_report(GOLDEN / "exam-report-2.0.json")  # the golden report as schema 2.0 wrote it
    pinned = json.loads((GOLDEN / "exam-report.json").read_text())  # pinned without the volatile fields
    # a 2.0 session did not compute alpha-nDCG, which pytest computes by default since schema 4.0
    alpha = {m["name"] for m in pinned["measures"] if m["name"].startswith("alpha-ndcg")}
    assert alpha
    pinned["measures"] = [m for m in pinned["measures"] if m["name"] not in alpha]
    for entry in (*pinned["systems"], *pinned["per_query"]):
        entry["scores"] = {name: value for name, value in entry["scores"].items() if name not in alpha}
    new = ExamReport.model_validate({**pinned, "tool_version": "0.1.0", "created": "2026-11-23T00:00:00+00:00"})
    assert old.schema_version == new.schema_version == SCHEMA_VERSION
    # a 2.0 report holds no session verdict (2.1 added it) and no best passage texts (3.4 added them):
    # everything else, ids and reasons (2.0's answers) included, reads as today's
    assert old.verdict is None and all(o.best_passage_text is None for o in old.outcomes)
    assert any(o.best_passage_text for o in new.outcomes) and any(o.reason for o in old.outcomes)
    for outcome in new.outcomes:
        outcome.best_passage_text = None
    volatile = {"tool_version", "created", "verdict"}
    assert old.model_dump(exclude=volatile) == new.model_dump(exclude=volatile)
    assert not math.isnan(old.means("nugget-f")["good"])


def test_a_kept_report_of_schema_3_0_reads_as_today_s(tmp_path: Path) -> None:
    # 3.1 added trec_rag (TREC RAG nugget assignments; the trec-rag section since 4.0); a 3.0 report, which
    # has none, reads with no such section
    pinned = json.loads((GOLDEN / "exam-report.json").read_text())
    pinned.pop("sections", None)
    kept = tmp_path / "exam-report.json"
    kept.write_text(json.dumps({**pinned, "schema_version": "3.0", "tool_version": "0.1.0",
                                "created": "2026-11-23T00:00:00+00:00"}))
    report = read_report(kept)
    # 3.0 reads as today's (answers are reasons), keeping the version it was written as
    assert report.schema_version == "3.0" and "trec-rag" not in report.sections
    assert report.means("exam-cover") == {s["run"]: s["scores"][pinned["measures"][0]["name"]]["mean"]
                                          for s in pinned["systems"]}


def test_a_kept_report_of_schema_3_1_reads_its_answers_as_reasons(tmp_path: Path) -> None:
    # 3.4 renamed each outcome's answer (the best grade's extracted answer or raw response) to reason, and
    # added the best passage's text, which a 3.1 report lacks
    pinned = json.loads((GOLDEN / "exam-report.json").read_text())
    reasons = [o["reason"] for o in pinned["outcomes"]]
    assert any(reasons)
    for outcome in pinned["outcomes"]:
        outcome["answer"] = outcome.pop("reason")
        del outcome["best_passage_text"]
    kept = tmp_path / "exam-report.json"
    kept.write_text(json.dumps({**pinned, "schema_version": "3.1", "tool_version": "0.1.0",
                                "created": "2026-11-23T00:00:00+00:00"}))
    report = read_report(kept)
    assert report.schema_version == "3.1"  # the version it was written as
    assert [o.reason for o in report.outcomes] == reasons
    assert all(o.best_passage_text is None for o in report.outcomes)



# -- declared parameters, inputs and the registry's check (issue 26, item 7) -----------------------

MODE_MEASURE = '''
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from exam_harness.measures.base import Measure


@dataclass(frozen=True)
class Spread(Measure):
    family: ClassVar[str] = "spread"
    k: int | None = None
    mode: Literal["print", "skip"] | None = None
    ratio: float | None = None

    def compute(self, ctx):
        return {}
'''


def _module_measure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> type[Any]:
    (tmp_path / "spread_measure.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "spread_measure", raising=False)
    return importlib.import_module("spread_measure").Spread  # type: ignore[no-any-return]


def test_measure_parameters_convert_by_their_declared_types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from exam_harness.measures.registry import builtin_measures

    spread = _module_measure(tmp_path, monkeypatch, MODE_MEASURE)
    registry = builtin_measures()
    registry.register("spread", spread)
    # a str parameter whose allowed words contain "int" ('print') is no number
    measure = parse_measure("spread(mode=skip,ratio=0.5)@5", registry)
    assert (measure.mode, measure.ratio, measure.k) == ("skip", 0.5, 5)  # type: ignore[attr-defined]
    assert {n: p.dtype for n, p in spread.supported_params().items()} == {"k": int, "mode": str, "ratio": float}
    with pytest.raises(ConfigError, match=r"parameter ratio='x' must be a number"):
        parse_measure("spread(ratio=x)", registry)


def test_the_measure_registry_checks_entries_on_register_and_on_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from exam_harness.measures.registry import builtin_measures

    registry = builtin_measures()
    with pytest.raises(ConfigError, match=r"^measure 'odd': <class 'dict'> is not a Measure subclass$"):
        registry.register("odd", dict)  # type: ignore[arg-type]
    registry.register("lazy", "collections:OrderedDict")  # a lazy entry is checked when it is imported
    with pytest.raises(ConfigError, match=r"^measure 'lazy': <class 'collections.OrderedDict'> is not a Measure"):
        parse_measure("lazy@3", registry)
    listed = _module_measure(tmp_path, monkeypatch, MODE_MEASURE.replace("ratio: float | None", "ratio: list[int]"))
    with pytest.raises(ConfigError, match=r"^measure 'spread': measure class Spread: parameter ratio is typed "
                                          r"list\[int\]; a parameter is an int, a float or a str"):
        registry.register("spread", listed)


def test_measures_declare_the_inputs_they_read() -> None:
    from dataclasses import fields

    from exam_harness.measures.base import INPUTS, required_inputs
    from exam_harness.measures.context import ScoringInput

    assert {f.name for f in fields(ScoringInput)} >= INPUTS
    bound = [parse_measure(text).bind(BOUND) for text in ("exam-cover@10", "n-exam-cover(pool=top-k)@10",
                                                          "n-exam-cover@10", "citation-f1", "response-words@10")]
    assert [sorted(m.requires()) for m in bound] == [
        ["grades"], ["grades"], ["grades", "judged"], ["support"], ["importance", "passage_text", "responses"]]
    assert required_inputs(bound[:2]) == {"grades"}
    assert required_inputs(parse_measure(t).bind(BOUND) for t in ("V", "nugget-f@20", "ndcg@10")) == {
        "grades", "importance", "nuggets", "responses", "passage_text", "judged"}
