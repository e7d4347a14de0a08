"""``exam-harness evaluate RUN_FILES``: the method's leaderboards, correlations and agreement tables.

Without ``--grader`` the recorded grades of the Workbench paragraph file are replayed (choose a
grading run with ``--llm`` / ``--prompt-class`` when it holds several); with ``--bank BANK
--grader NAME`` every (passage, test point) pair of the pool is graded through the grade cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from exam_harness.errors import ConfigError


def add_source_arguments(parser: argparse.ArgumentParser, *, k: bool = True) -> None:
    """Options choosing where grades come from (shared with ``exam-harness analyze``)."""
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_FILE",
                        help="Workbench paragraph file(s) (.jsonl[.gz]), or TREC runs with a collection.")
    parser.add_argument("--bank", action="append", type=Path, default=[], metavar="BANK_FILE",
                        help="Bank file of the test points; repeatable (default: the test points of the recorded grades).")
    parser.add_argument("--grader", help="Grade the pool with this grader through the cache instead of replaying "
                        "recorded grades, e.g. embedding (default: replay; needs --bank).")
    parser.add_argument("--grader-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Grader option, repeatable (default: none).")
    parser.add_argument("--model", help="Model name or local path for the grader (default: the grader's own).")
    parser.add_argument("--cache", default=".exam-cache/grades.sqlite", metavar="PATH",
                        help="SQLite grade cache; 'none' keeps grades in memory (default: .exam-cache/grades.sqlite).")
    parser.add_argument("--llm", help="Recorded grades: the grading run's model (default: the only one in the file).")
    parser.add_argument("--prompt-class", help="Recorded grades: the grading run's prompt class (default: the only one).")
    parser.add_argument("--batch-size", type=int, help="Pairs per grading batch (default: the grader's).")
    parser.add_argument("--device", help="Device for model graders, e.g. cpu or cuda:0 (default: automatic).")
    parser.add_argument("--no-progress", action="store_true", help="Do not draw the grading progress bar.")
    if k:
        parser.add_argument("--k", type=int, default=20, help="Rank cut-off of the runs (default: 20).")


def grade_source(args: argparse.Namespace, *, k: int | None = None) -> Any:
    from exam_harness.evaluation.pipeline import GradeSource, load_banks, parse_options

    if args.batch_size is not None and args.batch_size < 1:
        raise ConfigError(f"--batch-size must be >= 1, got {args.batch_size}")
    cache = None if str(args.cache).lower() == "none" else Path(args.cache)
    return GradeSource(
        banks=load_banks(args.bank),
        grader=args.grader,
        grader_options=parse_options(args.grader_option),
        model=args.model,
        cache=cache,
        llm=args.llm,
        prompt_class=args.prompt_class,
        batch_size=args.batch_size,
        device=args.device,
        k=k if k is not None else getattr(args, "k", 20),
    )


def show_progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "evaluate",
        help="Leaderboards (EXAM-Cover, n-EXAM, EXAM-Qrels measures), correlations and agreement tables.",
        description="Compute the method's leaderboards for chosen minimum grades from recorded grades or by "
        "grading with any grader, correlate them with an official leaderboard and tabulate agreement "
        "with human judgments.",
    )
    add_source_arguments(parser)
    parser.add_argument("--official", type=Path, metavar="LEADERBOARD_JSON",
                        help="Official leaderboard {run: rank} to correlate with (default: none).")
    parser.add_argument("--min-grade", type=int, nargs="+", metavar="TAU",
                        help="Minimum grade(s) that count a test point as covered (default: the grader's, 4 for "
                        "recorded self-ratings).")
    parser.add_argument("--relevance-level", type=int, default=2,
                        help="Judgment level counted relevant in the agreement tables: 2 for TREC DL, 1 for CAR (default: 2).")
    parser.add_argument("--labels", nargs="+", default=None, metavar="VARIANT",
                        help="Qrels label variants: max-grade count at-least-m (default: all three).")
    parser.add_argument("--measures", nargs="+", default=None, metavar="MEASURE",
                        help="trec_eval measures (default: P@20 map ndcg@10 ndcg@20 rprec mrr).")
    parser.add_argument("--qrels-m", type=int, default=2, help="m of the at-least-m label (default: 2).")
    parser.add_argument("--no-alpha-ndcg", action="store_true", help="Leave out the alpha-nDCG@k leaderboard.")
    parser.add_argument("--redundancy-alpha", type=float, default=0.5, help="alpha of alpha-nDCG (default: 0.5).")
    parser.add_argument("--nugget-f", action="store_true",
                        help="Add the nugget F leaderboard also for question banks (default: for nugget banks only).")
    parser.add_argument("--beta", type=float, default=3.0, help="beta of nugget F (default: 3).")
    parser.add_argument("--bootstrap", type=int, default=1000,
                        help="Bootstrap resamples for each score's confidence interval; 0 for none (default: 1000).")
    parser.add_argument("--confidence", type=float, default=0.95, help="Confidence of the intervals (default: 0.95).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of every resampling (default: 0).")
    parser.add_argument("--baseline", metavar="RUN", help="Compare every run with this one (paired tests over queries).")
    parser.add_argument("--significance", choices=("permutation", "bootstrap", "t-test"), default="permutation",
                        help="Paired test used with --baseline (default: permutation).")
    parser.add_argument("--alpha", type=float, default=0.05, help="Significance level of --baseline (default: 0.05).")
    parser.add_argument("--resamples", type=int, default=10000, help="Resamples of the paired tests (default: 10000).")
    parser.add_argument("--per-query", action="store_true", help="Write per-query values into the JSON.")
    parser.add_argument("--json", type=Path, metavar="OUT", help="Write the leaderboards as JSON.")
    parser.add_argument("--qrels-dir", type=Path, metavar="DIR",
                        help="Write the EXAM-Qrels files (one per label variant and minimum grade) here.")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="Draw the leaderboards (PNG and SVG) into this folder.")
    parser.add_argument("--export-workbench", type=Path, metavar="FILE",
                        help="Write passages, runs, judgments and grades as a Workbench paragraph file (.jsonl[.gz]).")
    parser.add_argument("--brief", action="store_true", help="Print only the correlations and agreement tables.")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.evaluation.leaderboards import EvaluationSettings, compute_leaderboards
    from exam_harness.evaluation.pipeline import obtain_grades
    from exam_harness.evaluation.render import console_for, print_evaluation, progress_factory
    from exam_harness.io import load_leaderboard, load_runs

    if args.k < 1:
        raise ConfigError(f"--k must be >= 1, got {args.k}")
    official = load_leaderboard(args.official) if args.official else None
    loaded = load_runs(args.runs)
    source = grade_source(args)
    view, table = obtain_grades(loaded.data, source, progress=progress_factory(show_progress(args)))
    min_grades = args.min_grade or [table.default_min_grade]
    settings = _settings(args, min_grades, EvaluationSettings)
    result = compute_leaderboards(view, table, settings, official=official, responses=loaded.responses)
    result.settings["runs"] = [str(p) for p in args.runs]
    result.settings["banks"] = [str(p) for p in args.bank]
    if args.official:
        result.settings["official"] = str(args.official)

    console = console_for()
    print_evaluation(result, console, brief=args.brief, label=settings.labels[0] if settings.labels else "max-grade")
    written: list[str] = []
    if args.json:
        written.append(str(result.write_json(args.json)))
    if args.qrels_dir:
        from exam_harness.evaluation.leaderboards import write_qrels_files

        written.extend(str(p) for p in write_qrels_files(view, table, settings, args.qrels_dir))
    if args.plot:
        from exam_harness.evaluation.plots import plot_leaderboards

        written.extend(str(p) for p in plot_leaderboards(result, args.plot))
    if args.export_workbench:
        from exam_harness.evaluation.workbench_export import export_view

        export_view(args.export_workbench, view, table)
        written.append(str(args.export_workbench))
    for path in written:
        console.print(f"wrote {path}", soft_wrap=True)
    if table.failures:
        examples = "; ".join(table.summary.failure_examples)
        print(
            f"exam-harness evaluate: {len(table.failures):,} pool pairs have no grade and count as uncovered "
            f"(e.g. {examples})",
            file=sys.stderr,
        )
        return 1
    return 0


_FLAGS = {"min_grades": "--min-grade", "judgment_level": "--relevance-level", "alpha_ndcg": "--no-alpha-ndcg",
          "nugget_f": "--nugget-f", "baseline": "--baseline"}


def _settings(args: argparse.Namespace, min_grades: list[int], model: Any) -> Any:
    from pydantic import ValidationError

    values: dict[str, Any] = {
        "k": args.k,
        "min_grades": min_grades,
        "qrels_m": args.qrels_m,
        "judgment_level": args.relevance_level,
        "alpha_ndcg": not args.no_alpha_ndcg,
        "redundancy_alpha": args.redundancy_alpha,
        "nugget_f": True if args.nugget_f else None,
        "beta": args.beta,
        "bootstrap": args.bootstrap,
        "confidence": args.confidence,
        "seed": args.seed,
        "baseline": args.baseline,
        "significance": args.significance,
        "alpha": args.alpha,
        "resamples": args.resamples,
        "per_query": args.per_query,
    }
    if args.labels is not None:
        values["labels"] = args.labels
    if args.measures is not None:
        values["measures"] = args.measures
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        option = _FLAGS.get(name, "--" + name.replace("_", "-"))
        raise ConfigError(f"{option}: {err['msg']} (got {err.get('input')!r})") from None
