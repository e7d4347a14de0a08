"""Derive the embedding grader's cut points from TREC DL 2019, cross-validated over queries.

Grades DL19's pool (every judged passage, which holds every run's top 20) on the generated question
bank the published FLAN-T5 grades use (``dl19-genq-questions-v1``), or the nugget bank, with the
embedding grader through a grade cache; then runs the calibration of ``exam-harness calibrate``
(exam_harness/analysis/calibration.py): a passage's score is its best cosine over its query's test
points; the cosine where grade 4 (the default minimum grade) begins is chosen on a grid by Cohen's kappa
of "score >= cut point" against "NIST judged >= 2", on 4 of 5 folds of queries and scored on the fifth
(held-out kappa), and on every query (in-sample); the other cut points stay 0.1 apart. Also prints the
best-cosine quantiles per NIST level, which show why the grid brackets 0.45..0.65.

    python benchmarks/calibrate_embedding.py [--data ../shared/data] [--cache /tmp/dl19.sqlite]
        [--kind question|nugget] [--span passage|sentence] [--queries N] [--folds 5] [--seed 0]

The first run grades 92,600 pairs (about 15 minutes on 2 busy CPU cores); with ``--cache`` a rerun
reads them back in seconds. ``exam-harness calibrate`` does the same from the command line:

    exam-harness calibrate ../shared/data/dl19/dl19-graded-flan-t5-large-selfrating.jsonl.gz \\
        --bank ../shared/data/dl19/dl19-genq-questions-v1.jsonl.gz --grader embedding --cache /tmp/dl19.sqlite
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from exam_harness.analysis.calibration import CalibrationSettings, calibrate, embedding_cosines, passage_scores
from exam_harness.cli.calibrate import ini_settings, print_calibration
from exam_harness.config.options import ExamOptions
from exam_harness.core.progress import GradingProgress
from exam_harness.graders.base import GraderConfig
from exam_harness.graders.embedding import EmbeddingGrader
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import grade_banks
from exam_harness.io import load_bank, load_runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    parser.add_argument("--cache", type=Path, default=None, help="SQLite grade cache (default: in memory).")
    parser.add_argument("--queries", type=int, default=0, help="Use only the first N queries (default: all).")
    parser.add_argument("--span", choices=("passage", "sentence"), default="passage",
                        help="Compare with the whole passage or also its sentences (default: passage).")
    parser.add_argument("--kind", choices=("question", "nugget"), default="question",
                        help="Calibrate on the generated question bank or the nugget bank (default: question).")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dl19 = args.data / "dl19"
    if not dl19.is_dir():
        print(f"skipped: {dl19} is absent", file=sys.stderr)
        return 0
    data = load_runs([dl19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"]).data
    bank_file = "dl19-nuggets.jsonl.gz" if args.kind == "nugget" else "dl19-genq-questions-v1.jsonl.gz"
    banks = [b for b in load_bank(dl19 / bank_file) if b.query.id in data.judgments]
    if args.queries:
        chosen = set(sorted({b.query.id for b in banks})[: args.queries])
        banks = [b for b in banks if b.query.id in chosen]
    grader = EmbeddingGrader(GraderConfig(options={"span": args.span}))
    cache = GradeCache(args.cache)
    started = time.perf_counter()
    try:
        view, outcome = grade_banks(data, banks, grader, cache, k=20, pool="judged",
                                    progress=GradingProgress("grading DL19 with embedding", sys.stderr.isatty()))
    finally:
        cache.close()
    print(f"kind={args.kind} span={args.span}: {outcome.unique:,} pairs ({outcome.cache_hits:,} cached) of "
          f"{len(view.queries)} queries in {time.perf_counter() - started:.1f}s")
    tps = {q: view.test_points[q] for q in view.queries}
    cosines = embedding_cosines(outcome.answers)
    judged = [(q, p) for q in view.queries for p in data.judgments.get(q, {})]
    best = passage_scores(judged, tps, cosines)
    print("best cosine over the query's test points, by NIST level:")
    for level in range(4):
        values = np.array([s for (q, p), s in best.items() if data.judgments[q][p] == level])
        if len(values):
            qs = np.quantile(values, [0.1, 0.25, 0.5, 0.75, 0.9])
            print(f"  level {level}: n={len(values):5d}  q10..q90 = " + " ".join(f"{v:.3f}" for v in qs))
    report = calibrate(outcome.grades, tps, data.judgments, CalibrationSettings(k_folds=args.folds, seed=args.seed),
                       cosines=cosines, current_cut_points=grader.cut_points)
    report.grader = {"name": grader.name, "model": grader.model_name, "source": outcome.source}
    options = ExamOptions(grader="embedding", grader_option=(("span", args.span),) if args.span != "passage" else ())
    report.settings = ini_settings(report, options, outcome.source)
    print_calibration(report, Console(highlight=False, markup=False, width=120))
    return 0


if __name__ == "__main__":
    sys.exit(main())
