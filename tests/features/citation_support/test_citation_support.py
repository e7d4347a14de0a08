"""Support evaluation of cited answers: the support prompt against the fake server, citation precision,
recall and F1 against a hand computation, and ``exam-harness evaluate --support`` end to end."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.features.citation_support.credits import support_pairs
from exam_harness.graders.base import GradeFailure, GraderConfig, GradingRequest
from exam_harness.graders.openai import OpenAIGrader
from exam_harness.io.runs import load_runs
from exam_harness.measures.citations import citation_values
from tests.fake_openai_server import FakeOpenAIServer
from tests.helpers import evaluation_boards
from tests.trec_rag_data import AssignmentResponder, write_exam

pytest.importorskip("openai")

# the cited segments; the responder below supports a statement fully when the document holds its first
# three words, partly when it holds its first word, else not
COLLECTION = {
    "d1": "Tides come from moon gravity pulling the oceans.",
    "d2": "The sun also pulls on the oceans.",
    "d3": "Gustave Eiffel built it for the 1889 fair.",
    "d4": "Two tides a day happen in most places.",
}
_STATEMENT = re.compile(r"Statement: (.*?)\nDocument: (.*?)\n\nAnswer with", re.DOTALL)


def support_responder(prompt: str) -> str:
    found = _STATEMENT.search(prompt)
    if found is None:
        return AssignmentResponder()(prompt)  # the nugget-assignment pass of the same session
    words = found.group(1).lower().strip(".").split()
    document = found.group(2).replace("<passage>", "").replace("</passage>", "").lower()
    if "odd" in words:
        return "It depends."
    if " ".join(words[:3]) in document:
        return "Full Support"
    return "Partial Support" if words[0] in document.split() else "No Support"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(support_responder) as srv:
        yield srv


def test_citation_values_by_hand() -> None:
    # two sentences: the first cites two documents (full, partial), the second none
    values = citation_values(((1.0, 0.5), ()))
    assert values["citation-precision"] == pytest.approx((1.0 + 0.5) / 2)
    assert values["citation-recall"] == pytest.approx((1.0 + 0.0) / 2)  # a sentence by its best citation
    assert values["citation-f1"] == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    assert citation_values(((), ())) == {"citation-precision": 0.0, "citation-recall": 0.0, "citation-f1": 0.0}
    assert citation_values(((None, 1.0),))["citation-precision"] == pytest.approx(0.5)  # ungraded counts 0


def test_the_support_prompt_grades_full_partial_and_no(server: FakeOpenAIServer) -> None:
    grader = OpenAIGrader(GraderConfig(model="fake-model", options={
        "base_url": server.base_url, "api_key": "k", "prompt": "support"}))
    query = Query(id="t1", text="what causes tides")

    def ask(statement: str, document: str) -> GradingRequest:
        return GradingRequest(query, TestPoint(id=f"t1/support/{abs(hash(statement))}", query_id="t1", kind="nugget",
                                               text=statement), Passage(id="d", text=document))

    results = grader.grade_batch([ask("Tides come from moon gravity.", COLLECTION["d1"]),
                                  ask("The sun matters too.", COLLECTION["d2"]),
                                  ask("Gustave Eiffel built it.", COLLECTION["d4"]),
                                  ask("An odd claim.", COLLECTION["d1"])])
    assert [r.grade for r in results[:3] if isinstance(r, Grade)] == [2, 1, 0]
    assert isinstance(results[3], GradeFailure) and "not Full Support" in results[3].message
    assert grader.spec().max_grade == 2
    grader.close()


def test_a_cited_segment_without_text_is_an_input_error(tmp_path: Path) -> None:
    _banks, runs = write_exam(tmp_path)
    loaded = load_runs([runs])
    with pytest.raises(InputError, match="cites segment 'd1' for topic 't1', which is in no loaded collection"):
        support_pairs(loaded.answers, loaded.data.passages)


def expected_support() -> dict[str, dict[str, float]]:
    """By hand, from the responder's rule. rag24 t1: s0 "Tides come from ..." cites d1 (full 1); s1 "The sun
    matters too." cites d2 and d1, both holding "the" (partial .5 each). rag24 t2: s0 "Gustave Eiffel built"
    cites d3 (full 1), s1 is uncited. rag25 t1: s0 "Two tides a ..." cites d4 (full 1) and d2 (no "two": 0);
    rag25 t2: s0 "The tower is ..." cites d3, which holds "the" (partial .5)."""
    per_query = {
        "rag24": [citation_values(((1.0,), (0.5, 0.5))), citation_values(((1.0,), ()))],
        "rag25": [citation_values(((1.0, 0.0),)), citation_values(((0.5,),))],
    }
    return {run: {m: sum(v[m] for v in values) / 2 for m in values[0]} for run, values in per_query.items()}


def test_evaluate_support_adds_citation_measures(tmp_path: Path, server: FakeOpenAIServer,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    banks, runs = write_exam(tmp_path)
    (runs / "collection.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n"
                                                   for k, v in {**COLLECTION, "d9": "not cited"}.items()))
    args = ["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "openai", "--support",
            "--cache", str(tmp_path / "c.sqlite"), "--json", str(tmp_path / "out.json"), "--bootstrap", "0"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=k", "prompt=nugget-assignment"):
        args += ["--grader-option", option]
    assert main(args) == 0, capsys.readouterr()
    boards = {b["measure"]: b for b in evaluation_boards(json.loads((tmp_path / "out.json").read_text()))}
    want = expected_support()
    for name in ("citation-precision", "citation-recall", "citation-f1"):
        for run in ("rag24", "rag25"):
            assert boards[name]["systems"][run] == pytest.approx(want[run][name], abs=1e-12), (name, run)
    support_calls = sum("Statement:" in r.prompt for r in server.requests)
    assert support_calls == 7  # the distinct (sentence, document) pairs: 3 + 1 + 2 + 1, each graded once
    assert "V_strict" in boards  # the nugget scores are there too


def test_a_citation_left_ungraded_is_said_and_fails_the_command(tmp_path: Path, server: FakeOpenAIServer,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A (sentence, cited document) pair the grader gave no grade (an answer no support label parses from) is no
    grade: evaluate says how many, with an example, after its outputs, and exits 1."""
    banks, runs = write_exam(tmp_path)
    answers = runs / "rag24.jsonl"
    assert "Gustave Eiffel built" in answers.read_text()
    answers.write_text(answers.read_text().replace("Gustave Eiffel built", "Odd Eiffel built"))
    (runs / "collection.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n"
                                                   for k, v in COLLECTION.items()))
    args = ["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "openai", "--support",
            "--cache", str(tmp_path / "c.sqlite"), "--json", str(tmp_path / "out.json"), "--bootstrap", "0",
            "--grader-option", "max_retries=0"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=k", "prompt=nugget-assignment"):
        args += ["--grader-option", option]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert ("exam-harness evaluate: 1 (sentence, cited document) pairs have no support grade and count as no support "
            "(e.g. d3 on 2/support/") in err and "malformed response 'It depends.'" in err
