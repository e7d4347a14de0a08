"""One pass over the declared systems before grading, in one of the modes:

* ``once`` (default locally): call only the queries the recording lacks (or whose text changed), and
  those answered by another version of the system unless ``--exam-stale`` says ``warn`` or ``fail``;
  so an edited system is recorded again and an interrupted recording resumes;
* ``replay`` (default when ``CI=true``): call nothing; a missing recording or query is an error naming
  the system and the queries; a stale recording is scored as it is, and fails the session under
  ``stale=fail`` (the default under CI);
* ``record``: call every query again; a query failing now keeps its recorded answer;
* ``live``: call every query, write nothing into the runs folder.

Every system is called at once (:func:`~exam_harness.features.live_systems.calling.call_many`), the runs folder held
locked against other sessions; each answer is journaled as it arrives. A query a system failed on is
not answered (so ``once`` asks again); the pass returns, per system and query, the message its exam
cases fail with, and each system's :class:`~exam_harness.features.live_systems.health.SystemHealth`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Query
from exam_harness.core.progress import GradingProgress
from exam_harness.features.live_systems.calling import GLOBAL_CONCURRENCY, Called, call_many
from exam_harness.features.live_systems.declare import System
from exam_harness.features.live_systems.fingerprint import file_digest
from exam_harness.features.live_systems.health import SystemHealth, system_health
from exam_harness.features.live_systems.options import SYSTEM_MODES as MODES
from exam_harness.features.live_systems.reads import project_reads
from exam_harness.features.live_systems.recording import Journal, Recording, load, manifest_path, query_sha
from exam_harness.features.live_systems.secrets import scrub
from exam_harness.io.textio import locked_folder

WORKER = "worker"  # an xdist worker: reads what the controller recorded, calls nothing
DRY = "dry"  # --exam-dry-run: reads the recordings, calls nothing, says what would be called


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
    """What the pass left: the message each failed (system, query) pair's cases fail with, notes, calls,
    and each system's health."""

    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    causes: dict[tuple[str, str], str] = field(default_factory=dict)  # each failure without its query
    notes: list[str] = field(default_factory=list)  # stale recordings, early stops, kept answers
    calls: int = 0
    recorded: dict[str, int] = field(default_factory=dict)  # system -> queries answered in its recording
    health: dict[str, SystemHealth] = field(default_factory=dict)

    def fail(self, system: str, query_id: str, message: str, cause: str) -> None:
        """A query ``system`` failed on: ``message`` its cases fail with, ``cause`` the same without the
        query (a system failing on many queries for one cause is said once, pytest_session.py)."""
        self.failures[system, query_id] = message
        self.causes[system, query_id] = cause


ProgressFactory = Callable[[str], GradingProgress]


@dataclass
class _Plan:
    """One system in a calling pass: its recording, the queries asked, those to call, what happened."""

    system: System
    rec: Recording
    queries: Sequence[Query]
    todo: list[Query]
    text_changed: list[str]
    files_changed: list[str]
    stale: list[str] = field(default_factory=list)  # answered by another version of the system when planned
    journal: Journal | None = None
    failed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    answered: int = 0
    read: dict[str, str] = field(default_factory=dict)  # project files its calls read (reads.py), all of them
    written: set[str] = field(default_factory=set)  # every file its calls wrote (their state, not an input)


class SystemsPass:
    def __init__(self, mode: str, folder: Path, *, progress: ProgressFactory | None = None, stale: str = "record",
                 say: Callable[[str], None] | None = None, budget: int = GLOBAL_CONCURRENCY) -> None:
        if mode not in (*MODES, WORKER, DRY):
            raise ConfigError(f"system mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.folder = folder
        self.progress = progress or (lambda label: GradingProgress(label, enabled=False))
        self.stale = stale
        self.say = say
        self.budget = budget

    def run(self, wanted: Sequence[tuple[System, Sequence[Query]]]) -> PassOutcome:
        outcome = PassOutcome()
        missing: list[str] = []
        if self.mode in ("replay", WORKER, DRY):
            for system, queries in wanted:
                self._replay(system, queries, outcome, missing)
        elif wanted:
            self._call(wanted, outcome)
        if missing:
            raise ConfigError("replay mode calls no system, and some recordings are missing:\n  " + "\n  ".join(missing)
                              + "\nrecord them (exam-harness record, or a session in once mode, the default outside "
                              "CI) and commit the files, or choose --exam-system-mode once")
        return outcome

    def _replay(self, system: System, queries: Sequence[Query], outcome: PassOutcome, missing: list[str]) -> None:
        rec = load(self.folder, system)
        if rec is None:
            if self.mode == DRY:
                outcome.notes.append(f"dry run: system {system.name!r} has no recording; a session would call it for "
                                     f"{len(queries)} queries (nothing was called)")
            if self.mode in (WORKER, DRY):
                for q in queries:
                    outcome.fail(system.name, q.id, f"system {system.name!r} has no recording", "no recording")
                return
            missing.append(f"system {system.name!r}: no recording in {self.folder} "
                           f"(no {manifest_path(self.folder, system.name).name})")
            return
        absent = [q.id for q in queries if q.id not in rec.answers]
        if absent and self.mode == "replay":
            shown = ", ".join(absent[:10]) + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
            missing.append(f"system {system.name!r}: no recorded answer for queries {shown}")
        if absent and self.mode == DRY:
            outcome.notes.append(f"dry run: system {system.name!r} would be called for {len(absent)} queries its "
                                 "recording lacks (nothing was called)")
        for qid in absent:
            error = rec.errors.get(qid, {}).get("error") or "no recorded answer"
            outcome.fail(system.name, qid, f"system {system.name!r} on query {qid!r}: {error}", error)
        if self.mode == WORKER:
            return  # the controller warned already
        text_changed = [q.id for q in queries if q.id in rec.queries
                        and rec.queries[q.id].get("query_sha") != query_sha(q)]
        health = system_health(
            system.name, self.mode, self.stale, answered=list(rec.answers), stale=rec.stale_queries(system),
            text_changed=text_changed, files_changed=rec.changed_inputs(system),
            wanted=[q.id for q in queries], failed=[], kept=[], called=0,
            replayed=len(queries) - len(absent), resumed=rec.resumed, empty=rec.empty())
        self._noted(health, outcome)
        outcome.recorded[system.name] = len(rec.answers)

    def _noted(self, health: SystemHealth, outcome: PassOutcome) -> None:
        outcome.health[health.system] = health
        if health.stale:
            then = {"warn": "its recorded answers are scored as they are",
                    "fail": "its recorded answers are scored as they are, and the session fails (stale=fail)",
                    "record": "they were called again" if self.mode in ("once", "record") else
                    "its recorded answers are scored as they are (replay mode calls nothing)"}[self.stale]
            outcome.notes.append(scrub(f"{health.stale_message()}; {then}"))
        if health.empty_answers:
            outcome.notes.append(scrub(health.empty_message()))

    # -- calling -----------------------------------------------------------------------------------
    def _call(self, wanted: Sequence[tuple[System, Sequence[Query]]], outcome: PassOutcome) -> None:
        if self.mode != "live":
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot make the runs folder {self.folder}: {exc.strerror or exc}") from None
        with locked_folder(self.folder, on_wait=self._waiting):  # another session recording here: take turns
            plans = [self._plan(system, queries) for system, queries in wanted]
            try:
                self._open_journals(plans)
                self._call_plans(plans, outcome)
            finally:
                self._close(plans, outcome)

    def _waiting(self) -> None:
        if self.say is not None:
            self.say(f"exam-harness: another session is recording into {self.folder}; waiting for it to finish")

    def _plan(self, system: System, queries: Sequence[Query]) -> _Plan:
        rec = None if self.mode == "live" else load(self.folder, system)
        rec = rec if rec is not None else Recording.fresh(system)
        files_changed = rec.changed_inputs(system)
        text_changed = [q.id for q in queries if q.id in rec.queries
                        and rec.queries[q.id].get("query_sha") != query_sha(q)]
        asked = {q.id for q in queries}
        stale = [q for q in rec.stale_queries(system) if q in asked]
        if self.mode == "once":
            recall = set(text_changed) | (set(stale) if self.stale == "record" else set())
            todo = [q for q in queries if q.id not in rec.answers or q.id in recall]
        else:
            todo = list(queries)
        return _Plan(system, rec, queries, todo, text_changed, files_changed, stale)

    def _open_journals(self, plans: Sequence[_Plan]) -> None:
        if self.mode == "live":
            return
        for plan in plans:
            if plan.todo:
                try:
                    plan.journal = Journal(self.folder, plan.system)
                except OSError as exc:  # before any call: nothing is spent
                    raise ConfigError(f"cannot record system {plan.system.name!r} into {self.folder}: "
                                      f"{exc.strerror or exc}; nothing was called") from None

    def _call_plans(self, plans: Sequence[_Plan], outcome: PassOutcome) -> None:
        by_name = {plan.system.name: plan for plan in plans}
        queries = {(plan.system.name, q.id): q for plan in plans for q in plan.todo}
        total = sum(len(plan.todo) for plan in plans)

        def keep(system: System, called: Called) -> None:
            plan = by_name[system.name]
            reads = project_reads(called.reads, system.root, skip=[self.folder], covered=system.covers,
                                  digest=file_digest) if called.reads and system.root is not None else {}
            plan.read.update(reads)
            plan.written.update(called.writes)
            kept, entry, kept_old = plan.rec.add(called, queries[system.name, called.query_id], system, reads)
            if plan.journal is not None:
                try:
                    plan.journal.append(entry)
                except OSError as exc:
                    raise ConfigError(f"cannot write the recording of system {system.name!r} into {self.folder}: "
                                      f"{exc.strerror or exc}; the answers journaled before are kept") from None
            outcome.calls += 1
            if kept.error is not None:
                plan.failed.append(called.query_id)
                tries = f"after {kept.attempts} attempt{'s' if kept.attempts > 1 else ''}: {kept.error}"
                cause = f"failed {tries}"
                outcome.fail(system.name, called.query_id,
                             f"system {system.name!r} failed on query {called.query_id!r} {tries}", cause)
                if kept_old:
                    plan.kept.append(called.query_id)
            else:
                plan.answered += 1
            bar.advance(1)

        with self.progress("calling " + ", ".join(plan.system.name for plan in plans if plan.todo)) as bar:
            bar.start(total)
            stopped = call_many([(plan.system, plan.todo) for plan in plans], keep, budget=self.budget,
                                say=self.say)
        for name, message in stopped.items():
            outcome.notes.append(message)
            plan = by_name[name]
            for q in plan.todo:
                if q.id not in plan.rec.answers and (name, q.id) not in outcome.failures:
                    outcome.fail(name, q.id, message, message)

    def _close(self, plans: Sequence[_Plan], outcome: PassOutcome) -> None:
        """Write what was recorded (also after an interrupt or a failure), then each system's health."""
        problems: list[str] = []
        for plan in plans:
            rec, system = plan.rec, plan.system
            _state_is_no_input(plan)
            if all(rec.current(q, system) for q in rec.answers):
                rec.fingerprint, rec.covers, rec.version = system.fingerprint, dict(system.covers), system.version
            if rec.changed:
                try:
                    rec.write(self.folder, system)
                except (OSError, ConfigError) as exc:
                    problems.append(f"cannot write the recording of system {system.name!r} into {self.folder}: "
                                    f"{getattr(exc, 'strerror', None) or exc}")
                    if plan.journal is not None:
                        plan.journal.close(done=False)  # the journal keeps the answers for the next session
                    continue
            if plan.journal is not None:
                plan.journal.close(done=True)
            if plan.kept:
                outcome.notes.append(f"system {system.name!r} failed now on queries {', '.join(plan.kept[:10])}; "
                                     "their recorded answers are kept in the recording")
            outcome.notes += [scrub(note) for note in _called_why(plan)]
            health = system_health(
                system.name, self.mode, self.stale, answered=list(rec.answers), stale=rec.stale_queries(system),
                text_changed=[q for q in plan.text_changed if q not in {x.id for x in plan.todo}],
                files_changed=plan.files_changed, wanted=[q.id for q in plan.queries], failed=plan.failed,
                kept=plan.kept, called=len(plan.failed) + plan.answered,
                replayed=sum(1 for q in plan.queries if q.id in rec.answers) - plan.answered, resumed=rec.resumed,
                empty=rec.empty())
            self._noted(health, outcome)
            outcome.recorded[system.name] = len(rec.answers)
        if problems:
            raise ConfigError("\n".join(problems) + "\nthe answers of this session are kept in the journal "
                              "(.<name>.journal.jsonl) and resumed by the next session")


def _listed(ids: Sequence[str], most: int = 8) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _state_is_no_input(plan: _Plan) -> None:
    """The files this pass's calls read are inputs of their answers unless they are the system's state: a file
    any of its calls wrote (a cache it fills), or one that changed while it was called. Those are dropped from
    the answers' reads, or every later session would find them changed and record the system again."""
    root = plan.system.root
    if root is None or not plan.read:
        return
    state: set[str] = set()
    for rel in plan.read:
        path = root / rel
        try:
            changed = file_digest(path) != plan.read[rel]
        except OSError:
            changed = True
        if changed or str(path.resolve()) in plan.written or os.path.abspath(path) in plan.written:
            state.add(rel)
    if not state:
        return
    for qid in {q.id for q in plan.todo}:
        info = plan.rec.queries.get(qid, {})
        if info.get("reads"):
            kept = {rel: digest for rel, digest in info.pop("reads").items() if rel not in state}
            if kept:
                info["reads"] = kept
            plan.rec.changed = True
    for rel in state:
        plan.read.pop(rel)


def _called_why(plan: _Plan) -> list[str]:
    """What a calling pass says of one system beside its health: why answers it had were called again (the
    system changed, naming what: a local re-record says why as CI's stale line does), the answers a cut-short
    session journaled (resumed, or called again when the system changed since), and the project files its calls
    read that its declaration does not cover (covered by the recording from now on)."""
    name, called = repr(plan.system.name), {q.id for q in plan.todo}
    what = f" (changed: {_listed(plan.files_changed)})" if plan.files_changed else ""
    notes: list[str] = []
    resumed = plan.rec.resumed_queries
    again = [q for q in plan.stale if q in called and q not in resumed]
    if again:
        notes.append(f"system {name}: {len(again)} recorded answer{'s were' if len(again) != 1 else ' was'} made by "
                     f"another version of the system{what}; called again")
    if resumed:
        redone = resumed & called
        kept = len(resumed) - len(redone)
        one = len(resumed) == 1
        line = (f"system {name}: {len(resumed)} answer{'' if one else 's'} a cut-short session journaled "
                f"{'was' if one else 'were'} ")
        if not redone:
            line += "resumed, not called again"
        elif not kept:
            line += f"made by another version of the system{what}, so called again"
        else:
            line += (f"resumed: {kept} not called again, {len(redone)} called again (made by another version of the "
                     f"system{what})")
        notes.append(line)
    unseen = sorted(rel for rel in plan.read if f"file {rel}" not in plan.system.covers)
    if unseen:
        notes.append(f"system {name} read project file{'s' if len(unseen) != 1 else ''} its declaration does not "
                     f"cover: {_listed(unseen)}; the recording covers {'them' if len(unseen) != 1 else 'it'} (an edit "
                     "makes the answers that read it stale); name them with files= to cover them before any call")
    return notes
