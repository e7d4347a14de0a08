"""How the embedding grader's cut points relate to human judgments on TREC DL 2019.

For every judged DL19 passage, the best cosine similarity over its query's generated questions is
compared with the NIST relevance level (0..3). Prints similarity quantiles per level, the grade
histogram the current cut points give, and Cohen's kappa of "grade >= tau" against "judged >= 2".

    python benchmarks/calibrate_embedding.py [--data ../shared/data] [--queries N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from exam_harness.graders.base import GraderConfig
from exam_harness.graders.embedding import EmbeddingGrader
from exam_harness.io import load_bank, load_runs
from exam_harness.metrics import binarised, cohen_kappa, grade_judgment_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    parser.add_argument("--queries", type=int, default=0, help="Use only the first N queries (default: all).")
    parser.add_argument("--span", choices=("passage", "sentence"), default="sentence",
                        help="Compare with the whole passage or its best sentence (default: sentence).")
    parser.add_argument("--kind", choices=("question", "nugget"), default="question",
                        help="Calibrate on the generated question bank or the nugget bank (default: question).")
    args = parser.parse_args()
    dl19 = args.data / "dl19"
    if not dl19.is_dir():
        print(f"skipped: {dl19} is absent", file=sys.stderr)
        return 0
    loaded = load_runs([dl19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"]).data
    bank_file = "dl19-nuggets.jsonl.gz" if args.kind == "nugget" else "dl19-genq-questions-v1.jsonl.gz"
    banks = {b.query.id: b for b in load_bank(dl19 / bank_file)}
    qids = sorted(loaded.judgments)[: args.queries or None]
    grader = EmbeddingGrader(GraderConfig(options={"span": args.span}))
    started = time.perf_counter()
    best: dict[tuple[str, str], float] = {}
    qids = [qid for qid in qids if qid in banks]
    for qid in qids:
        questions = [tp.text for tp in banks[qid].test_points]
        pids = sorted(loaded.judgments[qid])
        left = [q for _ in pids for q in questions]
        right = [loaded.passages[pid].text for pid in pids for _ in questions]
        sims = np.array(grader.similarities(left, right)).reshape(len(pids), len(questions))
        for pid, row in zip(pids, sims):
            best[(qid, pid)] = float(row.max())
    seconds = time.perf_counter() - started
    print(f"kind={args.kind} span={args.span}: {len(best)} judged passages of {len(qids)} queries, embedded in {seconds:.1f}s")
    print("best cosine over the query's questions, by NIST level:")
    for level in range(4):
        values = np.array([s for (qid, pid), s in best.items() if loaded.judgments[qid][pid] == level])
        if len(values):
            qs = np.quantile(values, [0.1, 0.25, 0.5, 0.75, 0.9])
            print(f"  level {level}: n={len(values):5d}  q10..q90 = " + " ".join(f"{v:.3f}" for v in qs))
    labels = {key: grader.grade_of(s) for key, s in best.items()}
    table = grade_judgment_table(labels, loaded.judgments)
    print(f"cut points {grader.cut_points}: grade histogram", {g: sum(row.values()) for g, row in sorted(table.items())})
    for tau in range(1, 6):
        kappa = cohen_kappa(binarised(table, tau, 2))
        print(f"  kappa(max grade >= {tau} vs judged >= 2) = {kappa:.3f}")
    print("kappa of 'best cosine >= t' vs judged >= 2, by threshold t:")
    judged = {key: loaded.judgments[key[0]][key[1]] >= 2 for key in best}
    for t in np.arange(0.40, 0.80, 0.025):
        cut = {key: int(s >= t) for key, s in best.items()}
        cells = {(a, b): sum(1 for key in best if cut[key] == a and judged[key] == b) for a in (0, 1) for b in (False, True)}
        table2 = {1: {1: cells[(1, True)], 0: cells[(1, False)]}, 0: {1: cells[(0, True)], 0: cells[(0, False)]}}
        print(f"  t={t:.3f}: kappa={cohen_kappa(table2):.3f}  positive={sum(cut.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
