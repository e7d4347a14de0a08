"""Seconds to build the session report (:func:`exam_harness.report.build.build_report`) on a synthetic exam.

    .venv/bin/python benchmarks/report_build.py                       # 100 runs x 300 queries, both banks
    .venv/bin/python benchmarks/report_build.py --runs 20 --queries 50 --repeat 3
    .venv/bin/python benchmarks/report_build.py --profile nuggets      # where the time goes (cProfile)
    git worktree add /tmp/rb_before <commit>                           # then, side by side:
    .venv/bin/python benchmarks/report_build.py --baseline /tmp/rb_before

The exam (fixed seed, ``--seed``): ``--queries`` queries, each with ``--test-points`` test points and
a pool of ``--pool`` passages of 40..120 words (about 250..750 characters, words drawn from a
2,000-word vocabulary); ``--runs`` runs each rank 100 of the query's pool passages (its top-k, k = 20,
is what is scored); every (pool passage, test point) pair has a grade drawn uniformly from 0..5,
as a complete grading pass would leave it. The same exam is built twice: once with a *question*
bank (EXAM-Cover, n-EXAM and the trec_eval measures over three EXAM-Qrels variants) and once with a
*nugget* bank (the same plus nugget F, which charges each run's top-k passage texts against its
length allowance). Only the report build is timed: the exam is generated beforehand.

Prints the seconds of each repetition, the best per bank, and ``report build: <q> s question bank,
<n> s nugget bank at <R> runs x <Q> queries (CPU <q'> s, <n'> s)`` (the issue's target: 5 s or less
with a nugget bank). Wall time varies with the machine's load, CPU time less so: on a shared machine
compare CPU times. Nothing here is asserted. To measure another checkout, put it first on the path:
``PYTHONPATH=/path/to/checkout .venv/bin/python benchmarks/report_build.py``.

``--baseline PATH`` measures both side by side: the same benchmark (same sizes and repetitions) runs
once with the checkout at PATH first on the path and once with this one, each in its own process, one
after the other; their ``report build`` lines are printed together with the ratios baseline / this
tree (wall and CPU, each bank), ending with ``speed-up: <q>x question bank, <n>x nugget bank (CPU)``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from exam_harness.config.options import ExamOptions
from exam_harness.core.models import (
    ExamData,
    GraderSpec,
    Passage,
    Query,
    QueryBank,
    RankedPassage,
    Run,
    TestPoint,
    TestPointKind,
)
from exam_harness.exam.inputs import ExamInputs
from exam_harness.exam.plan import ExamPlan, make_plan
from exam_harness.grading.passes import GradingOutcome
from exam_harness.io.formats import builtin_bank_formats, builtin_run_formats
from exam_harness.report.build import SessionOutcome, build_report

RANKED = 100  # passages each run ranks per query (more than k, as real runs do)
ROOT = Path(__file__).resolve().parent.parent  # this checkout
RESULT = re.compile(r"report build: (?P<q>[\d.]+) s question bank, (?P<n>[\d.]+) s nugget bank at .* "
                    r"\(CPU (?P<qc>[\d.]+) s, (?P<nc>[\d.]+) s\)")


def synthetic_exam(
    *, runs: int, queries: int, test_points: int, pool: int, kind: TestPointKind, seed: int = 12
) -> tuple[ExamInputs, SessionOutcome]:
    """The exam described in the module docstring, with a complete set of grades."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}{'x' * rng.randrange(6)}" for i in range(2000)]
    passages: dict[str, Passage] = {}
    banks: list[QueryBank] = []
    grades: dict[tuple[str, str], int] = {}
    pools: dict[str, list[str]] = {}
    for q in range(queries):
        qid = f"q{q}"
        query = Query(id=qid, text=f"query {q}")
        points = tuple(TestPoint(id=f"{qid}/t{t}", query_id=qid, kind=kind, text=f"{kind} {t} of query {q}",
                                 weight=1.0 if t % 3 else 0.5) for t in range(test_points))
        banks.append(QueryBank(query=query, test_points=points, source="synthetic.yaml"))
        pools[qid] = []
        for p in range(pool):
            pid = f"{qid}-p{p}"
            passages[pid] = Passage(id=pid, text=" ".join(rng.choices(vocabulary, k=rng.randint(40, 120))))
            pools[qid].append(pid)
            for tp in points:
                grades[(pid, tp.id)] = rng.randrange(6)
    run_models: dict[str, Run] = {}
    for r in range(runs):
        name = f"run{r:03d}"
        rankings = {qid: [RankedPassage(passage_id=pid, rank=i + 1, score=float(RANKED - i))
                          for i, pid in enumerate(rng.sample(pids, min(RANKED, len(pids))))]
                    for qid, pids in pools.items()}
        run_models[name] = Run(name=name, rankings=rankings, source=f"{name}.run")
    inputs = ExamInputs(builtin_bank_formats(), builtin_run_formats())
    inputs._data = ExamData(runs=run_models, passages=passages)
    inputs.banks[Path("synthetic.yaml")] = banks
    outcome = GradingOutcome(grades=grades, answers=dict.fromkeys(grades, "3"), pairs=len(grades),
                             unique=len(grades), graded=len(grades))
    return inputs, SessionOutcome(grading=outcome, banks=banks)


def plan() -> ExamPlan:
    spec = GraderSpec(name="synthetic", version="1", default_min_grade=4)
    return make_plan(ExamOptions(), spec, alpha_ndcg=False)  # the pytest session's plan leaves out alpha-nDCG


def time_build(inputs: ExamInputs, outcome: SessionOutcome, repeat: int, label: str) -> tuple[float, float]:
    """The best wall and CPU seconds of ``repeat`` builds (CPU time says more on a loaded machine)."""
    best, best_cpu = float("inf"), float("inf")
    the_plan = plan()
    for attempt in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        build_report(inputs, outcome, the_plan)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        best, best_cpu = min(best, seconds), min(best_cpu, cpu)
        print(f"  {label} bank, build {attempt + 1}: {seconds:.2f} s (CPU {cpu:.2f} s)", flush=True)
    return best, best_cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--test-points", type=int, default=10, help="test points per query (default 10)")
    parser.add_argument("--pool", type=int, default=200, help="passages per query the runs rank from (default 200)")
    parser.add_argument("--repeat", type=int, default=2, help="builds per bank; the best is kept (default 2)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--profile", choices=("questions", "nuggets"), help="profile one build of this bank instead")
    parser.add_argument("--baseline", type=Path, metavar="PATH",
                        help="also measure the checkout at PATH (e.g. a git worktree of the commit before) and print "
                             "both results and their ratios")
    args = parser.parse_args(argv)
    if args.baseline is not None:
        same = ["--runs", str(args.runs), "--queries", str(args.queries), "--test-points", str(args.test_points),
                "--pool", str(args.pool), "--repeat", str(args.repeat), "--seed", str(args.seed)]
        return side_by_side(args.baseline.resolve(), same)
    sizes = {"runs": args.runs, "queries": args.queries, "test_points": args.test_points, "pool": args.pool,
             "seed": args.seed}
    if args.profile:
        inputs, outcome = synthetic_exam(kind="nugget" if args.profile == "nuggets" else "question", **sizes)
        profiler = cProfile.Profile()
        profiler.runcall(build_report, inputs, outcome, plan())
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        return 0
    best: dict[str, tuple[float, float]] = {}
    kinds: tuple[TestPointKind, ...] = ("question", "nugget")
    for kind in kinds:
        started = time.perf_counter()
        inputs, outcome = synthetic_exam(kind=kind, **sizes)
        print(f"{kind} bank: {len(outcome.grading.grades)} grades generated in {time.perf_counter() - started:.1f} s",
              flush=True)
        best[kind] = time_build(inputs, outcome, args.repeat, kind)
        del inputs, outcome
    (question, question_cpu), (nugget, nugget_cpu) = best["question"], best["nugget"]
    print(f"report build: {question:.2f} s question bank, {nugget:.2f} s nugget bank at {args.runs} runs x "
          f"{args.queries} queries (CPU {question_cpu:.2f} s, {nugget_cpu:.2f} s)")
    return 0


def measure(checkout: Path, args: list[str]) -> tuple[str, tuple[float, float, float, float]]:
    """Run this benchmark in a fresh process with ``checkout`` first on the path; its result line and
    figures (question wall, nugget wall, question CPU, nugget CPU)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])]))
    print(f"--- {checkout}", flush=True)
    done = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=False)
    print(done.stdout + done.stderr, end="", flush=True)
    found = [m for line in done.stdout.splitlines() if (m := RESULT.fullmatch(line))]
    if done.returncode or not found:
        raise SystemExit(f"the benchmark failed with {checkout} on the path (exit status {done.returncode})")
    m = found[-1]
    return m.group(0), (float(m["q"]), float(m["n"]), float(m["qc"]), float(m["nc"]))


def side_by_side(baseline: Path, args: list[str]) -> int:
    """The benchmark with the baseline checkout, then with this one; both lines and the ratios."""
    before_line, before = measure(baseline, args)
    after_line, after = measure(ROOT, args)
    ratio = [b / a if a > 0 else float("inf") for b, a in zip(before, after)]
    print(f"baseline  ({baseline}): {before_line}")
    print(f"this tree ({ROOT}): {after_line}")
    print(f"ratio baseline / this tree: question bank {ratio[0]:.2f}x wall, {ratio[2]:.2f}x CPU; "
          f"nugget bank {ratio[1]:.2f}x wall, {ratio[3]:.2f}x CPU")
    print(f"speed-up: {ratio[2]:.2f}x question bank, {ratio[3]:.2f}x nugget bank (CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
