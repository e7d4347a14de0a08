"""CPU and wall-clock time of ``exam-harness evaluate`` beside the reference Workbench's Phase 4, on TREC DL 2019.

Both sides run as a user runs them (a fresh process for every command, CPU = user + system of the child
processes, trec_eval's included, wall clock around the subprocesses), alternating: exam-harness, reference
as one process, reference as three processes, exam-harness, ... Each repetition is printed, then the
medians, the ratios of medians in both framings side by side, and last the line

    evaluate: exam-harness <c> s CPU, <w> s wall; reference one process <x>x CPU, <y>x wall; three processes <x>x CPU, <y>x wall

exam-harness side, one command with the defaults plus the official leaderboard and a JSON report:
``exam-harness evaluate dl19-graded-...jsonl.gz --official official-leaderboard.json --min-grade 3 4 5
--json OUT`` (EXAM-Cover, n-EXAM, every default trec measure under three label variants, alpha-nDCG,
bootstrap intervals, rank correlations, agreement tables with kappa).

Reference side, the Workbench README's Phase 4 / "Additional Analyses" for the same minimum grades
(``python -m exam_pp.exam_post_pipeline``, i.e. ``autograder-analyze``): the Cover leaderboard with its
correlation (W1), the exported qrels with the trec_eval leaderboard (W2: P@20, its documented default,
named explicitly; one trec_eval process per run file and level) and the inter-annotator tables (W3).
Two framings, both timed:

* **one process**: W1+W2+W3's options in one call, as a user who wants all three runs it (the fair
  comparison with exam-harness's one command; its output files are checked, untimed, to be
  byte-identical to the three-process run's);
* **three processes**: W1, W2 and W3 one after another, each paying the reference's imports again.

The reference computes less than exam-harness does (one trec_eval measure, no n-EXAM label variants, no
intervals), so the ratios understate the difference in work.

The reference is not part of this project; set it up once, outside the project folder::

    # its source (TREMA-UNH/rubric-grading-workbench on GitHub), e.g. unpacked into /tmp/refwb
    git clone https://github.com/TREMA-UNH/rubric-grading-workbench /tmp/refwb
    python3.11 -m venv /tmp/refwb-venv
    # its requirements.txt, with torch pinned to the CPU build this project's lock uses
    sed 's/^torch==.*/torch==2.13.0/' /tmp/refwb/requirements.txt > /tmp/refwb-req.txt
    /tmp/refwb-venv/bin/pip install -r /tmp/refwb-req.txt backports-asyncio-queues  # the latter: its pyproject
    # trec_eval on PATH or given with --trec-eval (usnistgov/trec_eval on GitHub: `make`)

    .venv/bin/python benchmarks/evaluate_speed.py --reference-dir /tmp/refwb \\
        --reference-python /tmp/refwb-venv/bin/python --trec-eval /tmp/trec_eval/trec_eval [--repeat 5]

Without ``--reference-dir`` (or when it, its python or trec_eval is missing) the reference is
skipped with a message and only exam-harness is timed. The run files the reference's trec_eval
needs are written (untimed) from the rankings recorded in the paragraph file. ``--baseline-dir``
times another exam-harness checkout in the same alternation (before/after figures under the same load).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARAGRAPHS = "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
OFFICIAL = "official-leaderboard.json"
MIN_GRADES = ("3", "4", "5")
# the grading run recorded in the DL19 paragraph file (the reference filters grades by these)
PROMPT_CLASS = "QuestionSelfRatedUnanswerablePromptWithChoices"
MODEL = "google/flan-t5-large"


@dataclass(frozen=True)
class Reference:
    """A checkout of the reference, the python of its venv and a trec_eval binary."""

    source: Path
    python: Path
    trec_eval: Path


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def harness_commands(data: Path, out: Path) -> list[list[str]]:
    exe = shutil.which("exam-harness", path=str(Path(sys.executable).parent)) or "exam-harness"
    return [[exe, "evaluate", str(data / PARAGRAPHS), "--official", str(data / OFFICIAL),
             "--min-grade", *MIN_GRADES, "--json", str(out / "leaderboards.json")]]


def reference_commands(ref: Reference, data: Path, out: Path, run_dir: Path) -> list[list[str]]:
    """The reference's three commands (W1, W2, W3)."""
    base = [str(ref.python), "-m", "exam_pp.exam_post_pipeline", str(data / PARAGRAPHS),
            "--prompt-class", PROMPT_CLASS, "--model", MODEL, "--use-ratings"]
    official = ["--official-leaderboard", str(data / OFFICIAL)]
    grades = ["--min-self-rating", *MIN_GRADES]
    return [
        # W1: Autograde Cover leaderboard (with its rank correlation), one table per minimum grade
        [*base, *official, *grades, "--leaderboard-out", str(out / "cover.tsv")],
        # W2: Autograde Qrels: export the qrels, trec_eval every run file at each minimum grade
        # (P@20 named as a list: its default, the string "P.20", is read by its first letter, so trec_eval
        # would compute every P cutoff and its table keep the last, P@1000)
        [*base, *official, *grades, "--min-relevant-judgment", "2", "-q", str(out / "exam.qrels"),
         "--run-dir", str(run_dir), "--qrel-leaderboard-out", str(out / "qrels.tsv"), "--trec-eval-metric", "P.20"],
        # W3: inter-annotator agreement of the self-ratings with the TREC judgments (relevant: >= 2)
        [*base, "--min-relevant-judgment", "2", "--inter-annotator-out", str(out / "inter-annotator.tex")],
    ]


def reference_one_process(ref: Reference, data: Path, out: Path, run_dir: Path) -> list[list[str]]:
    """W1+W2+W3's options in one call (--min-relevant-judgment is W2's and W3's; W1's table ignores it)."""
    w1, w2, w3 = reference_commands(ref, data, out, run_dir)
    base = w1[: w1.index("--official-leaderboard")]
    return [[*base, *w2[len(base):], *w1[w1.index("--leaderboard-out"):], *w3[w3.index("--inter-annotator-out"):]]]


def same_outputs(one: Path, three: Path) -> str:
    """Why the one-process reference's files are not those of the three-process run ('' when byte-identical)."""
    names = sorted(p.name for p in three.iterdir())
    if names != sorted(p.name for p in one.iterdir()):
        return f"files {sorted(p.name for p in one.iterdir())} vs {names}"
    differ = [name for name in names if (one / name).read_bytes() != (three / name).read_bytes()]
    return f"{', '.join(differ)} differ" if differ else ""


def timed(commands: list[list[str]], env: dict[str, str] | None = None, cwd: Path | None = None) -> Timing:
    """Wall clock and CPU (user + system of the children) of the commands run one after another."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for cmd in commands:
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False,
                              env=env, cwd=cwd)
        if done.returncode != 0:
            raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-4000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timing(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def find_reference(args: argparse.Namespace) -> tuple[Reference | None, str]:
    """The reference set-up the options name, or why it is skipped."""
    if args.reference_dir is None:
        return None, "no --reference-dir given"
    source = args.reference_dir.resolve()
    if not (source / "exam_pp" / "exam_post_pipeline.py").is_file():
        return None, f"{source} is not a checkout of rubric-grading-workbench (no exam_pp/exam_post_pipeline.py)"
    python = args.reference_python or source / ".venv" / "bin" / "python"
    if not Path(python).is_file():
        return None, f"no reference python at {python}; pass --reference-python (the venv with its requirements)"
    trec_eval = args.trec_eval or shutil.which("trec_eval")
    if trec_eval is None or not Path(trec_eval).is_file():
        return None, "no trec_eval binary (the reference's qrels leaderboard runs it); pass --trec-eval"
    check = subprocess.run([str(python), "-c", "import exam_pp.exam_post_pipeline"], cwd=source,
                           capture_output=True, text=True, check=False, env=reference_env(source, Path(trec_eval)))
    if check.returncode != 0:
        return None, f"the reference does not import with {python}:\n{check.stderr[-2000:]}"
    return Reference(source, Path(python), Path(trec_eval).resolve()), ""


def reference_env(source: Path, trec_eval: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(source)  # run from the checkout, as `python -m exam_pp...` in its README
    env["PATH"] = f"{trec_eval.resolve().parent}{os.pathsep}{env.get('PATH', '')}"  # its shell loop calls `trec_eval`
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def write_run_files(paragraphs: Path, run_dir: Path) -> int:
    """One TREC run file per run recorded in the paragraph file (``<run>.run``, as the reference's
    ``--run-dir`` expects): the recorded rank and score of every ranked passage."""
    from exam_harness.io import load_runs

    runs = load_runs([paragraphs]).data.runs
    for name, run in sorted(runs.items()):
        lines = [f"{q} Q0 {r.passage_id} {r.rank} {r.score:.6f} {name}"
                 for q, ranked in sorted(run.rankings.items()) for r in ranked]
        (run_dir / f"{name}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(runs)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def median(timings: list[Timing]) -> Timing:
    return Timing(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="Timed repetitions of each side (default: 5, at least 3).")
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data", help="Published data folder.")
    parser.add_argument("--reference-dir", type=Path, help="A checkout of rubric-grading-workbench (outside this project).")
    parser.add_argument("--reference-python", type=Path,
                        help="The python of the reference's venv (default: REFERENCE_DIR/.venv/bin/python).")
    parser.add_argument("--trec-eval", type=Path, help="The trec_eval binary (default: trec_eval on PATH).")
    parser.add_argument("--baseline-dir", type=Path,
                        help="Also time another exam-harness checkout (e.g. `git worktree add /tmp/base main`) in the "
                        "same alternation, run with PYTHONPATH=DIR: before/after figures under the same load.")
    args = parser.parse_args()
    if args.repeat < 3:
        parser.error("--repeat takes at least 3 (ratios of medians over alternating pairs)")
    data = (args.data / "dl19").resolve()
    if not (data / PARAGRAPHS).is_file():
        print(f"no DL19 data under {data}; pass --data", file=sys.stderr)
        return 2
    ref, why = find_reference(args)
    if ref is None:
        print(f"reference skipped: {why}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load()}")
    sides: dict[str, list[Timing]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "harness").mkdir()
        harness = harness_commands(data, scratch / "harness")
        print("exam-harness:", " ".join(harness[0]))
        # as installed copies run: with compiled bytecode (a first, untimed run writes it; the
        # reference's import check above wrote its own)
        harness_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        plan: dict[str, tuple[list[list[str]], dict[str, str] | None, Path | None]] = {
            "exam-harness": (harness, harness_env, None)}
        if args.baseline_dir is not None:  # another exam-harness checkout, first on the path
            plan["baseline"] = (harness, {**harness_env, "PYTHONPATH": str(args.baseline_dir.resolve())}, None)
            print(f"baseline: the same command with PYTHONPATH={args.baseline_dir.resolve()}")
        if ref is not None:
            run_dir = scratch / "runs"
            run_dir.mkdir()
            print(f"reference: {ref.source} with {ref.python}, trec_eval {ref.trec_eval}; "
                  f"{write_run_files(data / PARAGRAPHS, run_dir)} run files written to {run_dir}")
            ref_env = reference_env(ref.source, ref.trec_eval)
            for name, framing in (("reference one process", reference_one_process),
                                  ("reference three processes", reference_commands)):
                out = scratch / name.replace(" ", "-")
                out.mkdir()
                plan[name] = (framing(ref, data, out, run_dir), ref_env, out)
                print(f"{name}:")
                for cmd in plan[name][0]:
                    print("  ", " ".join(cmd))
        for commands, env, cwd in plan.values():  # untimed: bytecode, page cache, the outputs to compare
            timed(commands, env=env, cwd=cwd)
        if ref is not None:
            differ = same_outputs(plan["reference one process"][2], plan["reference three processes"][2])  # type: ignore[arg-type]
            print("reference outputs: one process = three processes, byte for byte" if not differ
                  else f"reference outputs: one process differs from three processes: {differ}")
        for i in range(args.repeat):
            line = f"  repetition {i + 1}:"
            for name, (commands, env, cwd) in plan.items():
                sides.setdefault(name, []).append(timed(commands, env=env, cwd=cwd))
                line += f" | {name} {sides[name][-1].wall:6.2f} s wall {sides[name][-1].cpu:6.2f} s CPU"
            print(f"{line}  (load {load()})", flush=True)
    ours = median(sides["exam-harness"])
    for name, timings in sides.items():
        m = median(timings)
        print(f"{name}: median {m.wall:.2f} s wall, {m.cpu:.2f} s CPU; best {min(t.wall for t in timings):.2f} s wall, "
              f"{min(t.cpu for t in timings):.2f} s CPU")
    head = f"evaluate: exam-harness {ours.cpu:.2f} s CPU, {ours.wall:.2f} s wall"
    if "baseline" in sides:
        base = median(sides["baseline"])
        print(f"exam-harness / baseline: {base.cpu / ours.cpu:.2f}x less CPU, {base.wall / ours.wall:.2f}x less wall")
    if ref is None:
        print(f"{head} (reference skipped, see the first line)")
        return 0
    for name in ("reference one process", "reference three processes"):
        pairs = sorted(r.cpu / h.cpu for r, h in zip(sides[name], sides["exam-harness"]))
        print(f"{name} / exam-harness, per alternating pair: {', '.join(f'{x:.1f}x' for x in pairs)} CPU")
    one, three = median(sides["reference one process"]), median(sides["reference three processes"])
    print(f"{head}; reference one process {one.cpu / ours.cpu:.1f}x CPU, {one.wall / ours.wall:.1f}x wall; "
          f"three processes {three.cpu / ours.cpu:.1f}x CPU, {three.wall / ours.wall:.1f}x wall (load {load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
