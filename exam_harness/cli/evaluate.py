"""``exam-harness evaluate RUN_FILES``: the method's leaderboards, correlations and agreement tables.

Without ``--grader`` the recorded grades of the Workbench paragraph file are replayed (choose a
grading run with ``--llm`` / ``--prompt-class`` when it holds several); with ``--bank BANK
--grader NAME`` every (passage, test point) pair of the pool is graded through the grade cache.
Options come from the one schema (``exam_harness/options.py``), as in pytest without the ``exam-`` prefix.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from exam_harness.cli.grades import add_input_arguments, obtain_grades, report_failures
from exam_harness.options import (
    EVALUATE,
    GRADING,
    RECORDED,
    SCORING,
    SIGNIFICANCE,
    add_cli_options,
    options_from_cli,
)
from exam_harness.preflight import check_writable

GROUPS = (GRADING, SCORING, RECORDED, SIGNIFICANCE, EVALUATE)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "evaluate",
        help="Leaderboards (EXAM-Cover, n-EXAM, EXAM-Qrels measures), correlations and agreement tables.",
        description="Compute the method's leaderboards for chosen minimum grades from recorded grades or by "
        "grading with any grader, correlate them with an official leaderboard and tabulate agreement "
        "with human judgments.",
    )
    add_input_arguments(parser)
    add_cli_options(parser, GROUPS)
    parser.add_argument("--json", type=Path, metavar="OUT", help="Write the leaderboards as JSON.")
    parser.add_argument("--qrels-dir", type=Path, metavar="DIR",
                        help="Write the EXAM-Qrels files (one per label variant and minimum grade) here.")
    parser.add_argument("--plot", type=Path, metavar="DIR",
                        help="Draw the leaderboards (PNG and SVG) into this folder.")
    parser.add_argument("--export-workbench", type=Path, metavar="FILE",
                        help="Write passages, runs, judgments and grades as a Workbench paragraph file (.jsonl[.gz]).")
    parser.add_argument("--brief", action="store_true", help="Print only the correlations and agreement tables.")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.io import load_leaderboard
    from exam_harness.report.build import exam_qrels
    from exam_harness.report.evaluation import evaluate_exam, scoring_context
    from exam_harness.report.evaluation_tables import print_evaluation

    options = options_from_cli(args, GROUPS)
    check_writable([("--json", args.json, False), ("--qrels-dir", args.qrels_dir, True), ("--plot", args.plot, True),
                    ("--export-workbench", args.export_workbench, False)])
    official = load_leaderboard(options.official) if options.official else None
    graded = obtain_grades(args, options)
    plan = graded.plan
    ctx = scoring_context(graded.view, graded.outcome, plan, graded.inputs.responses)
    result = evaluate_exam(ctx, graded.view, graded.outcome, graded.spec, plan, options, official=official)
    result.settings["runs"] = [str(p) for p in args.runs]
    result.settings["banks"] = [str(p) for p in args.bank]
    if options.official:
        result.settings["official"] = str(args.official)

    console = Console(highlight=False, markup=False)  # names in the output are data, not markup
    print_evaluation(result, console, brief=args.brief, label=plan.labels[0])
    written: list[Path] = []
    if args.json:
        written.append(result.write_json(args.json))
    if args.qrels_dir:
        from exam_harness.io.qrels import write_qrels

        for name, qrels in exam_qrels(ctx, plan, plan.min_grades).items():
            written.append(write_qrels(args.qrels_dir / name, qrels))
    if args.plot:
        from exam_harness.report.plots import plot_leaderboards

        written.extend(plot_leaderboards(result, args.plot))
    if args.export_workbench:
        from exam_harness.io.workbench_export import export_view

        export_view(args.export_workbench, graded.view, graded.outcome, graded.spec)
        written.append(args.export_workbench)
    for path in written:
        console.print(f"wrote {path}", soft_wrap=True)
    return report_failures("evaluate", graded.outcome, graded.inputs.redact)
