"""The TREC AutoJudge 2026 contract (issue 37, finding 6), with files shaped as the TREC RAG track's
(tests/trec_rag_official.py): ``auto-judge run`` with the endpoint and model named only in the ``llm_config``
autojudge-base injects, a rerun with the endpoint gone that writes the same bytes from the cache alone, the
track's scores (importance kept through ``create_nuggets``), no report text in what a run leaves behind under
``report_text: none``, the ``reports`` converter writing each answer once, and every autojudge-base 1.0.0
nugget-bank kind converted both ways. Skipped where the ``[autojudge]`` extra is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO

pytest.importorskip("nltk", reason="the [autojudge] extra is not installed (pip install 'exam-harness[autojudge]')")

from exam_harness.features.autojudge.offline import NLTK_DATA, use_offline_nltk_data

use_offline_nltk_data()
pytest.importorskip("autojudge_base", reason="the [autojudge] extra is not installed")
pytest.importorskip("openai")

from autojudge_base import LlmConfigBase, Report, Request  # noqa: E402
from autojudge_base.nugget_data import (  # noqa: E402
    NuggetBank,
    NuggetClaim,
    NuggetizerNuggetBanks,
    Ragtime26NuggetBanks,
    load_nugget_banks_from_file,
    load_ragtime26_nugget_banks_from_file,
    write_nugget_banks,
    write_ragtime26_nugget_banks,
)

from exam_harness.core.errors import ConfigError  # noqa: E402
from exam_harness.core.models import Query, QueryBank, TestPoint  # noqa: E402
from exam_harness.features.autojudge.convert import (  # noqa: E402
    QuestionDocs,
    banks_to_nugget_banks,
    banks_to_nugget_docs,
    banks_to_nuggetizer_banks,
    banks_to_ragtime26_banks,
    nugget_banks_to_banks,
    nugget_docs_to_banks,
    nuggetizer_banks_to_banks,
    ragtime26_banks_to_banks,
)
from exam_harness.features.autojudge.files import main as autojudge_files  # noqa: E402
from exam_harness.features.autojudge.judge import ExamJudge, NuggetizerExamJudge, llm_endpoint  # noqa: E402
from exam_harness.features.trec_rag.nuggets import read_nuggetizer_bank  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.trec_rag_official import OfficialFiles, ReplayJudge, nuggetizer_scores, official_files  # noqa: E402

OUTPUTS = ("exam.nuggets.jsonl", "exam.qrels.txt", "exam.eval.txt", "exam.eval.measures.yml")


def prepared(tmp_path: Path, files: OfficialFiles) -> tuple[Path, Path, Path]:
    """(nugget file, responses folder, topics file): the track's files, and the Reports and topics
    ``python -m exam_harness.features.autojudge`` makes of them."""
    nuggets, runs, _assigned = files.write(tmp_path / "track")
    responses, topics = tmp_path / "responses", tmp_path / "topics.jsonl"
    assert autojudge_files(["reports", str(runs), "--bank", str(nuggets), "--out", str(responses)]) == 0
    assert autojudge_files(["topics", str(nuggets), "--out", str(topics)]) == 0
    return nuggets, responses, topics


def report_sentences(files: OfficialFiles) -> list[str]:
    return [s["text"] for rows in files.answers.values() for row in rows for s in row["answer"]]


def test_the_reports_converter_writes_each_answer_once(tmp_path: Path) -> None:
    """A TREC RAG answer file's answers are among its responses too: each (run, topic) is one Report line
    (it was written twice, and ``auto-judge run`` stopped at 'a second answer for topic')."""
    files = official_files()
    _nuggets, responses, _topics = prepared(tmp_path, files)
    for run, rows in files.answers.items():
        lines = [json.loads(x) for x in (responses / f"{run}.jsonl").read_text().splitlines()]
        assert [line["metadata"]["narrative_id"] for line in lines] == [row["topic_id"] for row in rows]
        assert all(Report.model_validate(line) for line in lines)


def workflow(tmp_path: Path, nuggets: Path, cache: Path) -> Path:
    path = tmp_path / "workflow.yml"
    path.write_text(json.dumps({  # YAML is a superset of JSON
        "judge_class": "exam_harness.features.autojudge.judge.ExamJudge",
        "create_nuggets": True, "create_qrels": True, "judge": True,
        "settings": {"filebase": "exam", "bank": str(nuggets), "grader": "openai",
                     "grader_options": {"prompt": "nuggetizer-assignment"}, "cache": str(cache),
                     "report_text": "none"}}))
    return path


def auto_judge(flow: Path, responses: Path, topics: Path, out: Path, endpoint: str) -> subprocess.CompletedProcess[str]:
    """``auto-judge run`` as the 2026 test phase runs it: the endpoint and the model only in the environment
    autojudge-base reads into its llm_config (OPENAI_API_BASE, LLM_MODEL), none of it in the workflow."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_MODEL", "LLM_MODEL")}
    env.update(NLTK_DATA=str(NLTK_DATA), PYTHONPATH=str(REPO), OPENAI_API_BASE=endpoint, LLM_MODEL="fake-model",
               OPENAI_API_KEY="k")
    return subprocess.run([str(Path(sys.executable).parent / "auto-judge"), "run", "--workflow", str(flow),
                           "--rag-responses", str(responses), "--rag-topics", str(topics), "--out-dir", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


def leaderboard(path: Path) -> dict[tuple[str, str, str], float]:
    rows = {}
    for line in path.read_text().splitlines():
        run, topic, measure, value = line.split()
        rows[(run, topic, measure.split("(")[0])] = float(value)
    return rows


def test_auto_judge_runs_on_the_injected_endpoint_and_again_from_the_cache_alone(tmp_path: Path) -> None:
    files = official_files()
    nuggets, responses, topics = prepared(tmp_path, files)
    cache = tmp_path / "cache" / "grades.sqlite"
    flow = workflow(tmp_path, nuggets, cache)
    judge = ReplayJudge(files)
    with FakeOpenAIServer(judge) as server:
        first = auto_judge(flow, responses, topics, tmp_path / "out1", server.base_url)
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.requests and {r.body["model"] for r in server.requests} == {"fake-model"}  # llm_config's
        dead = server.base_url
    assert judge.unmatched == []
    # the track's scores are there (create_nuggets kept each nugget's importance) and are the assignments'
    board = leaderboard(tmp_path / "out1" / "exam.eval.txt")
    for rows in files.assignments.values():
        for row in rows:
            for key, value in nuggetizer_scores(row["nuggets"]).items():
                assert board[(row["run_id"], row["qid"], key)] == pytest.approx(value, abs=1e-9), (row["qid"], key)
    # the endpoint is gone (and named otherwise): the same bytes from the cache alone
    second = auto_judge(flow, responses, topics, tmp_path / "out2", dead.replace("127.0.0.1", "localhost"))
    assert second.returncode == 0, second.stderr[-3000:]
    for name in OUTPUTS:
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes(), name
    # autojudge-base's run record differs only where it notes when the run was made
    configs = [[line for line in (tmp_path / out / "exam.config.yml").read_text().splitlines()
                if not line.startswith("timestamp:")] for out in ("out1", "out2")]
    assert configs[0] == configs[1]
    # report_text: none: nothing a run leaves behind quotes a report (the outputs, the cache and its journal)
    left = [p for folder in (tmp_path / "out1", tmp_path / "out2", cache.parent) for p in folder.rglob("*") if p.is_file()]
    assert any(p.name.startswith("grades.sqlite") for p in left)
    for path in left:
        data = path.read_bytes()
        assert not [s for s in report_sentences(files) if s.encode() in data], path


def test_the_policy_mode_keeps_no_answer_text_in_the_cache(tmp_path: Path) -> None:
    """An answer-extraction judge answers with the report's own words: kept in the cache as each grade's reason,
    unless ``report_text: none``, when the cache holds the grades alone (and the figures are the same)."""
    sentence = "The moon pulls the oceans into two bulges."
    reports = [Report.model_validate({"metadata": {"team_id": "t", "run_id": "r1", "narrative_id": "q1",
                                                   "narrative": "what causes tides"},
                                      "references": [], "answer": [{"text": sentence, "citations": []}]})]
    topics = [Request(request_id="q1", title="what causes tides")]
    bank = tmp_path / "bank.yaml"
    bank.write_text("queries:\n  - id: q1\n    text: what causes tides\n    questions: [What pulls the oceans?]\n")
    figures = {}
    with FakeOpenAIServer(lambda _prompt: sentence) as server:
        config = LlmConfigBase(model="fake-model", base_url=server.base_url, api_key="k")
        for policy in ("keep", "none"):
            cache = tmp_path / policy / "grades.sqlite"
            settings: dict[str, Any] = {"bank": str(bank), "grader": "openai", "cache": str(cache),
                                        "grader_options": {"prompt": "answer-extraction"}, "report_text": policy}
            board = ExamJudge().judge(rag_responses=reports, rag_topics=topics, llm_config=config, **settings)
            figures[policy] = board.model_dump_json() if hasattr(board, "model_dump_json") else repr(board)
            held = b"".join(p.read_bytes() for p in cache.parent.iterdir())
            assert (sentence.encode() in held) == (policy == "keep"), policy
    assert figures["keep"] == figures["none"]


def test_the_judge_takes_the_model_from_the_injected_llm_config() -> None:
    """One model, or several as the organisers' available-models file lists them (``raw["models"]``): the
    ``model`` setting chooses; a model the config does not offer is a ConfigError naming those it does."""
    one = LlmConfigBase(model="m1", base_url="http://h:1/v1", api_key="x")
    assert llm_endpoint(one) == llm_endpoint(one, "m1") and llm_endpoint(one).base_url == "http://h:1/v1"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="not the injected llm_config's"):
        llm_endpoint(one, "m2")
    several = LlmConfigBase(model="llama", raw={"default_model": "llama", "models": {
        "llama": {"base_url": "http://a:1/v1", "model_id": "llama-3.3-70b"},
        "gpt-4o": {"base_url": "http://b:2/v1", "model_id": "gpt-4o-2024-08-06"}}})
    chosen = llm_endpoint(several, "gpt-4o")
    assert chosen is not None and (chosen.model, chosen.base_url) == ("gpt-4o-2024-08-06", "http://b:2/v1")
    assert llm_endpoint(several).model == "llama-3.3-70b"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"'claude' is not among the injected llm_config's models: llama, gpt-4o"):
        llm_endpoint(several, "claude")


# -- every nugget-bank kind of autojudge-base 1.0.0, both ways ----------------------------------------------


def track_banks(tmp_path: Path, words: bool = False) -> list[QueryBank]:
    """The official-shaped nugget file's banks (repeats, odd importances); ``words``: importances among
    autojudge-base's nuggetizer words (vital/okay/failed)."""
    files = official_files()
    if words:
        for line in files.nuggets:
            for nugget in line["nuggets"]:
                if nugget["importance"] not in ("vital", "okay"):
                    nugget["importance"] = "failed"
    nuggets, _, _ = files.write(tmp_path)
    banks, _ = read_nuggetizer_bank(nuggets)
    return [b.model_copy(update={"source": ""}) for b in banks]


def test_nugget_banks_keep_every_copy_and_importance(tmp_path: Path) -> None:
    """AutoArgue's v3 keys nuggets by text: every copy of a repeated text is kept (the conversion dropped 19 -> 16),
    and an empty or multi-word importance comes back as it went."""
    banks = track_banks(tmp_path)
    path = tmp_path / "v3.jsonl"
    write_nugget_banks(banks_to_nugget_banks(banks), path)
    back = nugget_banks_to_banks(load_nugget_banks_from_file(path))
    assert back == banks
    assert sum(len(b.test_points) for b in back) == 50


def test_nuggetizer_style_banks_both_ways(tmp_path: Path) -> None:
    banks = track_banks(tmp_path, words=True)
    kind = banks_to_nuggetizer_banks(banks)
    path = tmp_path / "nuggetizer.jsonl"
    write_nugget_banks(kind, path)
    loaded = NuggetizerNuggetBanks.model_validate(kind.model_dump())
    assert nuggetizer_banks_to_banks(loaded) == banks  # exam -> kind -> exam
    # kind -> exam -> kind on nuggetizer's published create output (its docs' example, every field it holds)
    published = NuggetizerNuggetBanks.from_banks_list([NuggetizerNuggetBanks.get_bank_model().model_validate(
        {"query": "What is Python?", "qid": "q1", "nuggets": [
            {"text": "Python is a high-level programming language", "importance": "vital"},
            {"text": "Python was created by Guido van Rossum", "importance": "vital"},
            {"text": "Python is used for web development", "importance": "okay"},
            {"text": "Python is used for web development", "importance": "failed"}]})])
    assert banks_to_nuggetizer_banks(nuggetizer_banks_to_banks(published)) == published
    with pytest.raises(ValueError, match="importance '' is none of vital, okay, failed"):
        banks_to_nuggetizer_banks(track_banks(tmp_path / "odd"))


def test_the_nuggetizer_judge_makes_nuggets_of_its_kind(tmp_path: Path) -> None:
    """``NuggetizerExamJudge``: autojudge-base reads ``--nugget-banks`` as NuggetizerNuggetBanks and writes what
    ``create_nuggets`` makes as them; the bank setting's nugget file comes out as that kind, every copy kept."""
    banks = track_banks(tmp_path, words=True)  # writes tmp_path / "nuggets.jsonl"
    topics = [Request(request_id=b.query.id, title=b.query.text) for b in banks]
    made = NuggetizerExamJudge().create_nuggets(rag_responses=None, rag_topics=topics, llm_config=None,
                                                bank=str(tmp_path / "nuggets.jsonl"))
    assert NuggetizerExamJudge.nugget_banks_type is NuggetizerNuggetBanks
    assert isinstance(made, NuggetizerNuggetBanks) and made == banks_to_nuggetizer_banks(banks)
    assert sum(len(b.nuggets) for b in made.banks.values()) == 50


def test_ragtime26_banks_both_ways() -> None:
    query = Query(id="topic-1", text="how are reports judged", facets={"f": "the facet"})
    questions = (TestPoint(id="topic-1/a", query_id="topic-1", kind="question", text="First example question?",
                           gold_answers=("example answer", "another"), importance="3", weight=2.0),
                 TestPoint(id="topic-1/b", query_id="topic-1", kind="question", text="First example question?"))
    facet = (TestPoint(id="topic-1/f/c", query_id="topic-1", kind="question", text="A facet's question?",
                       facet_id="f", required=True),)
    banks = [QueryBank(query=query, test_points=questions), QueryBank(query=query, facet_id="f", test_points=facet)]
    kind = banks_to_ragtime26_banks(banks)
    again = Ragtime26NuggetBanks.model_validate(json.loads(kind.model_dump_json()))
    assert ragtime26_banks_to_banks(again) == banks  # exam -> kind -> exam, through the kind's JSON
    # kind -> exam -> kind on the kind's published example (autojudge-base's ragtime26 docstring), topic text given
    published = Ragtime26NuggetBanks.from_banks_list([Ragtime26NuggetBanks.get_bank_model().model_validate(
        {"metadata": {"team_id": "example-team", "topic_id": "topic-1", "run_id": "example-run"},
         "nugget_bank": [{"question": "First example question?", "answers": [{"answer": "example answer"}]}]})])
    (bank,) = ragtime26_banks_to_banks(published, {"topic-1": "how are reports judged"})
    assert [(tp.text, tp.gold_answers) for tp in bank.test_points] == [("First example question?", ("example answer",))]
    with pytest.raises(ValueError, match="holds questions only"):
        banks_to_ragtime26_banks([QueryBank(query=query, test_points=(
            TestPoint(id="topic-1/n", query_id="topic-1", kind="nugget", text="a claim"),))])


def test_nugget_documents_both_ways() -> None:
    """A topic's questions with the documents that answer each (autojudge-base's TopicNuggetDocs), a repeated
    question kept."""
    from autojudge_base.nugget_doc_models import NuggetDocEntry, TopicNuggetDocs

    topics = {"t1": TopicNuggetDocs(topic_id="t1", entries=[
        NuggetDocEntry(question="Who?", doc_ids=["d1", "d2"]),
        NuggetDocEntry(question="Who?", doc_ids=["d3"], aggregator="AND"),
        NuggetDocEntry(question="When?", doc_ids=[])])}
    banks, docs = nugget_docs_to_banks(topics, {"t1": "a topic"})
    assert [tp.text for tp in banks[0].test_points] == ["Who?", "Who?", "When?"]
    assert banks_to_nugget_docs(banks, docs) == topics
    assert docs[banks[0].test_points[1].id] == QuestionDocs(("d3",), "AND")


# -- a kind's record whole: kind -> exam bank (written and read as a bank file) -> kind ----------------------


def through_bank_files(tmp_path: Path, banks: list[QueryBank], *, nugget_file: bool = False) -> list[QueryBank]:
    """``banks`` written and read back as each native bank format (hand YAML, hand JSON, Workbench JSON lines, and
    with ``nugget_file`` a nuggetizer nugget file), checked equal whole (test points and the bank's metadata) on
    the way, and the last reading returned: what the kind converts back comes from a file."""
    from exam_harness.features.trec_rag.nuggets import write_nuggetizer_nuggets
    from exam_harness.io.banks import load_bank
    from exam_harness.io.generated_banks import write_bank

    read = banks
    for name in ("bank.yaml", "bank.json", "bank.jsonl", *(("nuggets.jsonl",) if nugget_file else ())):
        if name == "nuggets.jsonl":
            write_nuggetizer_nuggets(tmp_path / name, read)
            read = [b.model_copy(update={"source": ""}) for b in read_nuggetizer_bank(tmp_path / name)[0]]
        else:
            write_bank(tmp_path / name, read)
            read = [b.model_copy(update={"source": ""}) for b in load_bank(tmp_path / name)]
        assert read == [b.model_copy(update={"source": ""}) for b in banks], name
    return read


def test_v3_records_round_trip_whole(tmp_path: Path) -> None:
    """autojudge-base's own example bank (nugget_data_example.dummy_model: sub-nuggets, aggregator types, an int
    importance, free-form metadata, answers with references, query ids other than the bank's): every nugget
    comes back equal in every field, through the bank files."""
    from autojudge_base.nugget_data import NuggetBanks
    from autojudge_base.nugget_data.nugget_data_example import dummy_model

    published = dummy_model()
    banks = nugget_banks_to_banks(NuggetBanks.from_banks_list([published]))
    assert any(tp.metadata.get("sub_nuggets") for b in banks for tp in b.test_points)  # the records' other fields
    back = banks_to_nugget_banks(through_bank_files(tmp_path, banks)).banks[str(published.query_id)]
    assert [n.model_dump() for n in back.nuggets_as_list()] == [n.model_dump() for n in published.nuggets_as_list()]
    # written to the kind's file and read back by autojudge-base, too
    write_nugget_banks(NuggetBanks.from_banks_list([back]), tmp_path / "v3.jsonl")
    loaded = load_nugget_banks_from_file(tmp_path / "v3.jsonl").banks[str(published.query_id)]
    assert [n.model_dump() for n in loaded.nuggets_as_list()] == [n.model_dump() for n in published.nuggets_as_list()]


def test_nuggetizer_records_round_trip_whole(tmp_path: Path) -> None:
    """A nuggetizer nugget with its reasoning, trace and assignment (autojudge-base's NuggetizerNugget fields)
    comes back whole; a metadata key the kind has no field for is refused, never dropped."""
    published = NuggetizerNuggetBanks.from_banks_list([NuggetizerNuggetBanks.get_bank_model().model_validate(
        {"query": "What is Python?", "qid": "q1", "nuggets": [
            {"text": "Python is a high-level programming language", "importance": "vital",
             "reasoning": "the definition every answer needs", "assignment": "support",
             "trace": {"model": "gpt-4o", "window": [0, 10], "scores": [0.9, None]}},
            {"text": "Python is used for web development", "importance": "okay", "reasoning": "a use"},
            {"text": "Python is used for web development", "importance": "failed", "trace": ["a", 1]}]})])
    banks = nuggetizer_banks_to_banks(published)
    assert dict(banks[0].test_points[0].metadata)["reasoning"] == "the definition every answer needs"
    assert banks_to_nuggetizer_banks(through_bank_files(tmp_path, banks)) == published
    stray = banks[0].model_copy(update={"test_points": (banks[0].test_points[0].model_copy(
        update={"metadata": {**banks[0].test_points[0].metadata, "source": "wiki"}}),)})
    with pytest.raises(ValueError, match="its metadata holds 'source', which a nuggetizer nugget has no field for"):
        banks_to_nuggetizer_banks([stray])


def test_ragtime26_records_round_trip_whole(tmp_path: Path) -> None:
    """The ragtime26 docstring's example grown to every field the kind allows (aggregator type, an int importance,
    answer references as ids and as References, metadata on nuggets and answers): each nugget whole."""
    published = Ragtime26NuggetBanks.from_banks_list([Ragtime26NuggetBanks.get_bank_model().model_validate(
        {"metadata": {"team_id": "example-team", "topic_id": "topic-1", "run_id": "example-run"},
         "nugget_bank": [
             {"question": "First example question?", "aggregator_type": "AND", "importance": 2,
              "metadata": {"source": "assessor-3", "notes": ["checked"]},
              "answers": [{"answer": "example answer", "references": ["doc-1", {"doc_id": "doc-2", "quality": 2}]},
                          {"answer": "another", "metadata": {"confidence": 0.5}}]},
             {"question": "First example question?", "aggregator_type": "OR", "answers": []},
             {"question": "Second question?"}]})])
    banks = ragtime26_banks_to_banks(published, {"topic-1": "how are reports judged"})
    back = banks_to_ragtime26_banks(through_bank_files(tmp_path, banks))
    assert back.banks["topic-1"].nugget_bank == published.banks["topic-1"].nugget_bank
    again = Ragtime26NuggetBanks.model_validate(json.loads(back.model_dump_json()))  # through the kind's JSON
    assert again.banks["topic-1"].nugget_bank == published.banks["topic-1"].nugget_bank
    # an edited importance wins over the typed one the metadata kept; answers the gold answers no longer match fail
    (first, *_), = (b.test_points for b in banks)
    edited = banks_to_ragtime26_banks([banks[0].model_copy(update={"test_points": (first.model_copy(
        update={"importance": "vital"}),)})])
    assert edited.banks["topic-1"].nugget_bank[0].importance == "vital"
    with pytest.raises(ValueError, match="one object per gold answer"):
        banks_to_ragtime26_banks([banks[0].model_copy(update={"test_points": (first.model_copy(
            update={"gold_answers": ("example answer",)}),)})])


def test_nugget_document_records_round_trip_whole(tmp_path: Path) -> None:
    """Nugget documents keep each question's documents in its metadata: the bank files alone convert back."""
    from autojudge_base.nugget_doc_models import NuggetDocEntry, TopicNuggetDocs

    topics = {"t1": TopicNuggetDocs(topic_id="t1", entries=[
        NuggetDocEntry(question="Who?", doc_ids=["d1", "d2"]),
        NuggetDocEntry(question="Who?", doc_ids=["d3"], aggregator="AND", answer_type="SPAN"),
        NuggetDocEntry(question="When?", doc_ids=[])])}
    banks, _docs = nugget_docs_to_banks(topics, {"t1": "a topic"})
    assert banks_to_nugget_docs(through_bank_files(tmp_path, banks)) == topics


def test_exam_metadata_rides_in_the_kinds_that_have_room(tmp_path: Path) -> None:
    """exam -> kind -> exam: metadata keys no field of v3 or ragtime26 names travel under the exam's key in the
    nugget's metadata; a value a kind's field cannot take is refused naming the test point."""
    query = Query(id="q1", text="a query")
    point = TestPoint(id="q1/a", query_id="q1", kind="question", text="Who?", gold_answers=("Ann",), choices=("Ann", "Bo"),
                      required=True, required_runs=("r*",), metadata={"source": "wiki", "trace": [1, {"x": None}]})
    banks = [QueryBank(query=query, test_points=(point,))]
    assert nugget_banks_to_banks(banks_to_nugget_banks(banks)) == banks
    assert ragtime26_banks_to_banks(banks_to_ragtime26_banks(banks)) == banks
    bad = point.model_copy(update={"metadata": {"creator": "Laura"}})
    with pytest.raises(ValueError, match=r"test point 'q1/a' cannot be written as a NuggetBank .*'creator'"):
        banks_to_nugget_banks([QueryBank(query=query, test_points=(bad,))])


# -- a kind's whole file: its bank records too (one per query), kind -> exam bank -> bank files -> kind ----------


def test_v3_banks_round_trip_whole(tmp_path: Path) -> None:
    """autojudge-base's example bank (dummy_model) with the per-bank fields its README's example sets (full_query,
    test_collection, creator) and the rest of NuggetBank's (quality, importance, its own metadata, a title_query
    left out, a format_version; an exam key as older versions wrote it): the whole bank record comes back, through
    the bank files and the kind's file."""
    from autojudge_base.nugget_data import Creator, NuggetBanks
    from autojudge_base.nugget_data.nugget_data_example import dummy_model

    published = dummy_model()
    published.full_query = {"background": "As an archaeologist leading an expedition in South America, ...",
                            "problem_statement": "Produce a report on the mysteries of Machu Picchu's architecture."}
    published.test_collection = "neuclir24"
    published.add_creator(Creator(is_human=True, contact=["NIST", "Dawn Lawrie"]))
    published.quality, published.importance = 2, "high"
    published.metadata = {"version": "0.0.1", "notes": [1, {"x": None}]}
    plain = NuggetBank(query_id="q2", title_query=None, format_version="v3.1",
                       claim_bank={"c": NuggetClaim(query_id="q2", claim="c")})
    older = NuggetBank(query_id="q3", title_query="t", metadata={"exam_harness": {"facets": {}}},  # the converter wrote it so before
                       claim_bank={"d": NuggetClaim(query_id="q3", claim="d")})
    kind = NuggetBanks.from_banks_list([published, plain, older])
    banks = nugget_banks_to_banks(kind, {"q2": "a topic's text"})
    by_key = {b.key: b for b in banks}
    assert by_key["123"].metadata["test_collection"] == "neuclir24" and by_key["q2"].metadata["title_query"] is None
    back = banks_to_nugget_banks(through_bank_files(tmp_path, banks))
    assert back.model_dump() == kind.model_dump()  # every bank, every field, every nugget
    write_nugget_banks(back, tmp_path / "v3.jsonl")
    assert load_nugget_banks_from_file(tmp_path / "v3.jsonl").model_dump() == kind.model_dump()


def test_nuggetizer_banks_round_trip_whole(tmp_path: Path) -> None:
    """A NuggetizerNuggetBank's full_query (and an empty query, the topic's text in the exam) comes back, through
    the bank files and a nuggetizer nugget file (the line's other fields are its bank's metadata)."""
    published = NuggetizerNuggetBanks.from_banks_list([NuggetizerNuggetBanks.get_bank_model().model_validate(q) for q in (
        {"query": "What is Python?", "qid": "q1", "full_query": {"title": "Python", "narrative": ["a language"]},
         "nuggets": [{"text": "Python is a high-level programming language", "importance": "vital",
                      "reasoning": "the definition"}]},
        {"query": "", "qid": "q2", "nuggets": [{"text": "a nugget", "importance": "okay"}]})])
    banks = nuggetizer_banks_to_banks(published, {"q2": "the topic's text"})
    assert [b.metadata for b in banks] == [{"full_query": {"title": "Python", "narrative": ["a language"]}},
                                           {"query": ""}]
    assert banks_to_nuggetizer_banks(through_bank_files(tmp_path, banks[:1], nugget_file=True)) == \
        NuggetizerNuggetBanks.from_banks_list([published.banks["q1"]])
    assert banks_to_nuggetizer_banks(through_bank_files(tmp_path, banks)) == published
    with pytest.raises(ValueError, match="its metadata holds 'source', which a nuggetizer bank has no field for"):
        banks_to_nuggetizer_banks([banks[0].model_copy(update={"metadata": {"source": "wiki"}})])


def test_ragtime26_banks_round_trip_whole(tmp_path: Path) -> None:
    """The ragtime26 docstring's example whole: its run metadata (team_id, run_id, run_desc, a field the spec
    allows beside them; a bank with none but its topic id) comes back as published, with no key of ours added."""
    published = Ragtime26NuggetBanks.from_banks_list([Ragtime26NuggetBanks.get_bank_model().model_validate(
        {"metadata": {"team_id": "example-team", "topic_id": "topic-1", "run_id": "example-run",
                      "run_desc": "example run description", "submitted": {"at": "2026-05-01", "by": ["ann"]}},
         "nugget_bank": [{"question": "First example question?", "aggregator_type": "AND",
                          "answers": [{"answer": "example answer", "references": ["doc-1"]}]}]}),
        Ragtime26NuggetBanks.get_bank_model().model_validate(
            {"metadata": {"topic_id": "topic-2", "run_desc": None}, "nugget_bank": [{"question": "Why?"}]})])
    banks = ragtime26_banks_to_banks(published, {"topic-1": "how are reports judged", "topic-2": "another"})
    assert banks[0].metadata == {"metadata": {"team_id": "example-team", "run_id": "example-run",
                                              "run_desc": "example run description",
                                              "submitted": {"at": "2026-05-01", "by": ["ann"]}}}
    back = banks_to_ragtime26_banks(through_bank_files(tmp_path, banks))
    assert back == published
    assert json.loads(back.model_dump_json()) == json.loads(published.model_dump_json())
    write_ragtime26_nugget_banks(back, tmp_path / "ragtime26.jsonl")  # autojudge-base's file: a null is no value
    assert load_ragtime26_nugget_banks_from_file(tmp_path / "ragtime26.jsonl") == published
    # an exam-made bank whose run metadata a team filled in: the exam's key is kept, rewritten from the bank
    made = banks_to_ragtime26_banks([QueryBank(query=Query(id="topic-1", text="how are reports judged"),
                                               test_points=banks[0].test_points)])
    assert made.banks["topic-1"].metadata.model_dump(exclude_unset=True) == {
        "topic_id": "topic-1", "exam_harness": {"query": "how are reports judged", "facets": {}}}
    made.banks["topic-1"].metadata.team_id = "team"
    (read,) = ragtime26_banks_to_banks(made)
    assert banks_to_ragtime26_banks([read]) == made
    renamed = banks_to_ragtime26_banks([read.model_copy(update={"query": Query(id="topic-1", text="renamed")})])
    assert (renamed.banks["topic-1"].metadata.model_extra or {})["exam_harness"]["query"] == "renamed"


def test_nugget_documents_have_no_per_topic_record() -> None:
    """A topic's nugget documents are its id and entries only (autojudge-base 1.0.0): nothing per topic to carry."""
    from autojudge_base.nugget_doc_models import TopicNuggetDocs

    assert set(TopicNuggetDocs.model_fields) == {"topic_id", "entries"}


def test_bank_metadata_rides_in_the_kinds_that_have_room() -> None:
    """exam -> kind -> exam with a bank's own metadata: keys no field of v3 or ragtime26 names travel under the
    exam's key, the kind's names as its fields, the same on every facet bank of the query; banks of one query
    with different metadata are refused (a kind holds one record per query), and so are held names."""
    query = Query(id="q1", text="a query", facets={"f": "a facet"})
    own = QueryBank(query=query, test_points=(TestPoint(id="q1/a", query_id="q1", kind="question", text="Who?"),),
                    metadata={"source": "wiki", "quality": 2, "full_query": {"title": "tides", "ids": [1]}})
    facet = QueryBank(query=query, facet_id="f", metadata=own.metadata, test_points=(
        TestPoint(id="q1/f/b", query_id="q1", kind="question", text="When?", facet_id="f"),))
    v3 = banks_to_nugget_banks([own, facet])
    assert (v3.banks["q1"].quality, v3.banks["q1"].full_query) == (2, {"title": "tides", "ids": [1]})
    assert nugget_banks_to_banks(v3) == [own, facet]
    ragtime = banks_to_ragtime26_banks([own.model_copy(update={"metadata": {"source": "wiki"}})])
    assert ragtime26_banks_to_banks(ragtime) == [own.model_copy(update={"metadata": {"source": "wiki"}})]
    with pytest.raises(ValueError, match="banks 'q1' and 'q1/f' of query 'q1' carry different metadata"):
        banks_to_nugget_banks([own, facet.model_copy(update={"metadata": {}})])
    with pytest.raises(ValueError, match="its metadata names 'nugget_bank'"):
        banks_to_ragtime26_banks([own.model_copy(update={"metadata": {"nugget_bank": []}})])
    with pytest.raises(ValueError, match=r"bank 'q1' cannot be written as a NuggetBank .*'quality\.str'"):
        banks_to_nugget_banks([own.model_copy(update={"metadata": {"quality": [1]}})])
