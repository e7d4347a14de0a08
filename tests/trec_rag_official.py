"""TREC RAG 2024 files shaped as the track's real ones, and a judge that answers as their assignment did.

The track's files are not in the repository; these are written here in exactly their shape (castorini/
nuggetizer's create and assign outputs, ragnarok's 2024 answer lines) with what makes the real ones hard:

- topics with more nuggets than one window of 10 (nuggetizer asks about 10 at a time);
- a nugget text given twice for one topic, in two windows and twice within one window, its copies
  labelled differently (nuggetizer labels each copy where it stands);
- importances other than vital/okay: ``failed``, a multi-word one (``active learning``) and an empty one;
- stray labels an LLM wrote (``chief financial officer``, ``partial support`` with a space), which
  nuggetizer keeps and counts 0;
- an answer over 400 words (nuggetizer assigns the whole answer; the checker only warns).

:class:`ReplayJudge` is a responder for :class:`tests.fake_openai_server.FakeOpenAIServer`: it reads the
query, passage and nugget list out of a nuggetizer assignment prompt and answers the labels the assignment
file holds for that answer and window, so live grading can be compared with the recorded figures.
"""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WINDOW = 10  # nuggetizer's assigner_window_size
STRAY = ("chief financial officer", "partial support")
RUNS = ("bm25-gpt4o", "bm25-cmdr", "bm25-llama")


def segment(i: int) -> str:
    return f"msmarco_v2.1_doc_{29 + i % 3}_{1000 + i}#{i % 7}_{2000 + i}"


def _nuggets(topic: int, count: int, rng: random.Random) -> list[dict[str, str]]:
    importances = ["vital", "okay"] * 4 + ["failed", "active learning", ""]
    return [{"text": f"topic {topic} fact {i} about {rng.choice(['cost', 'risk', 'origin', 'use'])}",
             "importance": rng.choice(importances)} for i in range(count)]


@dataclass(frozen=True)
class OfficialFiles:
    nuggets: list[dict[str, Any]]  # nuggetizer create output, one line per topic
    answers: dict[str, list[dict[str, Any]]]  # run -> its 2024 answer lines
    assignments: dict[str, list[dict[str, Any]]]  # run -> its nuggetizer assign output lines

    def write(self, root: Path) -> tuple[Path, Path, list[Path]]:
        """(nugget file, runs folder, assignment files) under ``root``."""
        nuggets = _write(root / "nuggets.jsonl", self.nuggets)
        runs = root / "runs"
        for run, rows in self.answers.items():
            _write(runs / run, rows)  # a submission often has no suffix
        assigned = [_write(root / "assign" / f"{run}.jsonl", rows) for run, rows in self.assignments.items()]
        return nuggets, runs, assigned


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def official_files(seed: int = 2024) -> OfficialFiles:
    rng = random.Random(seed)
    topics = [("2024-105741", "how did the black death change european labour", 23),
              ("2024-127266", "what is the role of a chief financial officer", 10),
              ("2024-96359", "why do some cities flood more than others", 14),
              ("2024-79113", "how are vaccines tested before approval", 3)]
    nugget_lines: list[dict[str, Any]] = []
    for t, (qid, query, count) in enumerate(topics):
        nuggets = _nuggets(t, count, rng)
        nugget_lines.append({"query": query, "qid": qid, "nuggets": nuggets})
    first = nugget_lines[0]["nuggets"]
    first[15] = dict(first[3])  # a repeat in another window
    third = nugget_lines[2]["nuggets"]
    third[7] = dict(third[5])  # a repeat within one window
    last = nugget_lines[3]["nuggets"]
    last[2] = dict(last[0])
    answers: dict[str, list[dict[str, Any]]] = {}
    assignments: dict[str, list[dict[str, Any]]] = {}
    for r, run in enumerate(RUNS):
        answers[run], assignments[run] = [], []
        for t, line in enumerate(nugget_lines):
            words = 450 if (r, t) == (0, 0) else rng.randint(40, 120)  # one answer over the 400 words
            sentences: list[dict[str, Any]] = []
            n = 0
            while sum(len(s["text"].split()) for s in sentences) < words:
                size = min(25, words - sum(len(s["text"].split()) for s in sentences))
                text = " ".join(f"{run}-{t}-{n}-w{i}" for i in range(size - 1)) + " end."
                sentences.append({"text": text, "citations": [n % 3]})
                n += 1
            references = [segment(100 * r + 10 * t + i) for i in range(3)]
            answers[run].append({"run_id": run, "topic_id": line["qid"], "topic": line["query"],
                                 "references": references, "response_length": words, "answer": sentences})
            labels = [rng.choice(["support", "partial_support", "not_support", "not_support"])
                      for _ in line["nuggets"]]
            if t == 0:
                labels[3], labels[15] = "support", "not_support"  # the copies of a repeated text differ
            if t == 2:
                labels[5], labels[7] = "partial_support", "support"
            labels[(1 + r) % len(labels)] = STRAY[(r + t) % len(STRAY)]  # a stray label in every answer
            assignments[run].append({
                "query": line["query"], "qid": line["qid"],
                "answer_text": " ".join(s["text"] for s in sentences), "response_length": words, "run_id": run,
                "nuggets": [{**nugget, "assignment": label} for nugget, label in zip(line["nuggets"], labels)]})
    return OfficialFiles(nugget_lines, answers, assignments)


def nuggetizer_scores(nuggets: list[dict[str, str]]) -> dict[str, float]:
    """A … W of one assignment line, written out from nuggetizer's calculate_nugget_scores (A, V) and the
    track's weighted score (W), independently of the harness's code."""
    s = {"support": 1.0, "partial_support": 0.5}
    ss = {"support": 1.0}
    vital = [n for n in nuggets if n["importance"] == "vital"]
    okay = [n for n in nuggets if n["importance"] == "okay"]
    out = {}
    for suffix, credit in (("", s), ("_strict", ss)):
        def total(group: list[dict[str, str]], credit: dict[str, float] = credit) -> float:
            return sum(credit.get(n["assignment"], 0.0) for n in group)
        out["A" + suffix] = total(nuggets) / len(nuggets)
        out["V" + suffix] = total(vital) / len(vital) if vital else 0.0
        weight = len(vital) + 0.5 * len(okay)
        out["W" + suffix] = (total(vital) + 0.5 * total(okay)) / weight if weight else 0.0
    return out


_ASSIGN_PROMPT = re.compile(r"Search Query: (?P<query>.*?)\nPassage: (?P<passage>.*?)\nNugget List: (?P<nuggets>.*?)\n"
                            r"Only return the list of labels", re.DOTALL)


class ReplayJudge:
    """Answers a nuggetizer assignment prompt with the labels the assignment files hold for its answer and
    window (found by the window's texts at a multiple of 10, where nuggetizer cuts); anything else is
    answered with a text no parser reads as labels."""

    def __init__(self, files: OfficialFiles) -> None:
        self.labels: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for rows in files.assignments.values():
            for row in rows:
                self.labels[(row["query"], row["answer_text"])] = [(n["text"], n["assignment"]) for n in row["nuggets"]]
        self.unmatched: list[str] = []

    def __call__(self, prompt: str) -> str:
        found = _ASSIGN_PROMPT.search(prompt)
        if found is not None:
            nuggets = self.labels.get((found["query"], found["passage"]))
            window = ast.literal_eval(found["nuggets"])
            for start in range(0, len(nuggets or []), WINDOW):
                assert nuggets is not None
                part = nuggets[start:start + WINDOW]  # nuggetizer's whole window, never a piece of it
                if [text for text, _ in part] == window:
                    return str([label for _, label in part])
        self.unmatched.append(prompt)
        return "no window of the assignment files matches this prompt"
