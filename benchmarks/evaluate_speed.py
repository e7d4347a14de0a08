"""Wall-clock time of ``exam-harness evaluate`` beside the reference Workbench's Phase 4, on TREC DL 2019.

Both sides run as a user runs them (a fresh process for every command, wall clock around the
subprocesses), alternating: exam-harness, reference, exam-harness, reference, ... Each repetition
is printed (wall and CPU of the child processes), then the medians, and last the line

    evaluate: exam-harness <a> s, reference <b> s median wall (<ratio>x)

exam-harness side, one command with the defaults plus the official leaderboard and a JSON report:
``exam-harness evaluate dl19-graded-...jsonl.gz --official official-leaderboard.json --min-grade 3 4 5
--json OUT`` (EXAM-Cover, n-EXAM, every default trec measure under three label variants, α-nDCG,
bootstrap intervals, rank correlations, agreement tables with κ).

Reference side, the three commands of the Workbench README's Phase 4 / "Additional Analyses" for
the same minimum grades (``python -m exam_pp.exam_post_pipeline``, i.e. ``autograder-analyze``):
the Cover leaderboard with its correlation, the exported qrels with the trec_eval leaderboard (P@20,
its documented default, named explicitly; one trec_eval process per run file and level) and the inter-annotator tables.
The reference computes less than exam-harness does (one trec_eval measure, no n-EXAM label
variants, no intervals), so the ratio understates the difference in work.

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
needs are written (untimed) from the rankings recorded in the paragraph file.
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
    base = [str(ref.python), "-m", "exam_pp.exam_post_pipeline", str(data / PARAGRAPHS),
            "--prompt-class", PROMPT_CLASS, "--model", MODEL, "--use-ratings"]
    official = ["--official-leaderboard", str(data / OFFICIAL)]
    grades = ["--min-self-rating", *MIN_GRADES]
    return [
        # Autograde Cover leaderboard (with its rank correlation), one table per minimum grade
        [*base, *official, *grades, "--leaderboard-out", str(out / "cover.tsv")],
        # Autograde Qrels: export the qrels, trec_eval every run file at each minimum grade
        # (P@20 named as a list: its default, the string "P.20", is read by its first letter, so trec_eval
        # would compute every P cutoff and its table keep the last, P@1000)
        [*base, *official, *grades, "--min-relevant-judgment", "2", "-q", str(out / "exam.qrels"),
         "--run-dir", str(run_dir), "--qrel-leaderboard-out", str(out / "qrels.tsv"), "--trec-eval-metric", "P.20"],
        # inter-annotator agreement of the self-ratings with the TREC judgments (relevant: >= 2)
        [*base, "--min-relevant-judgment", "2", "--inter-annotator-out", str(out / "inter-annotator.tex")],
    ]


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="Timed repetitions of each side (default: 5).")
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data", help="Published data folder.")
    parser.add_argument("--reference-dir", type=Path, help="A checkout of rubric-grading-workbench (outside this project).")
    parser.add_argument("--reference-python", type=Path,
                        help="The python of the reference's venv (default: REFERENCE_DIR/.venv/bin/python).")
    parser.add_argument("--trec-eval", type=Path, help="The trec_eval binary (default: trec_eval on PATH).")
    parser.add_argument("--baseline-dir", type=Path,
                        help="Also time another exam-harness checkout (e.g. `git worktree add /tmp/base main`) in the "
                        "same alternation, run with PYTHONPATH=DIR: before/after figures under the same load.")
    args = parser.parse_args()
    data = (args.data / "dl19").resolve()
    if not (data / PARAGRAPHS).is_file():
        print(f"no DL19 data under {data}; pass --data", file=sys.stderr)
        return 2
    ref, why = find_reference(args)
    if ref is None:
        print(f"reference skipped: {why}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "harness").mkdir()
        harness = harness_commands(data, scratch / "harness")
        print("exam-harness:", " ".join(harness[0]))
        reference: list[list[str]] = []
        env: dict[str, str] | None = None
        if ref is not None:
            run_dir, ref_out = scratch / "runs", scratch / "reference"
            run_dir.mkdir()
            ref_out.mkdir()
            print(f"reference: {ref.source} with {ref.python}, trec_eval {ref.trec_eval}; "
                  f"{write_run_files(data / PARAGRAPHS, run_dir)} run files written to {run_dir}")
            reference = reference_commands(ref, data, ref_out, run_dir)
            env = reference_env(ref.source, ref.trec_eval)
            for cmd in reference:
                print("  ", " ".join(cmd))
        # as installed copies run: with compiled bytecode (a first, untimed run writes it; the
        # reference's import check above wrote its own)
        harness_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        baseline_env = None
        if args.baseline_dir is not None:  # another exam-harness checkout, first on the path
            baseline_env = {**harness_env, "PYTHONPATH": str(args.baseline_dir.resolve())}
            print(f"baseline: the same command with PYTHONPATH={args.baseline_dir.resolve()}")
            timed(harness, env=baseline_env)
        timed(harness, env=harness_env)
        ours: list[Timing] = []
        theirs: list[Timing] = []
        baseline: list[Timing] = []
        for i in range(args.repeat):
            ours.append(timed(harness, env=harness_env))
            line = f"  repetition {i + 1}: exam-harness {ours[-1].wall:6.2f} s wall {ours[-1].cpu:6.2f} s CPU"
            if baseline_env is not None:
                baseline.append(timed(harness, env=baseline_env))
                line += f" | baseline {baseline[-1].wall:6.2f} s wall {baseline[-1].cpu:6.2f} s CPU"
            if reference:
                theirs.append(timed(reference, env=env, cwd=scratch / "reference"))
                line += f" | reference {theirs[-1].wall:6.2f} s wall {theirs[-1].cpu:6.2f} s CPU"
            print(f"{line}  (load {load()})", flush=True)
    a, a_cpu = statistics.median(t.wall for t in ours), statistics.median(t.cpu for t in ours)
    print(f"exam-harness evaluate: median {a:.2f} s wall, {a_cpu:.2f} s CPU; best {min(t.wall for t in ours):.2f} s wall")
    if baseline:
        c, c_cpu = statistics.median(t.wall for t in baseline), statistics.median(t.cpu for t in baseline)
        print(f"baseline evaluate: median {c:.2f} s wall, {c_cpu:.2f} s CPU"
              + (f"; reference / baseline: {statistics.median(t.wall for t in theirs) / c:.1f}x wall" if theirs else ""))
    if not theirs:
        print(f"evaluate: exam-harness {a:.2f} s median wall (reference skipped, see the first line)")
        return 0
    b, b_cpu = statistics.median(t.wall for t in theirs), statistics.median(t.cpu for t in theirs)
    print(f"reference Phase 4: median {b:.2f} s wall, {b_cpu:.2f} s CPU; best {min(t.wall for t in theirs):.2f} s wall")
    print(f"CPU ratio of medians: {b_cpu / a_cpu:.1f}x; load average after: {load()}")
    print(f"evaluate: exam-harness {a:.2f} s, reference {b:.2f} s median wall ({b / a:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
