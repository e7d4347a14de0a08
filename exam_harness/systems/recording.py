"""A system's recording in the runs folder: files the run loaders read, and a manifest beside them.

* answer systems: ``<name>.responses.jsonl``, lines ``{"query_id", "run", "response"}`` (plus
  ``"references"`` and ``"answer": [{"text", "citations"}]`` when the system gave them; the loader
  scores ``response`` and reads the cited sentences as a cited answer, io/generated.py);
* ranking systems: ``<name>.run`` (TREC run) and ``<name>.collection.jsonl`` (``{"id", "text"}``);
* ``<name>.system.json``: fingerprint, version, the queries' hash, per query its latency, attempts,
  tokens and cost, the errors, the time and the harness version.

Every file is written atomically, the manifest last: a query the data files hold but the manifest
does not name (an interrupted write) counts as not recorded.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam_harness import __version__
from exam_harness.errors import ConfigError, InputError
from exam_harness.io.textio import atomic_write_text, iter_json_lines, iter_lines
from exam_harness.models import Query
from exam_harness.systems.calling import Called, Ranked
from exam_harness.systems.declare import Answer, System

MANIFEST_SUFFIX = ".system.json"


def query_sha(query: Query) -> str:
    return hashlib.sha256(query.text.encode("utf-8")).hexdigest()[:16]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def data_files(folder: Path, name: str, kind: str) -> list[Path]:
    if kind == "ranking":
        return [folder / f"{name}.run", folder / f"{name}.collection.jsonl"]
    return [folder / f"{name}.responses.jsonl"]


def manifest_path(folder: Path, name: str) -> Path:
    return folder / f"{name}{MANIFEST_SUFFIX}"


@dataclass
class Recording:
    """What is recorded of one system: answers (a responses line, or ranked passages) and per-query facts."""

    name: str
    kind: str
    fingerprint: str
    version: str | None = None
    answers: dict[str, Any] = field(default_factory=dict)  # query id -> response record | list[Ranked]
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)  # query id -> latency, attempts, ...
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)  # query id -> error, query_sha, at
    passages: dict[str, tuple[str, str]] = field(default_factory=dict)  # passage id -> (text, first query)
    changed: bool = False

    @classmethod
    def fresh(cls, system: System) -> Recording:
        return cls(system.name, system.kind, system.fingerprint, system.version)

    def add(self, called: Called, query: Query) -> Called:
        """Keep a finished call; a ranked passage id already recorded with another text fails the query."""
        self.changed = True
        value = called.value
        if isinstance(value, list):
            clash = next(((pid, self.passages[pid][1]) for pid, text, _ in value
                          if pid in self.passages and self.passages[pid][0] != text), None)
            if clash is not None:
                called = Called(called.query_id, None, f"ValueError: passage id {clash[0]!r} was returned for query "
                                f"{clash[1]!r} with another text", called.latency, called.attempts)
        facts = {"query_sha": query_sha(query), "at": now()}
        if called.error is not None or called.value is None:
            self.answers.pop(called.query_id, None)
            self.queries.pop(called.query_id, None)
            self.errors[called.query_id] = {"error": called.error, **facts}
            return called
        self.errors.pop(called.query_id, None)
        info: dict[str, Any] = {**facts, "latency_s": round(called.latency, 4), "attempts": called.attempts}
        if isinstance(called.value, Answer):
            self.answers[called.query_id] = response_record(self.name, called.query_id, called.value)
            if called.value.tokens is not None:
                info["tokens"] = called.value.tokens
            if called.value.cost is not None:
                info["cost"] = called.value.cost
        else:
            self.answers[called.query_id] = called.value
            for pid, text, _score in called.value:
                self.passages.setdefault(pid, (text, called.query_id))
        self.queries[called.query_id] = info
        return called

    # -- writing -------------------------------------------------------------------------------
    def write(self, folder: Path, system: System) -> None:
        """The data files (removed when no query is answered: an empty run file is refused), then the manifest."""
        order = sorted(self.answers)
        for path, text in zip(data_files(folder, self.name, self.kind), self._data(order), strict=True):
            if order:
                atomic_write_text(path, text)
            else:
                path.unlink(missing_ok=True)
        shas = sorted((qid, info["query_sha"]) for qid, info in self.queries.items())
        latencies = [info["latency_s"] for info in self.queries.values()]
        tokens = [info["tokens"] for info in self.queries.values() if "tokens" in info]
        costs = [info["cost"] for info in self.queries.values() if "cost" in info]
        manifest = {
            "system": self.name, "kind": self.kind, "form": system.form, "fingerprint": self.fingerprint,
            "version": self.version, "declared": dict(system.describe), "origin": system.origin,
            "files": [p.name for p in data_files(folder, self.name, self.kind)] if order else [],
            "queries_hash": hashlib.sha256(json.dumps(shas).encode("utf-8")).hexdigest()[:16],
            "recorded_at": now(), "harness_version": __version__,
            "totals": {
                "queries": len(self.queries), "errors": len(self.errors),
                "latency_s_mean": round(sum(latencies) / len(latencies), 4) if latencies else None,
                "tokens": sum(tokens) if tokens else None, "cost": round(sum(costs), 6) if costs else None,
            },
            "queries": {qid: self.queries[qid] for qid in sorted(self.queries)},
            "errors": {qid: self.errors[qid] for qid in sorted(self.errors)},
        }
        atomic_write_text(manifest_path(folder, self.name), json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        self.changed = False

    def _data(self, order: list[str]) -> list[str]:
        if self.kind == "answer":
            return ["".join(json.dumps(self.answers[q], ensure_ascii=False) + "\n" for q in order)]
        run_lines: list[str] = []
        passages: dict[str, str] = {}
        for qid in order:
            ranked: list[Ranked] = self.answers[qid]
            for rank, (pid, text, score) in enumerate(ranked, 1):
                shown = score if score is not None else float(len(ranked) - rank + 1)
                run_lines.append(f"{qid} Q0 {pid} {rank} {shown:g} {self.name}\n")
                passages.setdefault(pid, text)
        collection = "".join(json.dumps({"id": pid, "text": text}, ensure_ascii=False) + "\n"
                             for pid, text in passages.items())
        return ["".join(run_lines), collection]


def response_record(name: str, query_id: str, answer: Answer) -> dict[str, Any]:
    record: dict[str, Any] = {"query_id": query_id, "run": name, "response": answer.text}
    if answer.references:
        record["references"] = list(answer.references)
    if answer.sentences:
        record["answer"] = [{"text": s.text, "citations": list(s.citations)} for s in answer.sentences]
    return record


# -- reading ---------------------------------------------------------------------------------------
def load(folder: Path, system: System) -> Recording | None:
    """The recording of ``system`` in ``folder``, or None when there is none."""
    path = manifest_path(folder, system.name)
    files = data_files(folder, system.name, system.kind)
    if not path.exists():
        present = [p for p in files if p.exists()]
        if present:
            raise ConfigError(
                f"{present[0]} holds run {system.name!r}, but it is no recording of the declared system "
                f"{system.name!r} (there is no {path.name}); rename the system or the file")
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("system") != system.name:
            raise ValueError("not a system manifest of this system")
        rec = Recording(system.name, str(manifest.get("kind")), str(manifest["fingerprint"]), manifest.get("version"),
                        queries=dict(manifest.get("queries") or {}), errors=dict(manifest.get("errors") or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"unreadable system manifest: {exc}", path=path,
                         expected="the <name>.system.json a recording writes; delete it to record again") from None
    if rec.kind != system.kind:
        return Recording.fresh(system)  # another kind of system: nothing of it can be reused
    answers = _read_answers(files) if manifest.get("files") else {}
    rec.queries = {qid: info for qid, info in rec.queries.items() if qid in answers}
    rec.answers = {qid: value for qid, value in answers.items() if qid in rec.queries}
    for qid, value in rec.answers.items():
        if isinstance(value, list):
            for pid, text, _score in value:
                rec.passages.setdefault(pid, (text, qid))
    return rec


def _read_answers(files: list[Path]) -> dict[str, Any]:
    if len(files) == 1:
        return {str(record["query_id"]): record for _line, record in iter_json_lines(files[0])
                if isinstance(record, dict) and "query_id" in record}
    run, collection = files
    texts = {str(r["id"]): str(r["text"]) for _line, r in iter_json_lines(collection) if isinstance(r, dict)}
    ranked: dict[str, list[Ranked]] = {}
    for lineno, line in iter_lines(run):
        parts = line.split()
        if len(parts) != 6 or parts[2] not in texts:
            raise InputError("not a line of a recorded run", path=run, line=lineno, value=line[:60],
                             expected="qid Q0 docid rank score name, each docid in the recorded collection")
        ranked.setdefault(parts[0], []).append((parts[2], texts[parts[2]], float(parts[4])))
    return ranked
