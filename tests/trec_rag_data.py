"""A small TREC RAG exam for the tests: two topics, a nuggetizer nugget file, a 2024 and a 2025 answer file
(one run each), and a fake OpenAI-compatible responder that assigns nuggets by their words.

The responder labels a nugget *support* when its text is in the passage, *partial_support* when only its
first word is, else *not_support* (lower case). A passage holding ``BROKEN`` always gets a malformed
answer; one holding ``FLAKY`` gets a malformed answer the first time only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

NUGGETS: list[dict[str, Any]] = [
    {"query": "what causes tides", "qid": "t1", "nuggets": [
        {"text": "moon gravity", "importance": "vital"},
        {"text": "sun gravity", "importance": "vital"},
        {"text": "two tides a day", "importance": "okay"}]},
    {"query": "who built the eiffel tower", "qid": 2, "nuggets": [  # an int qid, as in the wild
        {"text": "gustave eiffel", "importance": "vital"},
        {"text": "built 1889", "importance": "okay"},
        {"text": "wrought iron", "importance": "okay"}]},
]

ANSWERS_2024: list[dict[str, Any]] = [
    {"run_id": "rag24", "topic_id": "t1", "topic": "what causes tides", "references": ["d1", "d2"],
     "response_length": 9, "answer": [{"text": "Tides come from moon gravity.", "citations": [0]},
                                      {"text": "The sun matters too.", "citations": [1, 0]}]},
    {"run_id": "rag24", "topic_id": 2, "topic": "who built the eiffel tower", "references": ["d3"],
     "response_length": 9, "answer": [{"text": "Gustave Eiffel built it.", "citations": [0]},
                                      {"text": "It was finished in 1889.", "citations": []}]},
]

ANSWERS_2025: list[dict[str, Any]] = [
    {"metadata": {"team_id": "team", "run_id": "rag25", "type": "automatic", "narrative_id": "t1",
                  "narrative": "what causes tides"},
     "references": ["d2", "d4"], "answer": [{"text": "Two tides a day happen because of sun gravity.",
                                             "citations": ["d4", "d2"]}]},
    {"metadata": {"team_id": "team", "run_id": "rag25", "type": "manual", "narrative_id": "2",
                  "narrative": "who built the eiffel tower"},
     "references": ["d3"], "answer": [{"text": "The tower is wrought iron.", "citations": ["d3"]}]},
]

# The labels the responder gives, by hand: (run, topic) -> (importance, label) per nugget in file order.
LABELS = {
    ("rag24", "t1"): [("vital", "support"), ("vital", "partial_support"), ("okay", "not_support")],
    ("rag24", "2"): [("vital", "support"), ("okay", "partial_support"), ("okay", "not_support")],
    ("rag25", "t1"): [("vital", "not_support"), ("vital", "support"), ("okay", "support")],
    ("rag25", "2"): [("vital", "not_support"), ("okay", "not_support"), ("okay", "support")],
}


def hand_scores(labels: list[tuple[str, str]]) -> dict[str, float]:
    """The track's six scores of one answer, written out from the formulas (not the harness's code)."""
    s = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
    ss = {"support": 1.0, "partial_support": 0.0, "not_support": 0.0}
    vital = [label for imp, label in labels if imp == "vital"]
    okay = [label for imp, label in labels if imp == "okay"]
    out = {}
    for suffix, credit in (("", s), ("_strict", ss)):
        v, o = sum(credit[x] for x in vital), sum(credit[x] for x in okay)
        out["A" + suffix] = (v + o) / len(labels)
        out["V" + suffix] = v / len(vital) if vital else 0.0
        out["W" + suffix] = (v + 0.5 * o) / (len(vital) + 0.5 * len(okay))
    return out


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_exam(root: Path) -> tuple[Path, Path]:
    """banks/nuggets.jsonl and runs/{rag24,rag25}.jsonl under ``root``; returns (banks, runs)."""
    write_lines(root / "banks" / "nuggets.jsonl", NUGGETS)
    write_lines(root / "runs" / "rag24.jsonl", ANSWERS_2024)
    write_lines(root / "runs" / "rag25.jsonl", ANSWERS_2025)
    return root / "banks", root / "runs"


_PASSAGE = re.compile(r"Passage: (.*?)\nNugget List: (\[.*?\])\nLabels:", re.DOTALL)


class AssignmentResponder:
    def __init__(self) -> None:
        self.flaky_seen = False

    def __call__(self, prompt: str) -> str:
        found = _PASSAGE.search(prompt)
        if found is None:
            return "no nugget list in this prompt"
        passage = found.group(1).replace("<passage>", "").replace("</passage>", "").lower()
        if "broken" in passage:
            return "The passage supports the first nugget."
        if "flaky" in passage and not self.flaky_seen:
            self.flaky_seen = True
            return "['support'"
        labels = []
        for nugget in json.loads(found.group(2)):
            text = nugget.lower()
            labels.append("support" if text in passage else
                          "partial_support" if text.split()[0] in passage else "not_support")
        return repr(labels)
