"""Crash safety: SIGKILL the exam at random moments, resume it, and compare with an uninterrupted run.

    .venv/bin/python benchmarks/kill_resume.py                       # 20 trials, 400 pairs
    .venv/bin/python benchmarks/kill_resume.py --trials 50 --pairs 800 --seed 7

A temporary project grades with a deterministic but slow grader (``slow``, registered from the
project's conftest.py: grade = md5(test point text, passage text) mod 6, ``--delay`` seconds per
pair) in small batches (``--batch-size``), so that grading spans a few seconds and many cache
commits. First one uninterrupted run gives the reference reports and the grading window (when the
first and the last grade reached the cache). Then each trial:

1. starts ``pytest banks`` in a subprocess with its own cache and report folder, and SIGKILLs it
   at a moment drawn uniformly from [half the time to the first grade, the end of the reference
   run] (start-up, grading, scoring and report writing are all hit);
2. checks the cache: ``PRAGMA integrity_check`` is ``ok`` and every stored row is the reference's
   grade for that key (nothing half-written or wrong); a report left behind must be whole;
3. reruns the exam to completion: it must grade exactly the pairs missing from the cache (cache
   hits = rows that survived) and write reports equal to the reference (qrels byte for byte; the
   JSON report without ``created`` and the cache statistics).

Prints per trial what the kill hit, and the totals: trials, survived, rows recovered.
Exit status 1 when any trial did not survive. tests/grading/test_crash_resume.py runs a short version.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SLOW_GRADER_CONFTEST = '''
import hashlib
import time

from exam_harness.graders.base import Grader
from exam_harness.core.models import Grade, GraderSpec

DELAY = {delay!r}


class SlowGrader(Grader):
    """Deterministic grades, slowly: md5(test point text, passage text) mod 6 after DELAY s per pair."""

    name = "slow"

    def __init__(self, config):
        self.config = config

    def spec(self):
        return GraderSpec(name="slow", version="1", default_min_grade=4)

    def grade_batch(self, requests):
        out = []
        for r in requests:
            time.sleep(DELAY)
            digest = hashlib.md5((r.test_point.text + "\\x00" + r.passage.text).encode()).hexdigest()
            out.append(Grade(grade=int(digest, 16) % 6, grader="slow", raw_response=digest[:8]))
        return out


def pytest_exam_register_graders(registry):
    registry.register("slow", SlowGrader, "deterministic slow grader (kill/resume benchmark)")
'''

INI = """\
[pytest]
exam_grader = slow
exam_banks = banks
exam_runs = runs
"""

RUNS = ("alpha", "beta", "gamma")


@dataclass(frozen=True)
class Shape:
    queries: int
    points: int  # test points per query
    passages: int  # passages per query, each ranked by every run

    @property
    def pairs(self) -> int:
        return self.queries * self.points * self.passages


def shape_for(pairs: int) -> Shape:
    """About ``pairs`` (passage, test point) pairs: 4 queries x 5 test points x N passages."""
    return Shape(queries=4, points=5, passages=max(1, round(pairs / 20)))


def build_project(folder: Path, shape: Shape, delay: float, seed: int = 0) -> Path:
    """A project (banks/, runs/, conftest.py, tox.ini) grading shape.pairs pairs with the slow grader."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(SLOW_GRADER_CONFTEST.format(delay=delay))
    (folder / "tox.ini").write_text(INI)
    bank = ["queries:"]
    collection = ["id\ttext"]
    runs: dict[str, list[str]] = {name: [] for name in RUNS}
    for q in range(1, shape.queries + 1):
        bank += [f"  - id: q{q}", f"    text: query number {q}", "    questions:"]
        bank += [f"      - question {j} of query {q}" for j in range(1, shape.points + 1)]
        pids = [f"q{q}p{i}" for i in range(1, shape.passages + 1)]
        collection += [f"{pid}\tpassage {pid} with words {rng.randrange(10**6)}" for pid in pids]
        for name in RUNS:
            order = pids[:]
            rng.shuffle(order)
            runs[name] += [f"q{q} Q0 {pid} {r} {100 - r}.0 {name}" for r, pid in enumerate(order, 1)]
    (folder / "banks").mkdir(exist_ok=True)
    (folder / "banks" / "exam.yaml").write_text("\n".join(bank) + "\n")
    (folder / "runs").mkdir(exist_ok=True)
    (folder / "runs" / "collection.tsv").write_text("\n".join(collection) + "\n")
    for name, lines in runs.items():
        (folder / "runs" / f"{name}.run").write_text("\n".join(lines) + "\n")
    return folder


def exam_command(cache: Path, reports: Path, batch_size: int) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "banks", "-q", "-p", "no:cacheprovider", "--exam-no-progress",
        "--exam-batch-size", str(batch_size), "--exam-cache", str(cache), "--exam-report-dir", str(reports),
    ]


def start_exam(project: Path, cache: Path, reports: Path, batch_size: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(exam_command(cache, reports, batch_size), cwd=project, stdout=out, stderr=subprocess.STDOUT)


def cache_rows(cache: Path) -> dict[str, int]:
    """key (hex) -> stored grade of a cache file ({} when it does not exist yet)."""
    if not cache.exists():
        return {}
    with contextlib.closing(sqlite3.connect(cache, timeout=30)) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "grades" not in tables:
            return {}
        return dict(db.execute("SELECT lower(hex(key)), grade FROM grades"))


def integrity(cache: Path) -> str:
    """``PRAGMA integrity_check`` of a cache file ("ok", or "absent" when nothing was created)."""
    if not cache.exists():
        return "absent"
    with contextlib.closing(sqlite3.connect(cache, timeout=30)) as db:
        return "; ".join(str(r[0]) for r in db.execute("PRAGMA integrity_check"))


def normalised_report(reports: Path) -> dict[str, Any]:
    """The JSON report without what may differ between equal runs: timestamp and cache statistics."""
    report = json.loads((reports / "exam-report.json").read_text())
    report.pop("created")
    report.pop("cache")
    return report


def qrels_files(reports: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(reports.glob("*.qrels"))}


@dataclass
class Reference:
    reports: Path
    rows: dict[str, int]
    first_row_s: float
    last_row_s: float
    total_s: float


def run_reference(project: Path, batch_size: int) -> Reference:
    """One uninterrupted run, watched to time the grading window."""
    cache, reports = project / "reference.sqlite", project / "reference"
    started = time.perf_counter()
    proc = start_exam(project, cache, reports, batch_size, project / "reference.log")
    first = last = None
    seen = 0
    while proc.poll() is None:
        rows = _count(cache)
        now = time.perf_counter() - started
        if rows and first is None:
            first = now
        if rows > seen:
            seen, last = rows, now
        time.sleep(0.01)
    total = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"reference run failed ({proc.returncode}):\n{(project / 'reference.log').read_text()}")
    rows = cache_rows(cache)
    return Reference(reports, rows, first or 0.0, last or total, total)


def _count(cache: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=1)) as db:
            return int(db.execute("SELECT COUNT(*) FROM grades").fetchone()[0])
    except sqlite3.Error:
        return 0


@dataclass
class Trial:
    index: int
    kill_at: float
    phase: str = ""  # what the kill hit: start-up, grading, after grading, finished
    integrity: str = ""
    rows_after_kill: int = 0
    wrong_rows: int = 0
    partial_report: bool = False
    stray_temp_files: int = 0
    resumed_hits: int = -1
    resumed_graded: int = -1
    reports_equal: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def survived(self) -> bool:
        return not self.problems


def kill_trial(
    project: Path, reference: Reference, index: int, kill_at: float | None, batch_size: int,
    *, kill_after_rows: int | None = None,
) -> Trial:
    """Start the exam, SIGKILL it at ``kill_at`` seconds (or once the cache holds ``kill_after_rows``
    rows), check what is left, resume to completion and compare with the reference."""
    cache, reports = project / f"trial{index}.sqlite", project / f"trial{index}"
    trial = Trial(index, kill_at if kill_at is not None else -1.0)
    started = time.perf_counter()
    proc = start_exam(project, cache, reports, batch_size, project / f"trial{index}.log")
    while proc.poll() is None:
        elapsed = time.perf_counter() - started
        if kill_at is not None and elapsed >= kill_at:
            break
        if kill_after_rows is not None and _count(cache) >= kill_after_rows:
            trial.kill_at = elapsed
            break
        time.sleep(0.002)
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(signal.SIGKILL)
    proc.wait()

    total = len(reference.rows)
    trial.integrity = integrity(cache)
    if trial.integrity not in ("ok", "absent"):
        trial.problems.append(f"integrity_check: {trial.integrity}")
    rows = cache_rows(cache) if trial.integrity == "ok" else {}
    trial.rows_after_kill = len(rows)
    trial.wrong_rows = sum(1 for k, grade in rows.items() if reference.rows.get(k) != grade)
    if trial.wrong_rows:
        trial.problems.append(f"{trial.wrong_rows} cached rows differ from the reference")
    left = reports / "exam-report.json"
    if left.exists():
        try:
            json.loads(left.read_text())
        except ValueError:
            trial.partial_report = True
            trial.problems.append("a half-written exam-report.json was left behind")
    trial.stray_temp_files = len(list(reports.glob(".*.tmp"))) if reports.exists() else 0
    if finished:
        trial.phase = "finished"
    elif trial.rows_after_kill == 0:
        trial.phase = "start-up"
    elif trial.rows_after_kill < total:
        trial.phase = "grading"
    else:
        trial.phase = "after grading"

    # Resume to completion.
    resumed = subprocess.run(exam_command(cache, reports, batch_size), cwd=project, capture_output=True, text=True)
    if resumed.returncode != 0:
        trial.problems.append(f"resumed run exited {resumed.returncode}: {resumed.stdout[-2000:]}{resumed.stderr[-2000:]}")
        return trial
    summary = json.loads((reports / "exam-report.json").read_text())["cache"]
    trial.resumed_hits, trial.resumed_graded = summary["hits"], summary["graded"]
    if trial.resumed_hits != trial.rows_after_kill or trial.resumed_hits + trial.resumed_graded != total:
        trial.problems.append(
            f"resume used {trial.resumed_hits} cached grades and graded {trial.resumed_graded}; expected "
            f"{trial.rows_after_kill} and {total - trial.rows_after_kill}"
        )
    trial.reports_equal = (
        normalised_report(reports) == normalised_report(reference.reports)
        and qrels_files(reports) == qrels_files(reference.reports)
    )
    if not trial.reports_equal:
        trial.problems.append("final reports differ from the uninterrupted run")
    if cache_rows(cache).keys() != reference.rows.keys():
        trial.problems.append("the resumed cache does not hold exactly the reference's grades")
    return trial


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="Kill/resume trials (default: 20).")
    parser.add_argument("--pairs", type=int, default=400, help="About how many pairs the exam grades (default: 400).")
    parser.add_argument("--delay", type=float, default=0.004, help="Grader seconds per pair (default: 0.004).")
    parser.add_argument("--batch-size", type=int, default=8, help="Pairs per grading batch and cache commit (default: 8).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the kill moments and the project (default: 0).")
    parser.add_argument("--keep", type=Path, help="Build the project here and keep it (default: a temporary folder).")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    shape = shape_for(args.pairs)
    with tempfile.TemporaryDirectory(prefix="kill-resume-") as tmp:
        project = build_project(args.keep or Path(tmp) / "project", shape, args.delay, args.seed)
        reference = run_reference(project, args.batch_size)
        print(
            f"project: {shape.queries} queries x {shape.points} test points x {shape.passages} passages = "
            f"{len(reference.rows)} pairs, batch size {args.batch_size}, {args.delay * 1000:.1f} ms/pair; "
            f"reference run {reference.total_s:.2f}s (grades reach the cache from {reference.first_row_s:.2f}s "
            f"to {reference.last_row_s:.2f}s)"
        )
        low, high = reference.first_row_s / 2, max(reference.last_row_s + 0.3, reference.total_s)
        trials: list[Trial] = []
        for index in range(args.trials):
            kill_at = rng.uniform(low, high)
            trial = kill_trial(project, reference, index, kill_at, args.batch_size)
            trials.append(trial)
            status = "survived" if trial.survived else "FAILED: " + "; ".join(trial.problems)
            print(
                f"trial {index + 1:2d}: kill at {trial.kill_at:5.2f}s ({trial.phase:13s}) integrity {trial.integrity:6s} "
                f"rows kept {trial.rows_after_kill:4d}/{len(reference.rows)}, resume graded {trial.resumed_graded:4d}, "
                f"stray temp files {trial.stray_temp_files}: {status}",
                flush=True,
            )
    survived = sum(t.survived for t in trials)
    phases = {p: sum(t.phase == p for t in trials) for p in ("start-up", "grading", "after grading", "finished")}
    recovered = sum(t.rows_after_kill for t in trials)
    regraded = sum(max(0, t.resumed_graded) for t in trials)
    print(
        f"trials: {len(trials)}, survived: {survived}, killed in "
        + ", ".join(f"{p}: {n}" for p, n in phases.items())
        + f"; rows recovered: {recovered} (kept by the cache, not regraded), rows regraded on resume: {regraded}, "
        f"corrupt caches: {sum(t.integrity not in ('ok', 'absent') for t in trials)}, "
        f"half-written reports: {sum(t.partial_report for t in trials)}, "
        f"stray temp files: {sum(t.stray_temp_files for t in trials)}"
    )
    return 0 if survived == len(trials) else 1


if __name__ == "__main__":
    sys.exit(main())
