"""The harness at scale against bare pytest, on synthetic exams, and the embedding grader against its model.

    .venv/bin/python benchmarks/scale.py                  # the growth table at 10k/50k/200k/600k cases, and the rest
    .venv/bin/python benchmarks/scale.py --sizes 10000 50000 --repeat 3 --only-table   # the table's first rows
    .venv/bin/python benchmarks/scale.py --quick          # small sizes: a smoke run, under a minute idle
    .venv/bin/python benchmarks/scale.py --sizes 50000 --query-cases 150000 --embedding-pairs 2000
    .venv/bin/python benchmarks/scale.py --code /tmp/before   # measure another checkout's exam_harness

**The growth table** (``--sizes``, default 10,000 50,000 200,000 600,000 cases; ``--repeat`` times each, 3): at
each size the synthetic exam below and bare pytest on as many cases, alternating (bare first in odd repetitions,
the harness first in even ones; the harness cold then warm each time), every run a fresh subprocess whose CPU
seconds (user + sys, its children included: ``os.wait4``'s resource usage) and peak resident memory are taken.
Each row gives the medians and the harness's cold and warm CPU and peak memory as multiples of bare pytest's; a
markdown table of them ends the section (docs/speed.md holds it). ``--only-table`` measures nothing else.

**The synthetic exam** (:func:`write_project`, fixed seed ``--seed``): ``Q`` queries x ``T`` test points
(questions, ``--test-points``, 20) x ``R`` runs (``--runs``, 100) cases, ``Q`` the smallest number of
queries that reaches the asked number of cases. Each query has a pool of ``--pool`` passages (200; a
passage is 12 words from a 5,000-word vocabulary) and each run ranks ``k`` = 20 of them, drawn at random,
so every run's top-20 is graded and the grading pass sees about ``Q x pool x T`` pairs (at 600,000 cases:
300 queries x 20 nuggets x 100 runs, 1.2M pairs, the TREC RAG-sized exam of the issue). The generated
project holds ``banks/exam.yaml``, ``runs/collection.tsv``, one TREC run file per run, a ``pytest.ini``
and a ``conftest.py`` registering the grader ``instant``: grade = crc32 of the pair's ids mod 6, so
grading costs about nothing and what is measured is the harness itself (pooling, cache keys, the SQLite
cache, cases, scoring, reports).

**Bare pytest**: a test module with one trivial test function parametrized over the same number of
cases (``assert i >= 0``), run with the harness plugin disabled (``-p no:exam_harness``).

**What runs** (each a fresh ``pytest -q -p no:cacheprovider`` subprocess; wall time, and peak RSS from
``os.wait4``'s resource usage of that process): the harness on the per-test-point exam cold (empty
grade cache) and warm (cache filled by the cold run), bare pytest on as many cases, then the harness
with ``--exam-cases query`` (one case per query x run) on the ``--query-cases`` exam, cold and warm. If
the installed harness does not know ``--exam-cases`` (pytest: "unrecognized arguments"), that figure is
``n/a (option missing)``. The embedding figure is :func:`benchmarks.embedding_speed.measure` (the
harness's grading pass vs a bare encode-once loop on DL19 pairs), run as a subprocess with the same
``--code``, or read from a JSON file it wrote (``--embedding-json``). **xdist** (``--xdist-cases``,
20,000): the same synthetic exam graded by the offline default grader (``embedding``), serial and with
``-n 2`` (``--xdist-workers``), each from an empty cache; prints wall and CPU seconds and the ratio.

Ends with exactly one line::

    overhead: <x>x CPU, <y>x memory vs bare pytest at <n> cases; query-cases: <t> s, <m> GB at 600000 cases; embedding: <p>% of bare encode-once loop

where ``x`` and ``y`` are the harness's heavier of cold and warm over bare pytest's (medians) at the table's last
size, ``t`` and ``m``
the heavier of the query-case exam's cold and warm runs (time in seconds, peak RSS in GB = 1e9 bytes),
``p`` the embedding grader's rate as a share of the bare loop's.

How long it takes (2 cores): the table's rows cost about three times their sizes' sum of cases at ~1 ms a case
each repetition (the 600k row ~16 minutes a repetition idle: bare pytest, the harness cold and warm, ~5 minutes
each; the whole table at --repeat 3 about 65 minutes), the 600k query-case exam twice, and about a
minute for the embedding figure: an hour or more idle at the defaults, more on a loaded machine. ``--quick`` (4,000 cases, 10,000 query cases, 500 DL19 pairs) takes under a
minute on an idle machine. Timings vary with the machine's load; the script prints every figure and
asserts none.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
K = 20
VOCABULARY = 5000
WORDS_PER_PASSAGE = 12

CONFTEST = '''\
"""The instant grader of benchmarks/scale.py: grade = crc32 of the pair's ids mod 6, no model."""
import zlib

from exam_harness.graders.base import Grader
from exam_harness.core.models import Grade, GraderSpec


class InstantGrader(Grader):
    name = "instant"

    def __init__(self, config):
        self.config = config

    def spec(self):
        return GraderSpec(name="instant", version="1", default_min_grade=4)

    def grade_batch(self, requests):
        out = []
        for r in requests:
            grade = zlib.crc32(f"{r.passage.id} {r.test_point.id}".encode()) % 6
            out.append(Grade(grade=grade, grader="instant", raw_response=str(grade)))
        return out


def pytest_exam_register_graders(registry):
    registry.register("instant", InstantGrader, "benchmarks/scale.py: instant deterministic grades")
'''

INI = """\
[pytest]
testpaths = banks
exam_grader = instant
exam_banks = banks
exam_runs = runs
exam_cache = .exam-cache/grades.sqlite
exam_report_dir = reports
exam_no_progress = true
"""

BARE_TEST = """\
import pytest


@pytest.mark.parametrize("i", range({cases}))
def test_case(i):
    assert i >= 0
"""


@dataclass(frozen=True)
class Shape:
    """An exam's size: queries x test points x runs cases; ``pool`` passages per query."""

    queries: int
    test_points: int
    runs: int
    pool: int

    @property
    def cases(self) -> int:
        return self.queries * self.test_points * self.runs

    @classmethod
    def for_cases(cls, cases: int, *, test_points: int, runs: int, pool: int) -> Shape:
        return cls(max(1, math.ceil(cases / (test_points * runs))), test_points, runs, pool)


@dataclass(frozen=True)
class Measured:
    """One subprocess: wall seconds, peak resident memory in bytes, exit status, its output's tail, and its CPU
    seconds (user + sys, the children it waited for included)."""

    seconds: float
    peak_bytes: int
    returncode: int
    tail: str
    cpu: float = 0.0

    @property
    def gb(self) -> float:
        return self.peak_bytes / 1e9


def write_project(folder: Path, shape: Shape, *, seed: int = 20) -> Path:
    """A pytest project holding the synthetic exam of the module docstring; returns ``folder``."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(VOCABULARY)]
    (folder / "banks").mkdir(parents=True)
    (folder / "runs").mkdir()
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text(INI)
    bank = ["queries:"]
    collection = ["id\ttext"]
    pools: list[list[str]] = []
    for q in range(shape.queries):
        bank += [f"  - id: q{q}", f"    text: synthetic query {q}", "    questions:"]
        bank += [f"      - {{id: q{q}/t{t}, text: question {t} of query {q}}}" for t in range(shape.test_points)]
        pool = [f"q{q}p{p}" for p in range(shape.pool)]
        collection += [f"{pid}\t{' '.join(rng.choices(vocabulary, k=WORDS_PER_PASSAGE))}" for pid in pool]
        pools.append(pool)
    (folder / "banks" / "exam.yaml").write_text("\n".join(bank) + "\n")
    (folder / "runs" / "collection.tsv").write_text("\n".join(collection) + "\n")
    for r in range(shape.runs):
        lines = [f"q{q} Q0 {pid} {rank} {K - rank + 1}.0 run{r}"
                 for q, pool in enumerate(pools) for rank, pid in enumerate(rng.sample(pool, min(K, len(pool))), 1)]
        (folder / "runs" / f"run{r}.run").write_text("\n".join(lines) + "\n")
    return folder


def write_bare(folder: Path, cases: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "test_bare.py").write_text(BARE_TEST.format(cases=cases))
    (folder / "pytest.ini").write_text("[pytest]\n")
    return folder


def run_measured(args: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """Run ``args`` in ``cwd``; its wall time and peak RSS (``os.wait4`` reports that child's own usage)."""
    with log.open("wb") as out:
        started = time.perf_counter()
        process = subprocess.Popen(list(args), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # wait4 reaped it: tell Popen
    text = log.read_text(errors="replace")
    return Measured(seconds, usage.ru_maxrss * 1024, process.returncode, text[-2000:],  # ru_maxrss: KiB on Linux
                    usage.ru_utime + usage.ru_stime)


def environment(code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:  # this checkout's exam_harness before the installed (editable) one
        env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTEST_ADDOPTS", None)
    return env


PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def harness_runs(project: Path, env: dict[str, str], extra: Sequence[str], label: str) -> dict[str, Measured]:
    """Cold (no cache) then warm (the cold run's cache) harness runs on ``project``."""
    shutil.rmtree(project / ".exam-cache", ignore_errors=True)
    found: dict[str, Measured] = {}
    for state in ("cold", "warm"):
        measured = run_measured([*PYTEST, *extra], project, env, project / f"{state}.log")
        found[state] = measured
        print(f"  {label} {state}: {measured.seconds:.1f} s, {measured.cpu:.1f} s CPU, {measured.gb:.2f} GB, exit "
              f"{measured.returncode}", flush=True)
        if measured.returncode not in (0, 1):  # 1: some exam case failed, still a complete session
            break
    return found


def embedding_figure(args: argparse.Namespace, env: dict[str, str]) -> str:
    """``<p>% of bare encode-once loop`` for the embedding grader against the bare encode-once loop, or why there is none."""
    if args.embedding_json is not None and args.embedding_json.exists() and not args.embedding_pairs_given:
        data = json.loads(args.embedding_json.read_text())
        return f"{100 * float(data['ratio']):.0f}% of bare encode-once loop"
    if args.embedding_pairs == 0:
        return "n/a (skipped)"
    target = args.embedding_json or Path(tempfile.mkdtemp(prefix="exam-embedding-")) / "embedding.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "embedding_speed.py"), "--pairs", str(args.embedding_pairs),
               "--repeat", str(args.embedding_repeat), "--json", str(target)]
    print(f"embedding grader vs bare encode-once loop ({args.embedding_pairs} DL19 pairs):", flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        print(f"  {line}")
    if done.returncode != 0:
        print(done.stderr[-2000:])
        return "n/a (benchmark failed)"
    return f"{100 * float(json.loads(target.read_text())['ratio']):.0f}% of bare encode-once loop"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 200_000, 600_000],
                        help="cases of the growth table's rows (default 10000 50000 200000 600000)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating repetitions per row (default 3)")
    parser.add_argument("--only-table", action="store_true", help="the growth table alone (no query-case, xdist "
                        "or embedding figure)")
    parser.add_argument("--query-cases", type=int, default=600_000,
                        help="cases of the --exam-cases query figure (default 600000; 0 skips it)")
    parser.add_argument("--test-points", type=int, default=20, help="test points per query (default 20)")
    parser.add_argument("--runs", type=int, default=100, help="runs (default 100)")
    parser.add_argument("--pool", type=int, default=200, help="passages per query the runs draw from (default 200)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--embedding-pairs", type=int, default=None,
                        help="DL19 pairs of the embedding figure (default 9400; 0 skips it)")
    parser.add_argument("--embedding-repeat", type=int, default=1, help="alternating runs of each way (default 1)")
    parser.add_argument("--embedding-json", type=Path,
                        help="read the embedding figure from this file (benchmarks/embedding_speed.py --json) when "
                        "it exists and --embedding-pairs is not given; else measure and write it there")
    parser.add_argument("--xdist-cases", type=int, default=20_000,
                        help="cases of the serial vs -n figure, embedding grader (default 20000; 0 skips it)")
    parser.add_argument("--xdist-workers", type=int, default=2, help="workers of that figure (default 2)")
    parser.add_argument("--code", type=Path, help="checkout whose exam_harness to measure (default: the installed one)")
    parser.add_argument("--keep", type=Path, help="generate the projects here and keep them (default: a temp folder)")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args = parser.parse_args(argv)
    args.embedding_pairs_given = args.embedding_pairs is not None
    if args.only_table:
        args.query_cases = args.xdist_cases = args.embedding_pairs = 0
    if args.quick:
        args.sizes, args.repeat = [4000], min(args.repeat, 2)
        args.query_cases = min(args.query_cases, 10_000)
        args.xdist_cases = min(args.xdist_cases, 4000)
        if args.embedding_pairs is None:
            args.embedding_pairs = 500
    if args.embedding_pairs is None:
        args.embedding_pairs = 9400
    env = environment(args.code.resolve() if args.code else None)
    base = args.keep or Path(tempfile.mkdtemp(prefix="exam-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        return measure(args, env, base)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


def measure(args: argparse.Namespace, env: dict[str, str], base: Path) -> int:
    where = args.code or "the installed exam_harness"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; measuring {where}", flush=True)
    rows = [growth_row(args, env, base, cases) for cases in args.sizes]
    print("\n" + growth_table(rows), flush=True)
    last = rows[-1] if rows else None
    overhead = (f"overhead: {last.cpu_x:.2f}x CPU, {last.memory_x:.2f}x memory vs bare pytest at {last.cases} cases"
                if last is not None and last.complete else "overhead: n/a (a run failed)")

    query = "query-cases: n/a (skipped)"
    if args.query_cases:
        qshape = Shape.for_cases(args.query_cases, test_points=args.test_points, runs=args.runs, pool=args.pool)
        qproject = write_project(base / "query-exam", qshape, seed=args.seed)
        print(f"per-query exam: {qshape.queries} queries x {qshape.test_points} test points x {qshape.runs} runs = "
              f"{qshape.cases} cases ({qshape.queries * qshape.runs} query cases)", flush=True)
        runs = harness_runs(qproject, env, ["--exam-cases", "query"], "harness --exam-cases query")
        shutil.rmtree(qproject, ignore_errors=True)
        if any("unrecognized arguments" in m.tail for m in runs.values()):
            query = "query-cases: n/a (option missing)"
        elif len(runs) < 2 or any(m.returncode not in (0, 1) for m in runs.values()):
            print("--- the query-case run failed:\n" + next(iter(reversed(list(runs.values())))).tail)
            query = "query-cases: n/a (the run failed)"
        else:
            seconds = max(m.seconds for m in runs.values())
            gb = max(m.gb for m in runs.values())
            query = f"query-cases: {seconds:.0f} s, {gb:.2f} GB at {qshape.cases} cases"

    if args.xdist_cases:
        xdist_figure(args, env, base)
    embedding = f"embedding: {embedding_figure(args, env)}"
    print(f"{overhead}; {query}; {embedding}")
    return 0


@dataclass(frozen=True)
class Row:
    """One size of the growth table: medians over the repetitions."""

    cases: int
    bare: Measured
    cold: Measured
    warm: Measured
    complete: bool

    @property
    def cpu_x(self) -> float:
        return max(self.cold.cpu, self.warm.cpu) / self.bare.cpu

    @property
    def memory_x(self) -> float:
        return max(self.cold.peak_bytes, self.warm.peak_bytes) / self.bare.peak_bytes


def median_of(found: Sequence[Measured]) -> Measured:
    """The median wall, CPU and peak memory of ``found`` (each taken on its own)."""
    return Measured(statistics.median(m.seconds for m in found), int(statistics.median(m.peak_bytes for m in found)),
                    max(m.returncode for m in found), found[-1].tail, statistics.median(m.cpu for m in found))


def growth_row(args: argparse.Namespace, env: dict[str, str], base: Path, cases: int) -> Row:
    """The harness (cold, warm) and bare pytest at ``cases``, alternating, ``args.repeat`` times."""
    shape = Shape.for_cases(cases, test_points=args.test_points, runs=args.runs, pool=args.pool)
    began = time.perf_counter()
    project = write_project(base / f"exam-{cases}", shape, seed=args.seed)
    bare_dir = write_bare(base / f"bare-{cases}", shape.cases)
    print(f"{shape.cases} cases: {shape.queries} queries x {shape.test_points} test points x {shape.runs} runs, pool "
          f"{shape.pool} (written in {time.perf_counter() - began:.1f} s); load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    found: dict[str, list[Measured]] = {"bare": [], "cold": [], "warm": []}
    complete = True
    for repetition in range(args.repeat):
        for side in (("bare", "harness") if repetition % 2 == 0 else ("harness", "bare")):
            if side == "bare":
                bare = run_measured([*PYTEST, "-p", "no:exam_harness"], bare_dir, env, base / "bare.log")
                print(f"  bare pytest: {bare.seconds:.1f} s, {bare.cpu:.1f} s CPU, {bare.gb:.2f} GB, exit "
                      f"{bare.returncode}", flush=True)
                found["bare"].append(bare)
                complete = complete and bare.returncode == 0
            else:
                harness = harness_runs(project, env, [], "harness")
                complete = complete and len(harness) == 2 and all(m.returncode in (0, 1) for m in harness.values())
                for state, measured in harness.items():
                    found[state].append(measured)
                    if measured.returncode not in (0, 1):
                        print(f"--- harness {state} failed:\n{measured.tail}")
        if not complete:
            break
    shutil.rmtree(project, ignore_errors=True)
    shutil.rmtree(bare_dir, ignore_errors=True)
    if not complete or not all(found.values()):
        empty = Measured(math.nan, 0, 1, "")
        return Row(shape.cases, *(median_of(found[k]) if found[k] else empty for k in ("bare", "cold", "warm")),
                   complete=False)
    row = Row(shape.cases, median_of(found["bare"]), median_of(found["cold"]), median_of(found["warm"]), True)
    print(f"  median at {row.cases} cases: bare {row.bare.cpu:.1f} s CPU {row.bare.gb:.2f} GB; harness cold "
          f"{row.cold.cpu:.1f} s CPU, warm {row.warm.cpu:.1f} s CPU, {max(row.cold.gb, row.warm.gb):.2f} GB "
          f"({row.cpu_x:.2f}x CPU, {row.memory_x:.2f}x memory)", flush=True)
    return row


def growth_table(rows: Sequence[Row]) -> str:
    """The growth table as markdown (docs/speed.md)."""
    lines = ["| cases | bare pytest CPU | exam cold CPU | exam warm CPU | bare peak memory | exam peak memory |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        if not row.complete:
            lines.append(f"| {row.cases:,} | (a run failed) | | | | |")
            continue
        peak = max(row.cold.peak_bytes, row.warm.peak_bytes)
        lines.append(f"| {row.cases:,} | {row.bare.cpu:.1f} s | {row.cold.cpu:.1f} s ({row.cold.cpu / row.bare.cpu:.2f}x)"
                     f" | {row.warm.cpu:.1f} s ({row.warm.cpu / row.bare.cpu:.2f}x) | {row.bare.peak_bytes / 2**20:.0f} "
                     f"MiB | {peak / 2**20:.0f} MiB ({row.memory_x:.2f}x) |")
    return "\n".join(lines)


def xdist_figure(args: argparse.Namespace, env: dict[str, str], base: Path) -> None:
    """Serial against ``-n N`` on one exam graded by the offline default grader (``embedding``), each
    from an empty cache: the controller grades every pair once and the workers run their share of the
    cases. Peak memory is the largest process's (``wait4`` reports the maximum over the waited-for
    process tree), the CPU seconds are the whole tree's."""
    shape = Shape.for_cases(args.xdist_cases, test_points=args.test_points, runs=args.runs, pool=args.pool)
    project = write_project(base / "xdist-exam", shape, seed=args.seed)
    print(f"xdist: {shape.cases} cases ({shape.queries} queries x {shape.test_points} test points x {shape.runs} "
          f"runs), grader embedding, cold cache each:", flush=True)
    found: dict[str, Measured] = {}
    for label, extra in (("serial", []), (f"-n {args.xdist_workers}", ["-n", str(args.xdist_workers)])):
        shutil.rmtree(project / ".exam-cache", ignore_errors=True)
        before = os.times()
        measured = run_measured([*PYTEST, "-o", "exam_grader=embedding", *extra], project, env,
                                project / "xdist.log")
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        found[label] = measured
        print(f"  {label}: {measured.seconds:.1f} s wall, {cpu:.1f} s CPU, largest process {measured.gb:.2f} GB, "
              f"exit {measured.returncode}", flush=True)
        if measured.returncode not in (0, 1):
            print(measured.tail)
            return
    serial, parallel = found.values()
    print(f"xdist: -n {args.xdist_workers} takes {parallel.seconds / serial.seconds:.2f}x the serial time, "
          f"{parallel.peak_bytes / serial.peak_bytes:.2f}x its largest process's memory", flush=True)
    shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
