"""exam-harness as a TREC AutoJudge judge (exam_harness/features/autojudge, docs/autojudge.md): ``auto-judge run``
with the example workflow, the converters both ways, and the meta-evaluation measures against
autojudge-evaluate's on the same files. Skipped where the ``[autojudge]`` extra is not installed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO

pytest.importorskip("nltk", reason="the [autojudge] extra is not installed (pip install 'exam-harness[autojudge]')")

from exam_harness.features.autojudge.offline import NLTK_DATA, use_offline_nltk_data

use_offline_nltk_data()  # before autojudge-base is first imported: it would download NLTK data otherwise
pytest.importorskip("autojudge_base", reason="the [autojudge] extra is not installed")
pytest.importorskip("autojudge_evaluate", reason="the [autojudge] extra is not installed")

from autojudge_base import Report  # noqa: E402
from autojudge_base.leaderboard import LeaderboardBuilder, LeaderboardSpec, MeasureSpec  # noqa: E402
from autojudge_base.nugget_data import load_nugget_banks_from_file, write_nugget_banks  # noqa: E402
from autojudge_base.qrels import QrelRow, Qrels, write_qrel_file  # noqa: E402

from exam_harness.cli import main as exam_harness  # noqa: E402
from exam_harness.core.answers import CitedAnswer, CitedSentence  # noqa: E402
from exam_harness.core.models import Query, QueryBank, TestPoint  # noqa: E402
from exam_harness.exam.inputs import ExamInputs  # noqa: E402
from exam_harness.extensions import cli_registries  # noqa: E402
from exam_harness.features.autojudge.convert import (  # noqa: E402
    answers_to_reports,
    banks_to_nugget_banks,
    nugget_banks_to_banks,
    reports_to_answers,
)
from exam_harness.features.autojudge.files import main as autojudge_files  # noqa: E402
from exam_harness.features.trec_rag.answers import answer_passage_id  # noqa: E402
from exam_harness.measures.meta_evaluation import kappa_per_topic_and_pooled, krippendorff_alpha, tau_ap_symmetric  # noqa: E402

ROOT = REPO
EXAMPLE = ROOT / "examples" / "autojudge"


def example_banks() -> list[QueryBank]:
    """The example exam's banks, without the file they were read from (a converted bank names none)."""
    registries = cli_registries()
    banks = ExamInputs(registries.bank_formats, registries.run_formats).load_bank_file(ROOT / "banks" / "example.yaml")
    return [bank.model_copy(update={"source": ""}) for bank in banks]


def read_leaderboard(path: Path) -> dict[tuple[str, str, str], float]:
    """(run, topic, measure) -> value of an ir_measures leaderboard file (``run topic measure value``)."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        run, topic, measure, value = line.split()
        rows[(run, topic, measure)] = float(value)
    return rows


# -- auto-judge run ------------------------------------------------------------------------------------

def test_the_example_inputs_are_what_the_converters_write(tmp_path: Path) -> None:
    """examples/autojudge/responses and topics.jsonl are the example exam's answers and queries, as
    ``python -m exam_harness.features.autojudge`` writes them (regenerate them with it when the example changes)."""
    assert autojudge_files(["reports", str(ROOT / "runs" / "rag.responses.jsonl"), "--bank",
                            str(ROOT / "banks" / "example.yaml"), "--out", str(tmp_path / "responses")]) == 0
    assert autojudge_files(["topics", str(ROOT / "banks" / "example.yaml"), "--out", str(tmp_path / "topics.jsonl")]) == 0
    written = sorted(p.name for p in (tmp_path / "responses").iterdir())
    assert written == sorted(p.name for p in (EXAMPLE / "responses").iterdir()) == ["rag-generator.jsonl"]
    for name in written:
        assert (tmp_path / "responses" / name).read_text() == (EXAMPLE / "responses" / name).read_text()
    assert (tmp_path / "topics.jsonl").read_text() == (EXAMPLE / "topics.jsonl").read_text()


def test_auto_judge_runs_the_example_workflow_offline(tmp_path: Path) -> None:
    """``auto-judge run --workflow examples/autojudge/workflow.yml`` (a subprocess, NLTK_DATA at the shipped
    folder) writes nugget banks, qrels and a leaderboard; the leaderboard holds exactly what ``exam-harness
    evaluate`` reports for the same answers, per topic and, as 'all', per run."""
    auto_judge = Path(sys.executable).parent / "auto-judge"
    out = tmp_path / "out"
    env = {**os.environ, "NLTK_DATA": str(NLTK_DATA), "PYTHONPATH": str(ROOT)}
    # the answer-key grader keeps the test quick; the workflow's own grader (embedding) runs offline too
    done = subprocess.run(
        [str(auto_judge), "run", "--workflow", str(EXAMPLE / "workflow.yml"), "--rag-responses",
         str(EXAMPLE / "responses"), "--rag-topics", str(EXAMPLE / "topics.jsonl"), "--out-dir", str(out),
         "-S", "grader=answer-key"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nltk_data" not in done.stderr  # no download was tried

    banks = example_banks()
    nuggets = load_nugget_banks_from_file(out / "exam.nuggets.jsonl")
    assert nugget_banks_to_banks(nuggets) == banks

    responses = {json.loads(line)["query_id"]: json.loads(line)["response"]
                 for line in (ROOT / "runs" / "rag.responses.jsonl").read_text().splitlines()}
    qrels = [line.split() for line in (out / "exam.qrels.txt").read_text().splitlines()]
    assert {(q, doc) for q, _, doc, _ in qrels} == {(q, answer_passage_id(text)) for q, text in responses.items()}

    board = read_leaderboard(out / "exam.eval.txt")
    report = tmp_path / "evaluate.json"
    assert exam_harness(["evaluate", str(ROOT / "runs" / "rag.responses.jsonl"), "--bank",
                         str(ROOT / "banks" / "example.yaml"), "--grader", "answer-key", "--measures", "exam-cover@20",
                         "--cache", "none", "--per-query", "--no-progress", "--json", str(report)]) == 0
    document = json.loads(report.read_text())
    expected = {(row["run"], row["query_id"], name): value
                for row in document["per_query"] for name, value in row["scores"].items()}
    expected |= {(s["run"], "all", name): score["mean"] for s in document["systems"]
                 for name, score in s["scores"].items()}
    assert board.keys() == expected.keys()
    assert len({topic for _, topic, _ in board}) == 5  # the four topics and 'all'
    for key, value in expected.items():
        assert board[key] == pytest.approx(value, abs=1e-12), key


def test_the_judge_without_banks_says_what_it_needs() -> None:
    from autojudge_base import Request

    from exam_harness.core.errors import ConfigError
    from exam_harness.features.autojudge.judge import ExamJudge

    topics = [Request(request_id="q", title="t")]
    with pytest.raises(ConfigError, match="needs banks"):
        ExamJudge().judge(rag_responses=[], rag_topics=topics, llm_config=None)
    with pytest.raises(ConfigError, match="'bank' setting"):
        ExamJudge().create_nuggets(rag_responses=[], rag_topics=topics, llm_config=None)


def test_the_offline_helper_prints_its_folder_without_a_warning() -> None:
    """``python -m exam_harness.features.autojudge.offline`` (the docs' NLTK_DATA recipe) prints the folder and nothing
    else: run under ``-W error`` it used to fail on runpy's RuntimeWarning (the package's __init__ had
    imported the module being run; issue 37, finding 10)."""
    done = subprocess.run([sys.executable, "-W", "error", "-m", "exam_harness.features.autojudge.offline"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == str(NLTK_DATA)


def test_the_shipped_stop_words_are_nltks_english_list() -> None:
    """The offline NLTK folder's stop words are the list graders/matching.py embeds (NLTK's, 179 words)."""
    from exam_harness.graders.matching import STOP_WORDS

    words = (NLTK_DATA / "corpora" / "stopwords" / "english").read_text(encoding="utf-8").split()
    assert len(words) == 179 and set(words) == STOP_WORDS
    assert (NLTK_DATA / "tokenizers" / "punkt").is_dir()


# -- converters -----------------------------------------------------------------------------------------

def test_banks_go_to_nugget_banks_and_back(tmp_path: Path) -> None:
    """Questions with gold answers, nuggets with importance, weights, required and facets survive
    NuggetBanks and autojudge-base's own file format."""
    query = Query(id="q1", text="what is a tide", facets={"f1": "the moon's part"})
    facet = [TestPoint(id="q1/f1/a", query_id="q1", kind="question", text="What pulls the water?",
                       gold_answers=("the moon", "lunar gravity"), facet_id="f1", weight=2.0, required=True)]
    plain = [TestPoint(id="q1/n", query_id="q1", kind="nugget", text="two bulges", importance="vital"),
             TestPoint(id="q1/m", query_id="q1", kind="nugget", text="neap tides", importance="okay", weight=0.5)]
    banks = [*example_banks(), QueryBank(query=query, test_points=tuple(plain)),
             QueryBank(query=query, facet_id="f1", test_points=tuple(facet))]
    path = tmp_path / "banks.jsonl"
    write_nugget_banks(banks_to_nugget_banks(banks), path)
    back = nugget_banks_to_banks(load_nugget_banks_from_file(path))
    assert sorted(back, key=lambda b: b.key) == sorted(banks, key=lambda b: b.key)


def test_nugget_banks_without_a_query_text_need_the_topics() -> None:
    bank = QueryBank(query=Query(id="q", text="t"), test_points=(
        TestPoint(id="q/1", query_id="q", kind="nugget", text="n"),))
    nugget_banks = banks_to_nugget_banks([bank])
    nugget_banks.banks["q"].title_query = None
    with pytest.raises(ValueError, match="no title_query"):
        nugget_banks_to_banks(nugget_banks)
    (back,) = nugget_banks_to_banks(nugget_banks, {"q": "t"})
    assert (back.query, back.test_points) == (bank.query, bank.test_points)
    assert back.metadata == {"title_query": None}  # the record had none: it comes back without one
    assert banks_to_nugget_banks([back]) == nugget_banks


def test_answers_go_to_reports_and_back() -> None:
    answers = [
        CitedAnswer(run="r1", query_id="q1", query="what is a tide", references=("d7", "d2"),
                    sentences=(CitedSentence("Tides rise.", (0,)), CitedSentence("The moon pulls.", (0, 1)),
                               CitedSentence("Twice a day."))),
        CitedAnswer(run="r2", query_id="q1", query="what is a tide", references=(),
                    sentences=(CitedSentence("No idea."),)),
    ]
    reports = answers_to_reports(answers)
    assert all(isinstance(r, Report) for r in reports)
    assert [r.get_sentences_with_citations()[1].citations for r in reports[:1]] == [["d7", "d2"]]
    back = reports_to_answers(reports, {"q1": "what is a tide"})
    assert [(a.run, a.query_id, a.query, a.references, a.sentences) for a in back] == \
        [(a.run, a.query_id, a.query, a.references, a.sentences) for a in answers]


def test_a_report_citing_document_ids_becomes_an_answer_with_references() -> None:
    """A NeuCLIR-style report (citations are document ids): references in order of first citation."""
    report = Report.model_validate({"metadata": {"team_id": "t", "run_id": "neu", "topic_id": "q9"},
                                    "responses": [{"text": "A.", "citations": ["x", "y"]},
                                                  {"text": "B.", "citations": ["y", "z"]}]})
    (answer,) = reports_to_answers([report], {"q9": "topic nine"})
    assert answer.references == ("x", "y", "z")
    assert [s.citations for s in answer.sentences] == [(0, 1), (1, 2)]
    assert answer.query == "topic nine"


# -- meta-evaluation against autojudge-evaluate ------------------------------------------------------

def write_leaderboard(path: Path, values: dict[str, dict[str, float]]) -> None:
    """run -> topic -> value, written by autojudge-base (its 'all' rows are the runs' means)."""
    builder = LeaderboardBuilder(LeaderboardSpec(measures=(MeasureSpec("M"),)))
    for run, by_topic in values.items():
        for topic, value in by_topic.items():
            builder.add(run_id=run, topic_id=topic, values={"M": value})
    builder.build().write(path, format="ir_measures")


def test_tau_ap_equals_autojudge_evaluates_tauap_b(tmp_path: Path) -> None:
    """The symmetric tau_AP of the runs' means, and per topic, equals autojudge-evaluate's ``tauap_b`` on
    the same leaderboard files (ties in both, some runs swapped) to 1e-12."""
    from autojudge_evaluate.evaluation import LeaderboardEvaluator

    truth = {f"r{i}": {"t1": 0.1 * i, "t2": [0.5, 0.3, 0.3, 0.9, 0.1, 0.7, 0.3][i]} for i in range(7)}
    judge = {f"r{i}": {"t1": [0.2, 0.1, 0.4, 0.4, 0.8, 0.6, 0.9][i], "t2": [0.6, 0.2, 0.5, 0.8, 0.5, 0.7, 0.1][i]}
             for i in range(7)}
    write_leaderboard(tmp_path / "truth.txt", truth)
    write_leaderboard(tmp_path / "judge.txt", judge)
    truth_board, judge_board = read_leaderboard(tmp_path / "truth.txt"), read_leaderboard(tmp_path / "judge.txt")
    evaluator = LeaderboardEvaluator(tmp_path / "truth.txt", correlation_methods=["tauap_b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its notes on tied rankings
        overall = evaluator.evaluate(tmp_path / "judge.txt")[("M", "M")]["tauap_b"]
        per_topic = evaluator.evaluate_per_topic(tmp_path / "judge.txt")[("M", "M")]
    runs = sorted(truth)

    def ours(topic: str) -> float:
        return tau_ap_symmetric([truth_board[(r, topic, "M")] for r in runs], [judge_board[(r, topic, "M")] for r in runs])

    assert ours("all") == pytest.approx(overall, abs=1e-12)
    assert set(per_topic) == {"t1", "t2"}
    for topic, figures in per_topic.items():
        assert ours(topic) == pytest.approx(figures["tauap_b"], abs=1e-12), topic
    assert len({round(ours(t), 9) for t in ("all", "t1", "t2")}) == 3  # three different figures compared


def test_alpha_and_kappa_equal_autojudge_evaluates_qrel_agreement(tmp_path: Path) -> None:
    """Krippendorff's alpha and Cohen's kappa of binary qrels, per topic, and the mean of the per-topic
    kappas, equal autojudge-evaluate's ``grade_agreement`` (its ``qrel-evaluate``) on the same files."""
    from autojudge_base.qrels.qrels import read_qrel_file
    from autojudge_evaluate.nugget_doc_eval import grade_agreement

    truth = {"t1": [1, 0, 1, 1, 0, 0, 1, 0], "t2": [0, 0, 1, 0, 1, 1], "t3": [1, 1, 1, 0, 0]}
    judge = {"t1": [1, 1, 1, 0, 0, 0, 1, 1], "t2": [0, 1, 1, 0, 0, 1], "t3": [1, 0, 1, 0, 1]}

    def qrels(labels: dict[str, list[int]]) -> Qrels:
        return Qrels(rows=[QrelRow(topic_id=t, doc_id=f"d{i}", grade=g) for t, gs in labels.items()
                           for i, g in enumerate(gs)])

    write_qrel_file(qrel_out_file=tmp_path / "truth.qrels", qrels=qrels(truth))
    write_qrel_file(qrel_out_file=tmp_path / "judge.qrels", qrels=qrels(judge))
    theirs = {r.topic_id: r for r in grade_agreement(read_qrel_file(tmp_path / "truth.qrels"),
                                                     read_qrel_file(tmp_path / "judge.qrels"))}
    labels = {(t, f"d{i}"): (truth[t][i], judge[t][i]) for t in truth for i in range(len(truth[t]))}
    assert set(theirs) == set(truth)
    for topic in truth:
        pairs = [(float(a), float(b)) for (t, _), (a, b) in labels.items() if t == topic]
        assert krippendorff_alpha(pairs, "nominal") == pytest.approx(theirs[topic].kripp_alpha, abs=1e-12)
        assert krippendorff_alpha(pairs, "interval") == pytest.approx(theirs[topic].kripp_alpha, abs=1e-12)
        alone: dict[tuple[str, str], tuple[int, int]] = {k: v for k, v in labels.items() if k[0] == topic}
        assert kappa_per_topic_and_pooled(alone)[1] == pytest.approx(theirs[topic].kappa_binary[(1, 1)], abs=1e-12)
    mean, _pooled = kappa_per_topic_and_pooled(labels)
    kappas: list[Any] = [theirs[t].kappa_binary[(1, 1)] for t in truth]
    assert mean == pytest.approx(math.fsum(kappas) / len(kappas), abs=1e-12)
