"""One pass over the declared systems before grading, in one of the modes:

* ``once`` (default locally): call only the queries the recording lacks (or whose text changed), or
  every query when the system's fingerprint changed; so an edited system is recorded again and an
  interrupted recording resumes;
* ``replay`` (default when ``CI=true``): call nothing; a missing recording or query is an error naming
  the system and the queries; a recording of another fingerprint is replayed with a warning;
* ``record``: call every query again;
* ``live``: call every query, write nothing into the runs folder.

A query a system failed on is not recorded (so ``once`` asks again); the pass returns, per system and
query, the message its exam cases fail with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness.errors import ConfigError
from exam_harness.models import Query
from exam_harness.options import SYSTEM_MODES as MODES
from exam_harness.progress import GradingProgress
from exam_harness.systems.calling import Called, call_all
from exam_harness.systems.declare import System
from exam_harness.systems.recording import Recording, load, manifest_path, query_sha

WORKER = "worker"  # an xdist worker: reads what the controller recorded, calls nothing


def resolve_mode(option: str | None, env: Mapping[str, str] = os.environ) -> str:
    """The option (command line or ini) when given, else ``$EXAM_SYSTEM_MODE``, else ``replay`` when
    ``CI`` is true, else ``once``."""
    if option:
        return option
    raw = env.get("EXAM_SYSTEM_MODE", "").strip()
    if raw:
        if raw not in MODES:
            raise ConfigError(f"EXAM_SYSTEM_MODE must be one of {', '.join(MODES)}, got {raw!r}")
        return raw
    return "replay" if env.get("CI", "").strip().lower() in ("true", "1", "yes") else "once"


def recording_folder(run_paths: Sequence[Path]) -> Path:
    """Where recordings go: the first runs path that is a folder (or not there yet, named without a suffix)."""
    for path in run_paths:
        if path.is_dir() or (not path.exists() and not path.suffix):
            return path
    shown = ", ".join(str(p) for p in run_paths) or "(none)"
    raise ConfigError(f"declared systems are recorded into a runs folder, but the runs paths name files only "
                      f"({shown}); add a folder with --exam-runs DIR")


@dataclass
class PassOutcome:
    """What the pass left: the message each failed (system, query) pair's cases fail with, notes, calls."""

    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # stale recordings, early stops
    calls: int = 0
    recorded: dict[str, int] = field(default_factory=dict)  # system -> queries answered in its recording


ProgressFactory = Callable[[str], GradingProgress]


class SystemsPass:
    def __init__(self, mode: str, folder: Path, *, progress: ProgressFactory | None = None) -> None:
        if mode not in (*MODES, WORKER):
            raise ConfigError(f"system mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.folder = folder
        self.progress = progress or (lambda label: GradingProgress(label, enabled=False))

    def run(self, wanted: Sequence[tuple[System, Sequence[Query]]]) -> PassOutcome:
        outcome = PassOutcome()
        missing: list[str] = []
        for system, queries in wanted:
            if self.mode in ("replay", WORKER):
                self._replay(system, queries, outcome, missing)
            else:
                self._call(system, queries, outcome)
        if missing:
            raise ConfigError("replay mode calls no system, and some recordings are missing:\n  " + "\n  ".join(missing)
                              + "\nrecord them (exam-harness record, or a session in once mode, the default outside "
                              "CI) and commit the files, or choose --exam-system-mode once")
        return outcome

    def _replay(self, system: System, queries: Sequence[Query], outcome: PassOutcome, missing: list[str]) -> None:
        rec = load(self.folder, system)
        if rec is None:
            if self.mode == WORKER:
                for q in queries:
                    outcome.failures[system.name, q.id] = f"system {system.name!r} has no recording"
                return
            missing.append(f"system {system.name!r}: no recording in {self.folder} "
                           f"(no {manifest_path(self.folder, system.name).name})")
            return
        absent = [q.id for q in queries if q.id not in rec.answers]
        if absent and self.mode != WORKER:
            shown = ", ".join(absent[:10]) + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
            missing.append(f"system {system.name!r}: no recorded answer for queries {shown}")
        for qid in absent:
            error = rec.errors.get(qid, {}).get("error") or "no recorded answer"
            outcome.failures[system.name, qid] = f"system {system.name!r} on query {qid!r}: {error}"
        if self.mode == WORKER:
            return  # the controller warned already
        if rec.fingerprint != system.fingerprint:
            outcome.notes.append(
                f"stale recording: system {system.name!r} changed since {manifest_path(self.folder, system.name)} was "
                f"recorded (fingerprint {rec.fingerprint}, now {system.fingerprint}); its recorded answers are scored "
                "as they are; record it again to score the system as it is now")
        changed = [q.id for q in queries if q.id in rec.queries and rec.queries[q.id].get("query_sha") != query_sha(q)]
        if changed:
            outcome.notes.append(f"stale recording: system {system.name!r} answered another text of queries "
                                 f"{', '.join(changed[:10])}; record it again")
        outcome.recorded[system.name] = len(rec.answers)

    def _call(self, system: System, queries: Sequence[Query], outcome: PassOutcome) -> None:
        rec = None if self.mode == "live" else load(self.folder, system)
        if rec is None or rec.fingerprint != system.fingerprint:
            rec = Recording.fresh(system)  # answers of another version of the system are not kept
        if self.mode == "once":
            todo = [q for q in queries if q.id not in rec.answers
                    or rec.queries.get(q.id, {}).get("query_sha") != query_sha(q)]
        else:
            todo = list(queries)
        by_id = {q.id: q for q in todo}
        stopped: str | None = None

        def keep(called: Called) -> None:
            kept = rec.add(called, by_id[called.query_id])
            if kept.error is not None:
                outcome.failures[system.name, called.query_id] = (
                    f"system {system.name!r} failed on query {called.query_id!r} after {kept.attempts} "
                    f"attempt{'s' if kept.attempts > 1 else ''}: {kept.error}")
            bar.advance(1)

        with self.progress(f"calling {system.name}") as bar:
            bar.start(len(todo))
            try:
                stopped = call_all(system, todo, keep)
            finally:
                outcome.calls += len(todo)
                if rec.changed:
                    rec.write(self.folder, system)  # also on Ctrl-C: the finished queries are kept
        if stopped is not None:
            outcome.notes.append(stopped)
            for q in todo:
                if q.id not in rec.answers and (system.name, q.id) not in outcome.failures:
                    outcome.failures[system.name, q.id] = stopped
        outcome.recorded[system.name] = len(rec.answers)
