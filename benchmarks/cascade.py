"""What cascade grading saves and what it may miss: decider calls against passes kept, at target shares.

    python benchmarks/cascade.py [--data ../shared/data] [--cache /tmp/dl19.sqlite] [--scores /tmp/dl19-scores.tsv]
                                 [--strata 4] [--audit 0.1] [--audit-min 30] [--seeds 3]
                                 [--only sourdough|heat-pump|dl19]

The first judge is the default ``embedding`` grader (its support is the score, as in the ``cascade`` grader);
the decider:

- the sourdough bank (tests/data/sourdough_bank.json, 1,260 pairs) and the heat pump bank
  (tests/data/heat_pump_bank.json, 3,080 pairs): the banks' own labels (what the tests' fake OpenAI server
  answers from);
- DL19: the released FLAN-T5-large self-ratings (``recorded`` grader, grade >= 4 passes) over the judged pool
  (9,260 passages x 10 generated questions), graded by the embedding grader through ``--cache`` (the same
  cache benchmarks/grader_quality.py fills: a rerun reads it back).

For each target share (0.90, 0.95, 0.99) and seed, the audit sample is drawn and the threshold chosen as the
grader does (:mod:`exam_harness.graders.cascade_filter`: bands of the score, an audit of each, the threshold
lowered until the 95% lower bound of the kept share reaches the target) and the script prints the decider
calls made (share of all pairs), the share of the decider's passes truly kept (every pair's decider grade is
known here), the lower bound the cascade states, and the baseline: the calls a filter on the same score needs
for the same kept share when the cut is chosen knowing every grade (no audit, no bound).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.core.models import Grade  # noqa: E402
from exam_harness.core.progress import GradingProgress  # noqa: E402
from exam_harness.graders.base import GraderConfig, GradingRequest  # noqa: E402
from exam_harness.graders.cascade import score_of  # noqa: E402
from exam_harness.graders.cascade_filter import audit_draw, audit_sample, descend, strata_of  # noqa: E402
from exam_harness.graders.embedding import EmbeddingGrader  # noqa: E402
from exam_harness.graders.recorded import RecordedGrader  # noqa: E402
from exam_harness.grading.cache import GradeCache  # noqa: E402
from exam_harness.grading.passes import grade_banks  # noqa: E402
from exam_harness.io import load_bank, load_runs  # noqa: E402

TARGETS = (0.90, 0.95, 0.99)
_SUPPORT = re.compile(r"support (\d+(?:\.\d+)?)")


def oracle_calls(scores: list[float], passes: list[bool], kept_share: float) -> int:
    """Pairs a cut on ``scores`` must keep to hold ``kept_share`` of the passes, knowing every grade."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    need = kept_share * sum(passes)
    found = 0
    for n, i in enumerate(order, 1):
        found += passes[i]
        if found >= need - 1e-9:
            return n
    return len(order)


def report(name: str, pairs: list[str], scores: list[float], passes: list[bool], args: argparse.Namespace) -> None:
    total, all_passes = len(pairs), sum(passes)
    print(f"{name}: {total:,} pairs, decider passes {all_passes:,} ({100 * all_passes / total:.1f}%); "
          f"{args.strata} bands, audit {args.audit:g} of each (at least {args.audit_min})")
    bands = strata_of(scores, args.strata)
    for target in TARGETS:
        for seed in range(args.seeds):
            audited = audit_sample(bands, [audit_draw(seed, p) for p in pairs], args.audit, args.audit_min)

            def decide(indices: Sequence[int]) -> list[bool | None]:
                return [passes[i] for i in indices]

            started = time.perf_counter()
            descent = descend(scores, bands, audited, decide, target=target, step=max(16, total // 100))
            seconds = time.perf_counter() - started
            sent = [audited[i] or scores[i] >= descent.threshold for i in range(total)]
            kept_share = sum(p and s for p, s in zip(passes, sent)) / all_passes
            baseline = oracle_calls(scores, passes, kept_share)
            bound = descent.bound
            print(f"  target {target:.2f} seed {seed}: calls {bound.calls:,} ({100 * bound.calls / total:.1f}%), "
                  f"passes kept {100 * kept_share:.1f}%, stated >= {100 * bound.lower_bound:.1f}% (audit "
                  f"{sum(audited):,} pairs); a cut knowing every grade keeps that share with "
                  f"{100 * baseline / total:.1f}% of the calls; chosen in {seconds:.1f}s")


def embedding_scores(grades: list[Grade]) -> list[float]:
    return [score_of(g, 5) for g in grades]


def labelled_bank(which: str, args: argparse.Namespace) -> None:
    if which == "sourdough":
        from tests.sourdough_bank import load as load_sourdough

        bank: Any = load_sourdough()
        title = "sourdough bank"
    else:
        from tests.heat_pump_bank import load as load_heat_pump

        bank = load_heat_pump()
        title = "heat pump bank"
    grader = EmbeddingGrader(GraderConfig())
    try:
        grader.prepare(bank.requests)
        grades = [g for g in grader.grade_batch(bank.requests) if isinstance(g, Grade)]
    finally:
        grader.close()
    assert len(grades) == len(bank.requests)
    pairs = [f"{r.passage.id}\0{r.test_point.id}" for r in bank.requests]
    passes = [bank.labels[(r.passage.id, r.test_point.id)] for r in bank.requests]
    verdicts = [g.grade >= 4 for g in grades]
    right = sum(v and p for v, p in zip(verdicts, passes))
    print(f"embedding grader alone at grade >= 4 on the {title}: precision {right}/{sum(verdicts)}, recall "
          f"{right}/{sum(passes)} (exam_harness/graders/verdict_worth.py states these)")
    report(f"{title} (decider: the bank's labels)", pairs, embedding_scores(grades), passes, args)


def read_scores(path: Path) -> tuple[list[str], list[float], list[bool]]:
    """The table :func:`write_scores` wrote: one pair a line, ``passage id<TAB>test point id<TAB>score<TAB>0|1``."""
    pairs, scores, passes = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        passage_id, tp_id, score, passed = line.split("\t")
        pairs.append(f"{passage_id}\0{tp_id}")
        scores.append(float(score))
        passes.append(passed == "1")
    return pairs, scores, passes


def write_scores(path: Path, pairs: list[str], scores: list[float], passes: list[bool]) -> None:
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(path, "".join(f"{pair.replace(chr(0), chr(9))}\t{score!r}\t{int(passed)}\n"
                                    for pair, score, passed in zip(pairs, scores, passes)))


def dl19(data_dir: Path, cache_path: Path | None, args: argparse.Namespace, queries: int | None,
         scores_path: Path | None = None) -> None:
    shown = f"{queries} queries" if queries is not None else "all judged queries"
    title = f"DL19, {shown} (decider: recorded FLAN-T5-large self-ratings, grade >= 4)"
    if scores_path is not None and scores_path.is_file():
        print(f"DL19 scores and decider verdicts read from {scores_path}")
        report(title, *read_scores(scores_path), args)
        return
    folder = data_dir / "dl19"
    data = load_runs([folder / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"]).data
    banks = [b for b in load_bank(folder / "dl19-genq-questions-v1.jsonl.gz") if b.query.id in data.judgments]
    if queries is not None:  # the first N judged queries in id order: a shorter run on a slow machine
        banks = sorted(banks, key=lambda b: b.query.id)[:queries]
    cache = GradeCache(cache_path)
    grader = EmbeddingGrader(GraderConfig())
    started = time.perf_counter()
    try:
        _, outcome = grade_banks(data, banks, grader, cache, k=20, pool="judged",
                                    progress=GradingProgress("grading DL19", sys.stderr.isatty()))
    finally:
        grader.close()
        cache.close()
    print(f"DL19 embedding grades: {outcome.unique:,} pairs ({outcome.cache_hits:,} cached) in "
          f"{time.perf_counter() - started:.1f}s")
    recorded = RecordedGrader(GraderConfig(data=data))
    tps = {tp.id: (b.query, tp) for b in banks for tp in b.test_points}
    pairs, scores, passes = [], [], []
    missing = 0
    for (pid, tpid), answer in sorted(outcome.answers.items()):
        found = _SUPPORT.findall(answer or "")
        query, tp = tps[tpid]
        result = recorded.grade_batch([GradingRequest(query, tp, data.passages[pid])])[0]
        if not found or not isinstance(result, Grade):
            missing += 1
            continue
        pairs.append(f"{pid}\0{tpid}")
        scores.append(float(found[-1]))
        passes.append(result.grade >= 4)
    if missing:
        print(f"  left out {missing:,} pairs without a support or a recorded grade")
    if scores_path is not None:
        write_scores(scores_path, pairs, scores, passes)
        print(f"  wrote the scores and decider verdicts to {scores_path} (a rerun with --scores reads them)")
    report(title, pairs, scores, passes, args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data")
    parser.add_argument("--cache", type=Path, default=None, help="SQLite grade cache for the DL19 embedding grades.")
    parser.add_argument("--audit", type=float, default=0.1, help="share of each band audited (the grader's default)")
    parser.add_argument("--audit-min", type=int, default=30, help="pairs of each band audited at least")
    parser.add_argument("--strata", type=int, default=4, help="bands of the score the audit is drawn from")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", choices=("sourdough", "heat-pump", "dl19"), default=None)
    parser.add_argument("--queries", type=int, default=None, help="DL19: only the first N judged queries (id order).")
    parser.add_argument("--scores", type=Path, default=None,
                        help="DL19: a table of the first judge's scores and the decider's verdicts, read when it "
                        "exists (no data or model loaded), else written after grading.")
    args = parser.parse_args()
    for which in ("sourdough", "heat-pump"):
        if args.only in (None, which):
            labelled_bank(which, args)
    if args.only in (None, "dl19"):
        if not (args.data / "dl19").is_dir() and not (args.scores is not None and args.scores.is_file()):
            print(f"DL19 skipped: {args.data / 'dl19'} is absent")
        else:
            dl19(args.data, args.cache, args, args.queries, args.scores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
