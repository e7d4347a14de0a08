"""The user-style heat pump bank of issue 35 (tests/data/heat_pump_bank.json): every (question, passage) pair
with its label and its kind, eight systems' runs, a responder for the fake OpenAI server that grades from the
labels (5 for an answering pair, 0 otherwise), and the bank written out as a project (a YAML bank, TREC runs,
a collection) for the front ends.

Kinds of a pair: ``word-for-word`` and ``other-words`` (it answers; the passage states a gold answer or the
question's key phrase, or answers without either), ``distractor-number`` (another number in the gold answer's
unit, about something else), ``distractor-sense`` (a gold string in another sense, or contradicted),
``same-query`` (a passage of the question's query that does not answer it), ``other-query`` (a passage of
another query: about heat pumps, not about the question) and ``off-topic`` (a passage about something else)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from exam_harness.core.models import Passage, Query, TestPoint
from exam_harness.graders.base import GradingRequest
from tests.paths import DATA

BANK = DATA / "heat_pump_bank.json"
ANSWERING = ("word-for-word", "other-words")
DISTRACTORS = ("distractor-number", "distractor-sense")
KINDS = (*ANSWERING, *DISTRACTORS, "same-query", "other-query", "off-topic")
Pair = tuple[str, str]  # (passage id, test point id), as the grading pass keys grades


@dataclass(frozen=True)
class HeatPumpBank:
    queries: list[Query]
    test_points: list[TestPoint]
    passages: list[Passage]
    requests: list[GradingRequest]  # every question x every passage
    labels: dict[Pair, bool]  # answers it
    pair_kinds: dict[Pair, str]  # one of KINDS
    passage_kinds: dict[str, str]
    runs: dict[str, dict[str, list[str]]]  # system -> query id -> passage ids, best first

    def responder(self, prompt: str) -> str:
        """The label of the one (question, passage) pair the prompt names, as a 0..5 rating."""
        passages = [p for p in self.passages if p.text in prompt]
        points = [tp for tp in self.test_points if tp.text in prompt]
        if len(passages) != 1 or len(points) != 1:
            raise AssertionError(f"the prompt names {len(passages)} passages and {len(points)} questions of the "
                                 f"bank, not one pair: {prompt[:200]!r}")
        return "5" if self.labels[(passages[0].id, points[0].id)] else "0"

    def cover(self, verdicts: Mapping[Pair, bool], system: str, depth: int = 5) -> float:
        """The system's EXAM-Cover@depth under ``verdicts``: per query, the share of its questions some passage of
        the run's top ``depth`` answers, averaged over the queries."""
        shares = []
        for query in self.queries:
            points = [tp for tp in self.test_points if tp.query_id == query.id]
            top = self.runs[system][query.id][:depth]
            shares.append(sum(any(verdicts.get((pid, tp.id), False) for pid in top) for tp in points) / len(points))
        return sum(shares) / len(shares)

    def write_project(self, root: Path) -> tuple[Path, Path]:
        """The bank as a YAML bank under ``root/banks`` and the systems as TREC runs with a collection under
        ``root/runs``: (the banks folder, the runs folder)."""
        banks, runs = root / "banks", root / "runs"
        banks.mkdir(parents=True, exist_ok=True)
        runs.mkdir(parents=True, exist_ok=True)
        lines = ["queries:"]
        for query in self.queries:
            lines += [f"  - id: {query.id}", f"    text: {json.dumps(query.text)}", "    questions:"]
            for tp in (t for t in self.test_points if t.query_id == query.id):
                lines += [f"      - id: {json.dumps(tp.id)}", f"        text: {json.dumps(tp.text)}"]
                if tp.gold_answers:
                    lines.append(f"        answers: {json.dumps(list(tp.gold_answers))}")
                if tp.required:
                    lines.append("        required: true")
        (banks / "heat_pumps.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (runs / "collection.tsv").write_text(
            "id\ttext\n" + "".join(f"{p.id}\t{p.text}\n" for p in self.passages), encoding="utf-8")
        for system, ranked in self.runs.items():
            (runs / f"{system}.run").write_text("".join(
                f"{qid} Q0 {pid} {rank} {10.0 - rank:.1f} {system}\n"
                for qid, pids in ranked.items() for rank, pid in enumerate(pids, 1)), encoding="utf-8")
        return banks, runs


def load() -> HeatPumpBank:
    raw = json.loads(BANK.read_text(encoding="utf-8"))
    queries = [Query(id=q["id"], text=q["text"]) for q in raw["queries"]]
    points = [TestPoint(id=item["id"], query_id=q["id"], kind="question", text=item["text"],
                        gold_answers=tuple(item["answers"]), required=bool(item.get("required", False)))
              for q in raw["queries"] for item in q["questions"]]
    passages = [Passage(id=p["id"], text=p["text"]) for p in raw["passages"]]
    owner = {p["id"]: p["query"] for p in raw["passages"]}
    own_kind = {p["id"]: p["kind"] for p in raw["passages"]}
    marked = {(p["id"], tp): kind for p in raw["passages"]
              for tp, kind in (*p.get("answers", {}).items(), *p.get("distracts", {}).items())}
    by_query = {q.id: q for q in queries}
    requests: list[GradingRequest] = []
    labels: dict[Pair, bool] = {}
    pair_kinds: dict[Pair, str] = {}
    for tp in points:
        for passage in passages:
            pair = (passage.id, tp.id)
            requests.append(GradingRequest(by_query[tp.query_id], tp, passage))
            kind = marked.get(pair) or ("off-topic" if own_kind[passage.id] == "off-topic" else
                                        "same-query" if owner[passage.id] == tp.query_id else "other-query")
            pair_kinds[pair] = kind
            labels[pair] = kind in ANSWERING
    return HeatPumpBank(queries, points, passages, requests, labels, pair_kinds, own_kind, raw["runs"])
