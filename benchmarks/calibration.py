"""Corrected scores on a bank a team labelled itself (issue 35, item 3): how wide the 95% interval of the
corrected EXAM-Cover is at a number of labels, and how often it covers the all-labels truth, over seeds.

    python benchmarks/calibration.py [--judge embedding|labels] [--seeds 100] [--cache FILE]

The bank is tests/data/heat_pump_bank.json (tests/heat_pump_bank.py): 40 questions, 77 passages, every pair
labelled, eight systems ranking five passages per query. A "team" answers every pair it is shown by the labels;
the sample is exam-harness label's (features/calibration/sampling.py), the correction evaluate's
(features/calibration/corrected.py). Two exams:

- EXAM-Cover@5 of the rankings: a run's answered indicator rests on its five passages, so the sample draws whole
  test points (``--unit test-point``: about 25 pooled pairs each); rows at 2, 4, 8 and 16 test points (about
  50, 100, 200 and 400 labels);
- EXAM-Cover@1 of the same runs (their first passage only): one passage per indicator, so a sample of pairs
  corrects it; rows at 50, 100 and 200 pairs.

Judges: ``embedding`` (the offline default) or ``labels`` (grades from the labels themselves: the raw score is
the truth and the interval says only what the sample's size allows). Figures per row: the labels drawn (mean),
the share of (seed, system) intervals covering the truth, their mean width, and the mean |raw - truth| beside
the mean |corrected - truth|. Nothing here is timed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exam_harness.analysis.label_file import labels_of, samples_of
from exam_harness.analysis.label_sample import JudgeGrades, draw, finish
from exam_harness.features.calibration.corrected import corrected_measures
from tests.heat_pump_bank import HeatPumpBank, load


def graded(bank: HeatPumpBank, judge: str, k: int, cache: Path) -> tuple[object, object, dict[tuple[str, str], int]]:
    """The exam of the bank's runs at depth ``k`` scored by ``judge``: (scoring input, scored exam, grades)."""
    from exam_harness.cli import label as label_cli
    from exam_harness.config.options import GRADING, SCORING, options_from_cli
    from exam_harness.extensions import cli_registries
    from exam_harness.results.scoring import score_exam, scoring_input
    from exam_harness.session.grades import obtain_grades

    root = Path(tempfile.mkdtemp())
    banks, runs = bank.write_project(root)
    parser = argparse.ArgumentParser()
    label_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["label", *sorted(str(p) for p in runs.iterdir()), "--bank",
                              str(banks / "heat_pumps.yaml"), "--grader", "embedding", "--cache", str(cache),
                              "--no-progress", "--k", str(k)])
    options = options_from_cli(args, (GRADING, SCORING), defaults={"grader": "embedding"})
    found = obtain_grades(args, options, registries=cli_registries())
    outcome = found.outcome
    if judge == "labels":
        outcome.grades = {pair: 5 if bank.labels[pair] else 0 for pair in outcome.grades}
    exam = scoring_input(found.view, outcome, found.plan, sort_queries=True)
    return exam, score_exam(exam, found.view, outcome, found.plan, [found.plan.min_grade]), dict(outcome.grades)


def rows(bank: HeatPumpBank, judge: str, k: int, unit: str, sizes: list[int], seeds: int, cache: Path) -> None:
    exam, scored, grades = graded(bank, judge, k, cache)
    cover = [m for m in scored.measures if m.family == "exam-cover"]  # type: ignore[attr-defined]
    result = scored.result  # type: ignore[attr-defined]
    truth = {s: bank.cover(bank.labels, s, k) for s in bank.runs}
    first = JudgeGrades(judge, grades, 4)
    print(f"\nEXAM-Cover@{k}, judge {judge}, a sample of {unit}s ({seeds} seeds); mean |raw - truth| "
          f"{np.mean([abs(result[cover[0]].means[s] - truth[s]) for s in bank.runs]):.3f}")
    print(f"{'units':>6} {'labels':>7} {'covered':>8} {'width':>6} {'|corrected - truth|':>20}")
    for size in sizes:
        labels_drawn, covered, widths, errors, missing = [], [], [], [], 0
        for seed in range(seeds):
            found = draw(grades, unit, seed, first, [], [], size)
            lines = finish(found, [], {p: bank.labels[p] for p in found.asked}, query_of=lambda t: t.split(".")[0],
                           source_of=lambda _p: "passage", shown=False)
            (sample,) = samples_of(lines).values()
            corrected, problem = corrected_measures(exam, result, cover, sample, labels_of(lines))  # type: ignore[arg-type]
            if problem is not None or corrected[0].missing is not None:
                missing += 1
                continue
            labels_drawn.append(len(lines))
            for system, (_raw, estimate) in corrected[0].runs.items():
                assert estimate.low is not None and estimate.high is not None and estimate.value is not None
                covered.append(estimate.low - 1e-9 <= truth[system] <= estimate.high + 1e-9)
                widths.append(estimate.high - estimate.low)
                errors.append(abs(estimate.value - truth[system]))
        if not labels_drawn:
            print(f"{size:>6} {'-':>7}  no corrected score in any seed (a stratum without a labelled unit)")
            continue
        note = f"  ({missing} seeds without a corrected score)" if missing else ""
        print(f"{size:>6} {np.mean(labels_drawn):>7.1f} {np.mean(covered):>8.3f} {np.mean(widths):>6.3f} "
              f"{np.mean(errors):>20.3f}{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", choices=["embedding", "labels"], default="embedding")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "calibration-bench.sqlite")
    args = parser.parse_args()
    bank = load()
    rows(bank, args.judge, 5, "test-point", [2, 4, 8, 16], args.seeds, args.cache)
    rows(bank, args.judge, 1, "pair", [50, 100, 200], args.seeds, args.cache)


if __name__ == "__main__":
    main()
