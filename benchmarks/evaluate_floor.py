"""The floor under ``exam-harness evaluate`` on TREC DL 2019: what any Python program that reads the same file
with the same libraries pays before it computes anything, beside the command itself.

Each way is a fresh process (CPU = user + system of the child, timed as ``benchmarks/evaluate_speed.py`` times
its sides), alternating, ``--repeat`` times (medians):

* **interpreter**: ``python -c pass``;
* **libraries**: importing the third-party packages evaluate imports (numpy, pydantic, rich's console and table,
  pluggy, pytrec_eval), none of this project's modules;
* **libraries + reading**: the same imports, then the paragraph file gunzipped and every line parsed by
  pydantic-core's JSON parser (what exam-harness's reader uses; no check, no object built from the values);
* **libraries + reading + trec_eval**: the same, then what evaluate must ask pytrec_eval (the C extension the
  project scores trec measures with) at the least: each run's rankings and each passage's self-ratings gathered
  from the parsed lines into plain dicts, qrels of the three label variants at each tau (max-grade >= tau, the
  count of test points rated >= tau, at least 2 of them) and the six default trec measures of every run under each
  of those 9 qrels (no EXAM-Cover, no alpha-nDCG, no statistics, no tables, no document);
* **evaluate**: the command ``benchmarks/evaluate_speed.py`` times (the defaults, the official leaderboard,
  tau 3 4 5 and a JSON report).

The last lines put the figures beside the budget a ratio to the reference leaves (``--reference-cpu``: the
reference's one-process CPU seconds from ``benchmarks/evaluate_speed.py``, measured on the same machine)::

    floor: libraries + reading <f> s CPU of evaluate's <e> s; <x>x the reference needs evaluate at <b> s
    floor with trec_eval's part: <t> s CPU; <x>x leaves <r> s beyond it for the rest of evaluate (today <d> s)

Nothing is asserted; the figures vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# the command, its files and the timer are evaluate_speed.py's, so both scripts time the same thing the same way
from evaluate_speed import PARAGRAPHS, ROOT, harness_commands, load, timed

LIBRARIES = "import numpy, pydantic, pluggy, pytrec_eval, rich.console, rich.table"
READING = """
import gzip, sys
from pydantic_core import from_json
with gzip.open(sys.argv[1], "rb") as fh:
    for line in fh:
        if line.strip():
            from_json(line)
"""

TREC = READING.replace("            from_json(line)", """            qid, paragraphs = from_json(line)
            for para in paragraphs:
                pid = para["paragraph_id"]
                for ranking in para["paragraph_data"]["rankings"]:
                    runs.setdefault(ranking["method"], {}).setdefault(qid, {})[pid] = float(ranking["score"])
                for entry in para["exam_grades"]:
                    ratings = [r["self_rating"] for r in entry.get("self_ratings") or ()]
                    graded.setdefault(qid, {})[pid] = ratings""").replace("with gzip", "runs, graded = {}, {}\nwith gzip") + """
labels = {
    "max-grade": lambda ratings, tau: int(max(ratings, default=0) >= tau),
    "count": lambda ratings, tau: sum(r >= tau for r in ratings),
    "at-least-m": lambda ratings, tau: int(sum(r >= tau for r in ratings) >= 2),
}
measures = {"P_20", "map", "ndcg_cut_10", "ndcg_cut_20", "Rprec", "recip_rank"}
for tau in (3, 4, 5):
    for label in labels.values():
        qrels = {q: {p: label(ratings, tau) for p, ratings in by_pid.items()} for q, by_pid in graded.items()}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1)
        scores = [evaluator.evaluate(run) for run in runs.values()]
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="alternating repetitions of each way (default 5)")
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data", help="published data folder")
    parser.add_argument("--reference-cpu", type=float,
                        help="the reference's one-process CPU seconds (benchmarks/evaluate_speed.py, same machine)")
    parser.add_argument("--ratio", type=float, default=20.0, help="the ratio whose budget is shown (default 20)")
    args = parser.parse_args(argv)
    data = args.data / "dl19"
    if not (data / PARAGRAPHS).is_file():
        print(f"no DL19 data under {args.data}; pass --data", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # bytecode, as installed
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        ways = {
            "interpreter": [[py, "-c", "pass"]],
            "libraries": [[py, "-c", LIBRARIES]],
            "libraries + reading": [[py, "-c", LIBRARIES + "\n" + READING, str(data / PARAGRAPHS)]],
            "libraries + reading + trec_eval": [[py, "-c", LIBRARIES + "\n" + TREC, str(data / PARAGRAPHS)]],
            "evaluate": harness_commands(data, Path(tmp)),
        }
        for commands in ways.values():  # untimed: bytecode and the page cache
            timed(commands, env)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for rep in range(max(1, args.repeat)):
            for name, commands in ways.items():
                times[name].append(timed(commands, env).cpu)
            row = " | ".join(f"{name} {values[-1]:.2f} s" for name, values in times.items())
            print(f"  repetition {rep + 1}: {row}  (load {load()})")
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, value in med.items():
        print(f"{name}: median {value:.3f} s CPU")
    floor, evaluate = med["libraries + reading"], med["evaluate"]
    print(f"beyond the floor evaluate spends {evaluate - floor:.3f} s CPU ({(evaluate - floor) / evaluate:.0%}): "
          "its own modules, the checks, the grades, the measures, the tables and the report")
    line = f"floor: libraries + reading {floor:.2f} s CPU of evaluate's {evaluate:.2f} s"
    if args.reference_cpu:
        budget = args.reference_cpu / args.ratio
        line += (f"; {args.ratio:g}x the reference needs evaluate at {budget:.2f} s, {budget - floor:.2f} s beyond "
                 f"the floor (now {args.reference_cpu / evaluate:.1f}x)")
    print(line)
    trec = med["libraries + reading + trec_eval"]
    line = f"floor with trec_eval's part: {trec:.2f} s CPU"
    if args.reference_cpu:
        line += (f"; {args.ratio:g}x leaves {args.reference_cpu / args.ratio - trec:.2f} s beyond it for the rest of "
                 f"evaluate (today {evaluate - trec:.2f} s)")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
