"""``exam-harness evaluate`` on TREC DL 2019: are this checkout's outputs byte-identical to another's?

    .venv/bin/python benchmarks/evaluate_outputs.py --baseline-dir /tmp/base      # ~1 minute
    # /tmp/base: another checkout, e.g. `git worktree add /tmp/base main` or `git archive main | tar -x -C /tmp/base`

The speed work on evaluate (issue 38: columnar reading, vectorised statistics, lazy imports) must not change
one byte of what it writes or prints. Each case below runs ``exam-harness evaluate`` on the published DL19
paragraph file once with ``PYTHONPATH`` set to the baseline checkout and once with this one, each in a fresh
folder and with the same relative output paths, and compares every file written (``--json``,
``--report-dir``, ``--markdown``, ``--html``, ``--qrels-dir``), the terminal output (stdout, stderr) and the
exit status. Two things differ between any two runs and are made equal first: the document's ``created``
time stamp, the temporary names in the report set's manifest (``.exam-set-new-<pid>-...``) and the run's
folder where a line names an output by its absolute path.

Cases: the benchmark's command (benchmarks/evaluate_speed.py: ``--official``, ``--min-grade 3 4 5``,
``--json``), the same with the report set, markdown, HTML and qrels files, and one with ``--min-answers``,
``--baseline`` and ``--brief``. Prints one line per case and file that differs (with the first differing
line) and ends with ``outputs: identical (<n> cases, <m> files)`` or ``outputs: <k> differences``; exit
status 0 when identical.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARAGRAPHS = "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
OFFICIAL = "official-leaderboard.json"


def cases(data: Path) -> dict[str, list[str]]:
    paragraphs, official = str(data / PARAGRAPHS), str(data / OFFICIAL)
    base = ["evaluate", paragraphs, "--official", official, "--min-grade", "3", "4", "5"]
    return {
        "benchmark": [*base, "--json", "out/leaderboards.json"],
        "every-writer": [*base, "--json", "out/leaderboards.json", "--report-dir", "out/reports", "--markdown",
                         "out/summary.md", "--html", "out/html", "--qrels-dir", "out/qrels"],
        "agreement-baseline-brief": [*base, "--min-answers", "--baseline", "ICT-BERT2", "--json", "out/lb.json"],
        "brief": [*base, "--brief"],
    }


NORMALISE = (
    (re.compile(rb'"created": "[^"]*"'), b'"created": "<time>"'),
    (re.compile(rb"\.exam-set-new-\d+-"), b".exam-set-new-<pid>-"),
)


def normalised(data: bytes) -> bytes:
    for pattern, replacement in NORMALISE:
        data = pattern.sub(replacement, data)
    return data


def run(checkout: Path, args: list[str], folder: Path) -> dict[str, bytes]:
    """Every output of one run: the files under ``folder`` by relative path, stdout, stderr, the exit status."""
    folder.mkdir(parents=True)
    (folder / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GITHUB_STEP_SUMMARY")}
    env.update(PYTHONPATH=str(checkout), COLUMNS="120", NO_COLOR="1")
    done = subprocess.run([sys.executable, "-c", "import sys; from exam_harness.cli import main; sys.exit(main())",
                           *args], cwd=folder, env=env, capture_output=True, check=False)
    outputs = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    outputs.update({"<stdout>": done.stdout, "<stderr>": done.stderr, "<exit status>": str(done.returncode).encode()})
    here = str(folder).encode()
    return {name: normalised(data).replace(here, b"<folder>") for name, data in outputs.items()}


def first_difference(a: bytes, b: bytes) -> str:
    left, right = a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines()
    for line in difflib.unified_diff(left, right, "baseline", "this", n=0, lineterm=""):
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
            return line[:200]
    return "(the same lines, other bytes: line ends or a trailing newline)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-dir", type=Path, required=True, help="Another exam-harness checkout.")
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data", help="Published data folder.")
    args = parser.parse_args()
    data = (args.data / "dl19").resolve()
    if not (data / PARAGRAPHS).is_file():
        print(f"no DL19 data under {data}; pass --data", file=sys.stderr)
        return 2
    differences = files = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in cases(data).items():
            baseline = run(args.baseline_dir.resolve(), command, Path(tmp) / name / "baseline")
            this = run(ROOT, command, Path(tmp) / name / "this")
            files += len(this)
            for output in sorted(set(baseline) | set(this)):
                if output not in baseline or output not in this:
                    differences += 1
                    print(f"{name}: {output} written by {'this checkout' if output in this else 'the baseline'} only")
                elif baseline[output] != this[output]:
                    differences += 1
                    print(f"{name}: {output} differs: {first_difference(baseline[output], this[output])}")
            print(f"{name}: {len(this)} outputs compared (exit status {this['<exit status>'].decode()})", flush=True)
    if differences:
        print(f"outputs: {differences} differences")
        return 1
    print(f"outputs: identical ({len(cases(data))} cases, {files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
