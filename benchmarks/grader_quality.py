"""Held-out agreement of the default (embedding) grader with human judgments: DL19 and LLMJudge dev.

    python benchmarks/grader_quality.py [--data ../shared/data] [--cache /tmp/quality.sqlite] [--folds 5] [--seed 0]

For each data set, the grader grades every judged passage against its query's test points (through a
grade cache: a rerun reads the grades back), then the support model is fit and scored under query
cross-validation (:func:`exam_harness.analysis.support_fit.fit_support`): on each of 5 folds of queries,
weights and the grade-4 cut point are fit on the other folds and Cohen's kappa of "best grade >= 4"
against "judged >= 2" is measured on the fold; printed as mean ± sd over folds.

- DL19: the 43 judged queries of ``dl19-graded-flan-t5-large-selfrating.jsonl.gz`` (9,260 passages) with
  the generated question bank ``dl19-genq-questions-v1`` (10 questions a query, no gold answers);
- LLMJudge dev: the 25 queries of ``llmjudge-dev-graded.jsonl.gz`` (7,263 passages). No question bank comes
  with it, so each query's one test point is the query text itself.

Beside the fitted support model, the same grading run gives the previous default's figure: the best
whole-passage cosine with a cut point chosen on a grid 0.30..0.80 under the same folds (what
benchmarks/calibrate_embedding.py measured for version 3 of the grader: 0.315 ± 0.139 on DL19).
Last line: ``grader quality: DL19 kappa <k> ± <s>, LLMJudge kappa <k2> ± <s2> (held out)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.analysis.calibration import Sample, cross_validate, passage_scores, query_folds  # noqa: E402
from exam_harness.analysis.support_fit import Instances, SupportFit, fit_support, stored_signals  # noqa: E402
from exam_harness.core.models import ExamData, Query, QueryBank, TestPoint  # noqa: E402
from exam_harness.core.progress import GradingProgress  # noqa: E402
from exam_harness.graders.base import GraderConfig  # noqa: E402
from exam_harness.graders.embedding import EmbeddingGrader  # noqa: E402
from exam_harness.graders.support import QUESTION_SIGNALS  # noqa: E402
from exam_harness.grading.cache import GradeCache  # noqa: E402
from exam_harness.grading.passes import grade_banks  # noqa: E402
from exam_harness.io import load_bank, load_runs  # noqa: E402

RELEVANCE = 2
COSINE_GRID = tuple(round(0.30 + 0.01 * i, 2) for i in range(51))


def dl19(data_dir: Path) -> tuple[ExamData, list[QueryBank]]:
    folder = data_dir / "dl19"
    data = load_runs([folder / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"]).data
    banks = [b for b in load_bank(folder / "dl19-genq-questions-v1.jsonl.gz") if b.query.id in data.judgments]
    return data, banks


def llmjudge(data_dir: Path) -> tuple[ExamData, list[QueryBank]]:
    path = data_dir / "llmjudge" / "llmjudge-dev-graded.jsonl.gz"
    data = load_runs([path]).data
    texts: dict[str, str] = {}
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            _, passages = json.loads(line)
            for p in passages:
                for j in p["paragraph_data"]["judgments"]:
                    texts.setdefault(j["query"], j["titleQuery"])
    banks = [QueryBank(query=Query(id=q, text=texts[q]),
                       test_points=(TestPoint(id=f"{q}/query", query_id=q, kind="question", text=texts[q]),))
             for q in sorted(data.judgments) if q in texts]
    return data, banks


def shard_of(banks: list[QueryBank], shard: str | None) -> set[str] | None:
    """The queries of shard ``i/n`` (every n-th query from the i-th, in id order); None for all."""
    if shard is None:
        return None
    i, n = (int(x) for x in shard.split("/"))
    return set(sorted(b.query.id for b in banks)[i::n])


def measure(name: str, data: ExamData, banks: list[QueryBank], cache: GradeCache, folds_k: int,
            seed: int, shard: str | None = None, support_model: Path | None = None,
            ) -> tuple[SupportFit, float | None, float | None] | None:
    # The fit reads only the signals in the stored reasons, not the supports of the model that graded.
    grader = EmbeddingGrader(GraderConfig(options={"support_model": str(support_model)} if support_model else {}))
    started = time.perf_counter()
    only = shard_of(banks, shard)
    view, outcome = grade_banks(data, banks, grader, cache, k=20, pool="judged", only_queries=only,
                                progress=GradingProgress(f"grading {name}", sys.stderr.isatty()))
    if only is not None:  # a shard only fills the cache; the run without --shard measures
        print(f"{name} shard {shard}: {outcome.unique:,} pairs graded in {time.perf_counter() - started:.1f}s")
        return None
    print(f"{name}: {outcome.unique:,} pairs ({outcome.cache_hits:,} cached) of {len(view.queries)} queries "
          f"in {time.perf_counter() - started:.1f}s")
    tps = {q: view.test_points[q] for q in view.queries}
    signals = stored_signals(outcome.answers)
    instances = Instances.of(signals, tps, data.judgments, RELEVANCE)
    folds = query_folds((q for q, _ in instances.keys), folds_k, seed)
    fit = fit_support(instances, folds)
    # Version 4's signals (no query signal), fit and held out the same way: the baseline of the query signal.
    v4 = fit_support(Instances.of(signals, tps, data.judgments, RELEVANCE, QUESTION_SIGNALS[:3]), folds)
    # The previous default: best whole-passage cosine, one cut point chosen by kappa per fold.
    cosines = passage_scores(instances.keys, tps, {pair: s.passage for pair, s in signals.items()})
    sample = Sample.of(instances.keys, [cosines[k] for k in instances.keys], instances.relevant.tolist())
    previous = cross_validate(sample, list(COSINE_GRID), folds)
    print(f"  previous default (whole-passage cosine >= cut): held-out kappa {previous.held_out.mean:.3f} ± "
          f"{previous.held_out.sd:.3f} (cut {previous.chosen}, in-sample {previous.in_sample_kappa:.3f})")
    print(f"  version 4 signals (span, passage, words): held-out kappa {v4.held_out.mean:.3f} ± {v4.held_out.sd:.3f}"
          f"; in-sample {v4.in_sample_kappa:.3f}")
    print(f"  support model: held-out kappa {fit.held_out.mean:.3f} ± {fit.held_out.sd:.3f} per fold "
          + " ".join("–" if k is None else f"{k:.3f}" for k in fit.fold_kappas)
          + f"; in-sample {fit.in_sample_kappa:.3f} at support >= {fit.threshold:g}; weights " + "/".join(fit.names) + " "
          + " ".join(f"{w:.3f}" for w in fit.weights) + f", intercept {fit.intercept:.3f}")
    return fit, previous.held_out.mean, previous.held_out.sd


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data")
    parser.add_argument("--cache", type=Path, default=None, help="SQLite grade cache (default: in memory).")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("dl19", "llmjudge"), default=None)
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="Only grade the I-th of N shards of the queries into --cache (run N of them at once on "
                        "a machine with N free cores, then once without --shard to measure from the cache).")
    parser.add_argument("--support-model", type=Path, default=None,
                        help="Grade with this support model file (the signals, and so the figures, are the same "
                        "whichever: a fixed file keeps a grade cache valid while the shipped one is refit).")
    parser.add_argument("--write-model", type=Path, default=None,
                        help="Write the DL19 fit as a support model file (how graders/support_model.json is made).")
    args = parser.parse_args()
    if not (args.data / "dl19").is_dir():
        print(f"skipped: {args.data / 'dl19'} is absent", file=sys.stderr)
        return 0
    cache = GradeCache(args.cache)
    results: dict[str, SupportFit] = {}
    try:
        for name, load in (("DL19", dl19), ("LLMJudge", llmjudge)):
            if args.only and args.only != name.lower():
                continue
            data, banks = load(args.data)
            measured = measure(name, data, banks, cache, args.folds, args.seed, args.shard, args.support_model)
            if measured is not None:
                results[name] = measured[0]
    finally:
        cache.close()
    if args.write_model is not None and "DL19" in results:
        from exam_harness.graders.support import shipped_model

        model = results["DL19"].model(
            "TREC DL 2019 passages: NIST judgments (relevance >= 2) of the 9,260 judged passages of 43 queries, "
            "generated questions dl19-genq-questions-v1; benchmarks/grader_quality.py", 4,
            shipped_model().answer_key_floor)
        # The answer model (benchmarks/answer_model_fit.py) is kept as it is.
        model = dataclasses.replace(model, with_answers=shipped_model().with_answers)
        args.write_model.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.write_model}")

    def shown(name: str) -> str:
        fit = results.get(name)
        if fit is None or fit.held_out.mean is None:
            return "–"
        return f"{fit.held_out.mean:.3f} ± {fit.held_out.sd or 0:.3f}"

    print(f"grader quality: DL19 kappa {shown('DL19')}, LLMJudge kappa {shown('LLMJudge')} (held out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
