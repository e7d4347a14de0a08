"""``exam-harness generate`` end to end against the local fake OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from exam_harness.core.errors import InputError
from exam_harness.core.models import md5_hex
from exam_harness.features.generate import command
from exam_harness.io.generated_banks import read_generated_ids, sidecar_path
from exam_harness.io.handbank import load_hand_bank
from exam_harness.io.queries import load_queries
from exam_harness.io.workbench import load_workbench_bank
from tests.fake_openai_server import FakeOpenAIServer, Fault
from tests.paths import SHARED_DATA

pytest.importorskip("openai")


def responder(prompt: str) -> str:
    """Answers a generation prompt with three items derived from the query (or subtopic)."""
    if "GARBLED" in prompt:
        return "Sorry, I can only answer in prose."
    subject = prompt.split("'")[1] if "'" in prompt else "?"
    if "subtopic '" in prompt:
        subject = prompt.split("subtopic '")[1].split("'")[0]
    if "nuggets" in prompt:
        return "```json\n" + json.dumps({"nuggets": [f"{subject} fact {i}" for i in range(3)]}) + "\n```"
    return f"Sure:\n{{'questions': ['What is {subject}?', 'Why does {subject} matter?', 'Who uses {subject}?']}}\nDone."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder) as srv:
        yield srv


def cli(*argv: str) -> int:
    from exam_harness.cli import main

    return main(list(argv))


def fast(server: FakeOpenAIServer) -> list[str]:
    return [
        "--base-url", server.base_url, "--model", "gen-model",
        "--option", "api_key=k", "--option", "backoff_base=0.001", "--option", "backoff_max=0.002",
    ]  # fmt: skip


def test_parser_registers(tmp_path: Path) -> None:
    """The feature's subcommand is the command line's: ``exam-harness generate`` parses into its run."""
    from exam_harness.cli import build_parser

    args = build_parser(["generate", "q.json", "--out", "b.yaml", "--kind", "nuggets"]).parse_args(
        ["generate", "q.json", "--out", "b.yaml", "--kind", "nuggets"])
    assert args.func == command.COMMAND.run and args.kind == "nuggets" and args.backend == "openai"
    assert "generate" in build_parser().format_help()  # listed with every subcommand too


def test_generate_questions_from_json_queries(tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps({"q1": "ocean tides", "q2": "sous vide"}))
    out = tmp_path / "banks" / "gen.yaml"
    server.add_faults("ocean tides", Fault("status", status=429, retry_after="0"), Fault("garbage"))
    assert cli("generate", str(queries), "--out", str(out), *fast(server)) == 0
    banks = load_hand_bank(out)
    assert [b.key for b in banks] == ["q1", "q2"]
    assert [tp.text for tp in banks[0].test_points] == ["What is ocean tides?", "Why does ocean tides matter?", "Who uses ocean tides?"]
    assert banks[0].test_points[0].id == f"q1/{md5_hex('What is ocean tides?')}"
    assert server.count("ocean tides") == 3 and server.count("sous vide") == 1  # two faults, then the answer
    assert len(read_generated_ids(out)) == 6
    body = server.requests[-1].body
    assert body["model"] == "gen-model" and body["max_tokens"] == 1024
    assert body["messages"][1]["content"].startswith("Break the query '")
    assert "<passage>" not in body["messages"][1]["content"]  # no passage to fence
    printed = capsys.readouterr().out
    assert "2 banks generated, 6 questions added" in printed and "retries 2" in printed

    # Running again spends nothing: both banks already have questions.
    assert cli("generate", str(queries), "--out", str(out), *fast(server)) == 0
    assert len(server.requests) == 4 and "2 banks skipped" in capsys.readouterr().out


def test_generate_nuggets_with_facets_from_tsv(tmp_path: Path, server: FakeOpenAIServer) -> None:
    queries = tmp_path / "queries.tsv"
    queries.write_text("# id\ttext\ncar1\tEarth Science\nq2\tsous vide\n")
    facets = tmp_path / "facets.tsv"
    facets.write_text("car1\tf1\tGeology\ncar1\tf2\tWeather\n")
    out = tmp_path / "gen.jsonl"
    argv = ["generate", str(queries), "--out", str(out), "--kind", "nuggets", "--facets", str(facets), *fast(server)]
    assert cli(*argv, "--option", "endpoint=completions") == 0
    banks = load_workbench_bank(out)
    assert [b.key for b in banks] == ["car1/f1", "car1/f2", "q2"]
    assert banks[0].query.text == "Earth Science / Geology" and banks[0].query.facets == {"f1": "Geology"}
    assert banks[0].test_points[0].id == f"car1/f1/{md5_hex('Geology fact 0')}"
    assert all(tp.kind == "nugget" for b in banks for tp in b.test_points)
    assert {r.path for r in server.requests} == {"/v1/completions"}
    assert any("specific focus on the subtopic 'Weather'" in r.prompt for r in server.requests)


def test_failures_exit_non_zero_and_keep_the_rest(tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps({"good": "tides", "down": "server down", "prose": "GARBLED"}))
    server.add_faults("server down", *[Fault("status", status=502)] * 20)
    out = tmp_path / "gen.yaml"
    assert cli("generate", str(queries), "--out", str(out), *fast(server), "--option", "max_retries=2") == 1
    assert [b.key for b in load_hand_bank(out)] == ["good"]
    err = capsys.readouterr().err
    assert "failed: down: " in err and "HTTP 502" in err and "3 attempts" in err
    assert "failed: prose: no list of questions" in err
    assert server.count("server down") == 3


def test_dry_run_sends_nothing(tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps({"q1": "tides", "q2": "waves"}))
    out = tmp_path / "gen.yaml"
    assert cli("generate", str(queries), "--out", str(out), "--base-url", server.base_url, "--model", "m", "--dry-run") == 0
    printed = capsys.readouterr().out
    assert printed.startswith("dry run: 2 calls, about ") and "nothing sent" in printed
    tokens = int(printed.split("about ")[1].split()[0])
    assert tokens > 2 * 100  # two prompts of ~500 characters plus the system message
    assert server.count() == 0 and not out.exists() and not sidecar_path(out).exists()


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        ('["q1", "text"]', "q.json", "must be a JSON object"),
        ('{"q1": 3}', "q.json", "query text must be a string"),
        ("q1 text without tab\n", "q.tsv", "needs a tab"),
        ("q1\tone\nq1\ttwo\n", "q.tsv", "duplicate query id"),
        ('{"bad id": "x"}', "q.json", "bad query id"),
    ],
)
def test_bad_query_files(tmp_path: Path, content: str, name: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        load_queries(path)
    assert str(path) in str(info.value)


def test_bad_input_is_a_one_line_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tone\n")
    facets = tmp_path / "f.tsv"
    facets.write_text("q9\tf1\tother\n")
    code = cli("generate", str(queries), "--out", str(tmp_path / "b.yaml"), "--facets", str(facets), "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert code == 4
    err = capsys.readouterr().err
    assert "facet of an unknown query" in err and "f.tsv:1" in err and "'q9'" in err
    assert cli("generate", str(queries), "--out", str(tmp_path / "b.txt"), "--model", "m") == 4
    assert "unknown bank file type" in capsys.readouterr().err
    assert cli("generate", str(queries), "--out", str(tmp_path / "b.yaml"), "--model", "m", "--base-url", "http://x/v1", "--option", "colour=red") == 4
    assert "unknown option 'colour'" in capsys.readouterr().err


DATA = SHARED_DATA


@pytest.mark.realdata
def test_reads_the_published_dl19_queries_file() -> None:
    path = DATA / "dl19" / "dl19-queries.json"
    if not path.exists():
        pytest.skip("../shared/data is absent")
    queries = load_queries(path)
    assert len(queries) == 43
    assert queries[0].id == "1115776" and queries[0].text == "what is an aml surveillance analyst"


@pytest.mark.slow  # imports torch and transformers
def test_hf_backend_is_wired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tiny random T5 (FLAN-T5 style: it answers one digit) goes through the hf backend; its answer
    holds no list, so the bank fails to generate and the command says so."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.tiny_models import build_t5, save_model, train_tokenizer

    tokenizer = train_tokenizer()
    folder = save_model(build_t5(tokenizer), tokenizer, tmp_path / "tiny-t5")
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\twhere is the eiffel tower\n")
    out = tmp_path / "gen.yaml"
    argv = ["generate", str(queries), "--out", str(out), "--backend", "hf", "--model", str(folder)]
    assert cli(*argv, "--max-new-tokens", "4", "--option", "device=cpu", "--option", "local_files_only=true") == 1
    assert "failed: q1: no list of questions" in capsys.readouterr().err
    assert not out.exists()
    assert cli(*argv, "--option", "colour=red") == 4
    assert "colour" in capsys.readouterr().err
