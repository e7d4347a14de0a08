"""Live grading as the track graded: a judge that answers each (answer, nugget window) as the official
assignment did gives the assignment files' own A … W on every (run, topic), over files shaped as the real
ones (tests/trec_rag_official.py: windows of 10, repeated nugget texts, stray labels, odd importances, an
answer over 400 words); the messages sent are nuggetizer's and UMBRELA's, byte for byte, rendered here from
their published templates (tests/data/track_templates)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from exam_harness.cli import main
from tests.fake_openai_server import FakeOpenAIServer
from tests.paths import REPO
from tests.trec_rag_official import WINDOW, ReplayJudge, nuggetizer_scores, official_files

pytest.importorskip("openai")

TEMPLATES = REPO / "tests" / "data" / "track_templates"
SCORES = ("A", "A_strict", "V", "V_strict", "W", "W_strict")


def per_query(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    """(run, topic) -> the six scores of an evaluation document (measure names keyed by their family)."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in document["per_query"]:
        values = {name.split("(")[0]: value for name, value in row["scores"].items()}
        out[(row["run"], row["query_id"])] = {key: values[key] for key in SCORES if key in values}
    return out


def live(tmp_path: Path, server: FakeOpenAIServer, prompt: str, *extra: str) -> tuple[int, dict[str, Any]]:
    nuggets, runs, _assigned = official_files().write(tmp_path)
    out = tmp_path / f"live-{prompt}.json"
    code = main(["evaluate", str(runs), "--bank", str(nuggets), "--grader", "openai", "--model", "fake-model",
                 "--grader-option", f"prompt={prompt}", "--grader-option", f"base_url={server.base_url}",
                 "--grader-option", "api_key=k", "--per-query", "--no-progress", "--bootstrap", "0",
                 "--cache", str(tmp_path / f"{prompt}.sqlite"), "--json", str(out), *extra])
    return code, json.loads(out.read_text())


@pytest.mark.parametrize("batch_size", ["7", "64"])
def test_a_label_replaying_judge_gives_the_assignments_figures_on_every_pair(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], batch_size: str) -> None:
    files = official_files()
    judge = ReplayJudge(files)
    with FakeOpenAIServer(judge) as server:
        code, document = live(tmp_path, server, "nuggetizer-assignment", "--batch-size", batch_size)
    err = capsys.readouterr().err
    assert code == 0, err[-2000:]  # stray labels are no failed run
    assert judge.unmatched == []  # every prompt was one of nuggetizer's windows, whole
    # nuggetizer's calls: one per window of 10 nuggets of each answer, whatever the batch size
    windows = sum(math.ceil(len(line["nuggets"]) / WINDOW) for line in files.nuggets) * len(files.answers)
    assert len(server.requests) == windows
    expected = {(row["run_id"], row["qid"]): nuggetizer_scores(row["nuggets"])
                for rows in files.assignments.values() for row in rows}
    got = per_query(document)
    assert got.keys() == expected.keys() and len(expected) == 12
    for pair, scores in expected.items():
        assert got[pair] == pytest.approx(scores, abs=1e-12), pair
    strays = sum(1 for rows in files.assignments.values() for row in rows for n in row["nuggets"]
                 if n["assignment"] not in ("support", "partial_support", "not_support"))
    assert f"{strays} nugget label(s) other than support/partial_support/not_support" in err
    assert "'chief financial officer' x" in err and "each counts 0, as nuggetizer counts it" in err


def test_the_live_figures_equal_evaluate_assignments_on_the_same_files(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    files = official_files()
    with FakeOpenAIServer(ReplayJudge(files)) as server:
        code, document = live(tmp_path, server, "nuggetizer-assignment")
    assert code == 0
    recorded = tmp_path / "recorded.json"
    assigned = sorted((tmp_path / "assign").iterdir())
    assert main(["evaluate", "--assignments", *map(str, assigned), "--per-query", "--json", str(recorded)]) == 0
    capsys.readouterr()
    want, got = per_query(json.loads(recorded.read_text())), per_query(document)
    assert want.keys() == got.keys() and len(want) == 12
    for pair, scores in want.items():
        assert got[pair] == pytest.approx(scores, abs=1e-12), pair


def render_nuggetizer(template: str, query: str, context: str, nuggets: list[str]) -> list[dict[str, str]]:
    """nuggetizer's create_assign_messages, from the published template text (template_loader.py's render)."""
    data = yaml.safe_load((TEMPLATES / template).read_text(encoding="utf-8"))
    return [{"role": "system", "content": data["system_message"]},
            {"role": "user", "content": data["prefix_user"].format(query=query, context=context, nuggets=nuggets,
                                                                   num_nuggets=len(nuggets))}]


@pytest.mark.parametrize(("prompt", "template"), [("nuggetizer-assignment", "nuggetizer_assigner_template.yaml"),
                                                  ("nuggetizer-assignment-2", "nuggetizer_assigner_2grade_template.yaml")])
def test_the_track_mode_sends_nuggetizers_messages_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 prompt: str, template: str) -> None:
    files = official_files()
    with FakeOpenAIServer(ReplayJudge(files)) as server:
        live(tmp_path, server, prompt)
    capsys.readouterr()
    by_answer = {(row["query"], row["answer_text"]): [n["text"] for n in row["nuggets"]]
                 for rows in files.assignments.values() for row in rows}
    expected = [render_nuggetizer(template, query, text, nuggets[start:start + WINDOW])
                for (query, text), nuggets in by_answer.items() for start in range(0, len(nuggets), WINDOW)]
    sent = [request.body["messages"] for request in server.requests]
    key = json.dumps
    assert sorted(map(key, sent)) == sorted(map(key, expected))  # every message, byte for byte, and no other
    assert all(request.body["temperature"] == 0 for request in server.requests)


def test_fencing_the_passage_is_opt_in_in_the_track_modes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = official_files()
    with FakeOpenAIServer(lambda _p: "no labels") as server:
        live(tmp_path, server, "nuggetizer-assignment", "--grader-option", "fence_context=true")
    capsys.readouterr()
    user = server.requests[0].body["messages"][1]["content"]
    assert "Passage: <passage>\n" in user and "\n</passage>\nNugget List: " in user
    assert any(row["answer_text"] in user for rows in files.assignments.values() for row in rows)


def test_the_umbrela_mode_sends_umbrelas_messages_byte_for_byte(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    files = official_files()
    data = yaml.safe_load((TEMPLATES / "umbrela_qrel_zeroshot_bing.yaml").read_text(encoding="utf-8"))
    with FakeOpenAIServer(lambda _p: "##final score: 2") as server:
        nuggets, runs, _ = files.write(tmp_path)
        assert main(["evaluate", str(runs), "--grader", "openai", "--model", "fake-model", "--grader-option",
                     "prompt=umbrela-zeroshot", "--grader-option", f"base_url={server.base_url}",
                     "--grader-option", "api_key=k", "--bank", str(nuggets), "--no-progress",
                     "--cache", str(tmp_path / "u.sqlite")]) == 0
    capsys.readouterr()
    expected = [[{"role": "system", "content": "You are a helpful assistant."},  # umbrela's gpt_judge.py
                 {"role": "user", "content": data["prefix_user"].format(examples="", query=line["topic"],
                                                                        passage=" ".join(s["text"] for s in
                                                                                         line["answer"]))}]
                for rows in files.answers.values() for line in rows]
    assert sorted(map(json.dumps, (r.body["messages"] for r in server.requests))) == sorted(map(json.dumps, expected))
