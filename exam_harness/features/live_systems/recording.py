"""A system's recording in the runs folder: files the run loaders read, a manifest beside them, and a
journal while it is being recorded.

* answer systems: ``<name>.responses.jsonl``, lines ``{"query_id", "run", "response"}`` (plus
  ``"references"`` and ``"answer": [{"text", "citations"}]`` when the system gave them; the loader
  scores ``response`` and reads the cited sentences as a cited answer, io/generated.py);
* ranking systems: ``<name>.run`` (TREC run) and ``<name>.collection.jsonl`` (``{"id", "text"}``);
* ``<name>.system.json``: the fingerprint and what it covers, version, the queries' hash, per query the
  fingerprint it was answered under, its latency, attempts, tokens and cost, the errors, the time and
  the harness version;
* ``.<name>.journal.jsonl`` (hidden: the run loaders skip it) while answers arrive: each finished call
  is appended as one line, at once, so a killed session (SIGKILL, a CI timeout) loses no finished
  answer. At the end the data files and the manifest are written atomically, the manifest last, and the
  journal is removed; a journal found at the start is a recording cut short and is resumed.

A call's answer is checked by the loaders' rules before it is kept (:func:`check_answer`): what is
recorded can be read back. Every path is refused when it is a link or not a regular file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exam_harness.core.errors import ConfigError, InputError
from exam_harness.core.ids import file_name
from exam_harness.core.models import Query
from exam_harness.core.version import __version__
from exam_harness.features.live_systems.declare import Answer, System
from exam_harness.features.live_systems.secrets import scrub
from exam_harness.io import limits
from exam_harness.io.parts import check_word
from exam_harness.io.textio import (
    atomic_write_text,
    check_json_document,
    iter_json_lines,
    iter_lines,
    iter_raw_lines,
    read_bytes,
)

if TYPE_CHECKING:  # the caller (asyncio, threads, subprocesses) is imported only where a system is called
    from exam_harness.features.live_systems.calling import Called, Ranked

MANIFEST_SUFFIX = ".system.json"
MAX_TOKENS = 10**15  # a usage count beyond this is a wrong field, not a usage


def query_sha(query: Query) -> str:
    return hashlib.sha256(query.text.encode("utf-8")).hexdigest()[:16]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def data_files(folder: Path, name: str, kind: str) -> list[Path]:
    if kind == "ranking":
        return [folder / file_name(name, ".run"), folder / file_name(name, ".collection.jsonl")]
    return [folder / file_name(name, ".responses.jsonl")]


def manifest_path(folder: Path, name: str) -> Path:
    return folder / file_name(name, MANIFEST_SUFFIX)


def run_manifest(run: str, folders: Iterable[Path]) -> Path | None:
    """The manifest of run ``run`` in the first of ``folders`` holding one (a run file's own folder for a
    file), or None: a run recorded by a live system has its manifest beside it."""
    dirs = dict.fromkeys(p if p.is_dir() else p.parent for p in folders)
    return next((manifest_path(d, run) for d in dirs if manifest_path(d, run).is_file()), None)


def manifest_document(path: Path) -> dict[str, Any]:
    """A manifest read through the bounded JSON reader (an InputError naming the file where it is no JSON object)."""
    data = read_bytes(path)
    check_json_document(data, path)
    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not JSON: {exc}", path=path) from None
    if not isinstance(manifest, dict):
        raise InputError("a manifest is a JSON object", path=path)
    return manifest


def failed_queries(manifest: Mapping[str, Any]) -> set[str]:
    """The queries a manifest records an error for and no answer: its system failed on them, so the run
    holds nothing for them (a query whose recorded answer was kept through a later failure is answered)."""
    errors, answered = manifest.get("errors"), manifest.get("queries")
    if not isinstance(errors, dict):
        return set()
    return {str(q) for q in errors if not (isinstance(answered, dict) and q in answered)}


def system_failures(runs: Iterable[str], folders: Iterable[Path]) -> dict[str, set[str]]:
    """run -> the queries its live system failed on (:func:`failed_queries`), for the runs with a manifest
    in ``folders``; a manifest that cannot be read names none (the system-costs section says why)."""
    folders = list(folders)
    found: dict[str, set[str]] = {}
    for run in runs:
        path = run_manifest(run, folders)
        if path is None:
            continue
        try:
            failed = failed_queries(manifest_document(path))
        except InputError:
            continue
        if failed:
            found[run] = failed
    return found


def unanswered_system_notes(runs: Collection[str], folders: Iterable[Path]) -> list[str]:
    """A warning for each manifest in ``folders`` of a system with no run among ``runs``: a system that
    failed on every query recorded a manifest and no answer, so no run file reads it and no table shows it."""
    notes: list[str] = []
    for folder in dict.fromkeys(p for p in folders if p.is_dir()):
        for path in sorted(folder.glob(f"*{MANIFEST_SUFFIX}")):
            name = path.name[: -len(MANIFEST_SUFFIX)]
            if name in runs:
                continue
            try:
                failed = sorted(failed_queries(manifest_document(path)))
            except InputError as exc:
                notes.append(f"warning: {exc}; system {name!r} has no run here")
                continue
            shown = ", ".join(failed[:5]) + (", …" if len(failed) > 5 else "")
            said = f"it failed on {shown}" if failed else "no answer file beside it"
            notes.append(f"warning: {path}: system {name!r} recorded no answer ({said}); it is in no leaderboard")
    return notes


def undeclared_system_notes(declared: Collection[str], runs: Collection[str], folders: Iterable[Path]) -> list[str]:
    """A warning for each run scored from a recording whose system is no longer declared (its manifest beside
    the run files, no declaration of its name): its old answers count, and the queries it failed on make the
    run incomplete, in every later session, while nothing says the system is gone."""
    notes: list[str] = []
    for folder in dict.fromkeys(p if p.is_dir() else p.parent for p in folders):
        for path in sorted(folder.glob(f"*{MANIFEST_SUFFIX}")) if folder.is_dir() else ():
            name = path.name[: -len(MANIFEST_SUFFIX)]
            if name in declared or name not in runs:
                continue
            try:
                manifest = manifest_document(path)
            except InputError:
                continue  # the system-costs section says why it cannot be read
            failed = sorted(failed_queries(manifest))
            kind = manifest.get("kind") if manifest.get("kind") in ("answer", "ranking") else "answer"
            files = [p for p in data_files(folder, name, str(kind)) if p.exists()]
            shown = ", ".join(failed[:5]) + (", …" if len(failed) > 5 else "")
            why = ("" if not failed else f"; the query it failed on ({shown}) makes that run incomplete"
                   if len(failed) == 1 else f"; the {len(failed)} queries it failed on ({shown}) make that run "
                   "incomplete")
            notes.append(f"warning: system {name!r} is no longer declared, yet its recording in {folder} is scored "
                         f"as run {name!r}{why}; to drop it, remove {', '.join(str(p) for p in [path, *files])} "
                         "(or declare the system again to record it)")
    return notes


def journal_path(folder: Path, name: str) -> Path:
    return folder / file_name(name, ".journal.jsonl", prefix=".")


def checked_path(path: Path) -> bool:
    """Whether ``path`` exists; a ConfigError when it is a link or not a regular file (a FIFO would
    hang the reader, a link would write outside the runs folder)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(f"{path} is a symbolic link; a recording is read and written only as regular files in "
                          "the runs folder itself: remove the link")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path} is not a regular file; a recording is read and written only as regular files: "
                          "remove it")
    return True


# -- what may be recorded ------------------------------------------------------------------------------
def check_answer(name: str, query_id: str, value: Answer | list[Ranked]) -> str | None:
    """Why the run loaders would refuse this answer as recorded, or None."""
    if isinstance(value, Answer):
        if len(value.text) > limits.MAX_RESPONSE_CHARS:
            return f"the answer is longer than {limits.count_text(limits.MAX_RESPONSE_CHARS)} characters"
        if value.tokens is not None and (isinstance(value.tokens, bool) or not isinstance(value.tokens, int)
                                         or not 0 <= value.tokens <= MAX_TOKENS):
            return f"tokens must be a whole number from 0 to {MAX_TOKENS:.0e}, got {limits.quoted(value.tokens)}"
        if value.cost is not None and (isinstance(value.cost, bool) or not isinstance(value.cost, (int, float))
                                       or not math.isfinite(value.cost) or value.cost < 0):
            return f"cost must be a finite number >= 0, got {limits.quoted(value.cost)}"
        record = response_record(name, query_id, value)
        if not _encodable(record):
            return "the answer holds a character that cannot be written (a lone surrogate)"
        if "answer" in record or "references" in record:
            from exam_harness.io.cited import cited_response

            record.setdefault("answer", [])
            try:
                cited_response(record, Path(f"{name}.responses.jsonl"), 1, name, query_id)
            except InputError as exc:
                return f"{exc.message} ({exc.field})" if exc.field else exc.message
        return None
    if not value:
        return "the ranking holds no passage"
    for i, (pid, text, score) in enumerate(value):
        if (why := check_word(pid, f"passage {i}'s id")) is not None:
            return why
        if score is not None and not math.isfinite(score):
            return f"passage {i} has score {score!r}; scores are finite numbers"
        if not _encodable([pid, text]):
            return f"passage {i} holds a character that cannot be written (a lone surrogate)"
    return None


def _encodable(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    covers: dict[str, str] = field(default_factory=dict)  # what the recorded fingerprint covered
    changed: bool = False
    resumed: int = 0  # answers taken from a journal a killed session left
    resumed_queries: set[str] = field(default_factory=set)  # the queries of those answers
    # query id -> the files its call read (queries.<id>.reads) that changed since: its answer is stale
    reads_changed: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def fresh(cls, system: System) -> Recording:
        return cls(system.name, system.kind, system.fingerprint, system.version, covers=dict(system.covers))

    def answered_under(self, query_id: str) -> str:
        """The fingerprint the query's answer was recorded under."""
        return str(self.queries.get(query_id, {}).get("fingerprint") or self.fingerprint)

    def current(self, query_id: str, system: System) -> bool:
        """Whether the query's recorded answer was made by ``system`` as it is now: under its fingerprint,
        and from files (those the call read, ``reads``) that have not changed since."""
        return self.answered_under(query_id) == system.fingerprint and query_id not in self.reads_changed

    def stale_queries(self, system: System) -> list[str]:
        """The answered queries whose answer another version of the system made (:meth:`current`)."""
        return sorted(q for q in self.answers if not self.current(q, system))

    def changed_inputs(self, system: System) -> list[str]:
        """What changed for the stale answers: the covered labels, then each file a call read that changed."""
        from exam_harness.features.live_systems.fingerprint import changed_files

        labels = changed_files(self.covers, system.covers) if self.covers else []
        reads = sorted({rel for changed in self.reads_changed.values() for rel in changed})
        return labels + [f"file {rel} (read by its calls)" for rel in reads if f"file {rel}" not in labels]

    def empty(self) -> list[str]:
        """The queries whose recorded answer is empty: no text, or passages without text."""
        def blank(value: Any) -> bool:
            if isinstance(value, dict):
                return not str(value.get("response") or "").strip()
            return all(not text.strip() for _pid, text, _score in value)

        return [qid for qid, value in self.answers.items() if blank(value)]

    def add(self, called: Called, query: Query, system: System,
            reads: Mapping[str, str] | None = None) -> tuple[Called, dict[str, Any], bool]:
        """Keep a finished call: the call as kept (a bad answer is a failure), its journal entry, and
        whether an answer recorded before was kept although the call failed now. ``reads``: the project
        files the call read (path -> digest), kept with its answer."""
        value = called.value
        why = None if value is None else check_answer(self.name, called.query_id, value)
        if why is None and isinstance(value, list):
            clash = next(((pid, self.passages[pid][1]) for pid, text, _ in value
                          if pid in self.passages and self.passages[pid][0] != text
                          and self.passages[pid][1] != called.query_id), None)
            if clash is not None:
                why = f"passage id {clash[0]!r} was returned for query {clash[1]!r} with another text"
        if why is not None:
            from exam_harness.features.live_systems.calling import Called

            called = Called(called.query_id, None, f"ValueError: {why}", called.latency, called.attempts)
        facts = {"query_sha": query_sha(query), "at": now()}
        entry: dict[str, Any]
        if called.error is not None or called.value is None:
            entry = {"query_id": called.query_id, "error": {"error": called.error, **facts}}
        else:
            info: dict[str, Any] = {**facts, "fingerprint": system.fingerprint, "latency_s": round(called.latency, 4),
                                    "attempts": called.attempts}
            if reads:
                info["reads"] = dict(sorted(reads.items()))
            if isinstance(called.value, Answer):
                answer: Any = response_record(self.name, called.query_id, called.value)
                if called.value.tokens is not None:
                    info["tokens"] = called.value.tokens
                if called.value.cost is not None:
                    info["cost"] = float(called.value.cost)
            else:
                answer = [list(item) for item in called.value]
            entry = {"query_id": called.query_id, "answer": answer, "info": info}
        kept_old = "error" in entry and called.query_id in self.answers
        self.apply(entry)
        return called, entry, kept_old

    def apply(self, entry: Mapping[str, Any]) -> None:
        """One journal entry: an answer replaces the query's; an error is noted and keeps a recorded answer
        (never drop good data: the next session asks again)."""
        self.changed = True
        qid = str(entry["query_id"])
        if "error" in entry:
            self.errors[qid] = dict(entry["error"])
            return
        self.errors.pop(qid, None)
        self.reads_changed.pop(qid, None)  # answered now: from the files as they are
        answer = entry["answer"]
        if self.kind == "ranking":
            ranked: list[Ranked] = [(str(p), str(t), None if s is None else float(s)) for p, t, s in answer]
            self.answers[qid] = ranked
            for pid, text, _score in ranked:
                self.passages.setdefault(pid, (text, qid))
        else:
            self.answers[qid] = dict(answer)
        self.queries[qid] = dict(entry["info"])

    # -- writing -------------------------------------------------------------------------------
    def write(self, folder: Path, system: System) -> None:
        """The data files (removed when no query is answered: an empty run file is refused), then the manifest."""
        order = sorted(self.answers)
        for path, text in zip(data_files(folder, self.name, self.kind), self._data(order), strict=True):
            checked_path(path)
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
            "covers": dict(sorted(self.covers.items())),
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
        path = manifest_path(folder, self.name)
        checked_path(path)
        atomic_write_text(path, scrub(json.dumps(manifest, indent=1, ensure_ascii=False)) + "\n")
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


class Journal:
    """The answers of a recording in progress, one line each, written as they arrive."""

    def __init__(self, folder: Path, system: System) -> None:
        self.path = journal_path(folder, system.name)
        checked_path(self.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        self.fd: int | None = os.open(self.path, flags, 0o644)
        if os.fstat(self.fd).st_size == 0:  # what the fingerprint covered: a resumed recording says what changed
            self._write({"journal": system.name, "kind": system.kind, "covers": dict(sorted(system.covers.items()))})

    def append(self, entry: Mapping[str, Any]) -> None:
        self._write(entry)

    def _write(self, entry: Mapping[str, Any]) -> None:
        assert self.fd is not None
        os.write(self.fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))

    def close(self, *, done: bool) -> None:
        """Closed; removed when ``done`` (the recording holds every entry)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if done:
            self.path.unlink(missing_ok=True)


def _journal_entries(path: Path, system: System) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The entries a cut-short session journaled (a line cut by the kill is dropped), and what the fingerprint
    of the system that journaled them covered (its first line's ``covers``; none in an older journal)."""
    entries: list[dict[str, Any]] = []
    covers: dict[str, str] = {}
    for lineno, raw in iter_raw_lines(path):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # the line being written when the session was killed
        if lineno == 1:
            if not isinstance(entry, dict) or entry.get("journal") != system.name or entry.get("kind") != system.kind:
                return [], {}
            found = entry.get("covers")
            if isinstance(found, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
                covers = found
            continue
        if isinstance(entry, dict) and isinstance(entry.get("query_id"), str) and (
                isinstance(entry.get("error"), dict)
                or (isinstance(entry.get("info"), dict) and isinstance(entry.get("answer"), (dict, list)))):
            entries.append(entry)
    return entries, covers


# -- reading ---------------------------------------------------------------------------------------
def load(folder: Path, system: System) -> Recording | None:
    """The recording of ``system`` in ``folder`` (with what a cut-short session journaled), or None."""
    path = manifest_path(folder, system.name)
    files = data_files(folder, system.name, system.kind)
    journal = journal_path(folder, system.name)
    has_journal = checked_path(journal)
    entries, journaled_covers = _journal_entries(journal, system) if has_journal else ([], {})
    if not checked_path(path):
        present = [p for p in files if checked_path(p)]
        if present and not has_journal:
            raise ConfigError(
                f"{present[0]} holds run {system.name!r}, but it is no recording of the declared system "
                f"{system.name!r} (there is no {path.name}); rename the system or the file")
        if not entries:
            return None
        rec = Recording.fresh(system)
        rec.covers = journaled_covers or rec.covers  # what the journaled answers' fingerprint covered
    else:
        rec, has_files = _read_manifest(path, system)
        if rec.kind != system.kind:
            rec = Recording.fresh(system)  # another kind of system: nothing of it can be reused
        else:
            for p in files:
                checked_path(p)
            answers = _read_answers(files) if has_files else {}
            rec.queries = {qid: info for qid, info in rec.queries.items() if qid in answers}
            rec.answers = {qid: value for qid, value in answers.items() if qid in rec.queries}
            for qid, value in rec.answers.items():
                if isinstance(value, list):
                    for pid, text, _score in value:
                        rec.passages.setdefault(pid, (text, qid))
    for entry in entries:
        try:
            rec.apply(entry)
        except (KeyError, TypeError, ValueError):
            continue  # an entry not of this kind of system
    rec.resumed_queries = {str(e["query_id"]) for e in entries if "answer" in e}
    rec.resumed = len(rec.resumed_queries)
    rec.changed = bool(entries)
    rec.reads_changed = _changed_reads(rec.queries, system.root)
    return rec


def _changed_reads(queries: Mapping[str, Mapping[str, Any]], root: Path | None) -> dict[str, list[str]]:
    """query id -> the files its call read (``reads``, relative to ``root``) whose content differs now."""
    from exam_harness.features.live_systems.fingerprint import file_digest

    if root is None:
        return {}
    now: dict[str, str | None] = {}
    changed: dict[str, list[str]] = {}
    for qid, info in queries.items():
        for rel, digest in (info.get("reads") or {}).items():
            if rel not in now:
                try:
                    now[rel] = file_digest(root / rel)
                except OSError:
                    now[rel] = None  # removed: its answers were made from a file that is gone
            if now[rel] != digest:
                changed.setdefault(qid, []).append(rel)
    return changed


def _read_manifest(path: Path, system: System) -> tuple[Recording, bool]:
    """The manifest's recording (answers not read yet) and whether it names data files."""
    data = read_bytes(path)
    check_json_document(data, path)

    def bad(field: str, value: object, expected: str) -> InputError:
        return InputError(f"unreadable system manifest: {field} is wrong", path=path, field=field,
                          value=limits.quoted(value),
                          expected=f"{expected} (the <name>.system.json a recording writes; delete it to record again)")

    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"unreadable system manifest: {exc}", path=path,
                         expected="the <name>.system.json a recording writes; delete it to record again") from None
    if not isinstance(manifest, dict):
        raise bad("(document)", manifest, "a JSON object")
    if manifest.get("system") != system.name:
        raise bad("system", manifest.get("system"), f"the system's name {system.name!r}")
    top: tuple[tuple[str, tuple[type, ...], str], ...] = (
        ("kind", (str,), "a text"), ("fingerprint", (str,), "a text"),
                                 ("version", (str, type(None)), "a text or null"),
                                 ("queries", (dict,), "an object"), ("errors", (dict, type(None)), "an object"),
                                 ("files", (list, type(None)), "a list of file names"),
                                 ("covers", (dict, type(None)), "an object of texts"))
    for key, kinds, expected in top:
        if not isinstance(manifest.get(key), kinds):
            raise bad(key, manifest.get(key), expected)
    queries: dict[str, dict[str, Any]] = manifest["queries"]
    for qid, info in queries.items():
        if not isinstance(info, dict):
            raise bad(f"queries.{qid}", info, "an object")
        fields: tuple[tuple[str, tuple[type, ...], str], ...] = (
            ("query_sha", (str,), "a text"), ("latency_s", (int, float), "a number"),
            ("attempts", (int,), "a whole number"), ("fingerprint", (str, type(None)), "a text"),
            ("reads", (dict, type(None)), "an object of file -> digest"))
        info.setdefault("fingerprint", manifest["fingerprint"])  # a manifest before per-query fingerprints
        for key, kinds, expected in fields:
            if not isinstance(info.get(key), kinds) or isinstance(info.get(key), bool):
                raise bad(f"queries.{qid}.{key}", info.get(key), expected)
        reads = info.get("reads") or {}
        if not all(isinstance(k, str) and isinstance(v, str) and _relative(k) for k, v in reads.items()):
            raise bad(f"queries.{qid}.reads", reads, "an object of file -> digest, each file relative to the project")
    errors = manifest.get("errors") or {}
    for qid, info in errors.items():
        if not isinstance(info, dict):
            raise bad(f"errors.{qid}", info, "an object")
    covers = manifest.get("covers") or {}
    if not all(isinstance(v, str) for v in covers.values()):
        raise bad("covers", covers, "an object of texts")
    return Recording(system.name, manifest["kind"], manifest["fingerprint"], manifest.get("version"),
                     queries=dict(queries), errors=dict(errors), covers=dict(covers)), bool(manifest.get("files"))


def _relative(name: str) -> bool:
    """A file name a manifest may hold: relative, never climbing out (a hand-edited ``../../x`` is refused)."""
    path = Path(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts


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
