"""The default grader's speed, this checkout against a previous version's, side by side on DL19 pairs.

    python benchmarks/default_grader_speed.py [--pairs 3000] [--repeat 2] [--baseline-ref 43989ce]

Version 4 of the embedding grader also encodes each passage's sentence windows (about one more passage
length of text) and computes word overlap, support and a reason per pair; the target is at most 1.5x
the time of version 3 (whole-passage cosine only). The baseline is the code of ``--baseline-ref``
(default: the last commit with version 3), unpacked by ``git archive`` into a temporary folder.

Each way grades the same first ``--pairs`` pool pairs (DL19 runs' top 20 x the generated questions, as
benchmarks/embedding_speed.py pools them) in a fresh process (model loaded and warmed up before the
clock starts) with a cold SQLite grade cache; the two alternate ``--repeat`` times and the best time of
each is kept. Last line: ``default grader: <r>x the time of <ref>``. Timings vary with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from embedding_speed import dl19_requests
from exam_harness.grading.cache import GradeCache
from exam_harness.graders.base import GraderConfig
from exam_harness.graders.embedding import EmbeddingGrader
from exam_harness.grading.passes import run_grading_pass

requests = dl19_requests(Path(sys.argv[3]), int(sys.argv[4]))
grader = EmbeddingGrader(GraderConfig(device="cpu"))
grader._load().encode(["warm up"], show_progress_bar=False)
with tempfile.TemporaryDirectory() as folder:
    cache = GradeCache(Path(folder) / "grades.sqlite")
    started = time.perf_counter()
    outcome = run_grading_pass(grader, requests, cache, chunk_size=256)
    seconds = time.perf_counter() - started
    cache.close()
assert outcome.graded == outcome.unique and not outcome.failures
import exam_harness.graders.embedding as e
print(json.dumps({"seconds": seconds, "pairs": len(requests), "version": e.VERSION}))
"""


def baseline_tree(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "exam_harness"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def run_once(code_root: Path, data: Path, pairs: int) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, "-c", CHILD, str(code_root), str(ROOT / "benchmarks"), str(data),
                           str(pairs)], check=True, capture_output=True, text=True, env=env)
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline-ref", default="43989ce")
    args = parser.parse_args()
    if not (args.data / "dl19").is_dir():
        print(f"skipped: {args.data / 'dl19'} is absent", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        old_root = baseline_tree(args.baseline_ref, Path(folder))
        best: dict[str, float] = {}
        versions: dict[str, str] = {}
        for attempt in range(args.repeat):
            for name, root in (("baseline", old_root), ("this checkout", ROOT)):
                result = run_once(root, args.data, args.pairs)
                seconds = float(result["seconds"])
                best[name] = min(best.get(name, seconds), seconds)
                versions[name] = str(result["version"])
                print(f"  run {attempt + 1} {name} (grader version {result['version']}): {seconds:.2f} s, "
                      f"{int(result['pairs']) / seconds:.0f} pairs/s", flush=True)
    ratio = best["this checkout"] / best["baseline"]
    print(f"best: baseline {best['baseline']:.2f} s, this checkout {best['this checkout']:.2f} s "
          f"({args.pairs} pairs)")
    print(f"default grader: {ratio:.2f}x the time of {args.baseline_ref} (version {versions['baseline']} -> "
          f"{versions['this checkout']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
