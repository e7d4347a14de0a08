"""``exam-harness leaderboard REPORT.json``: render a saved JSON report as the terminal leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("leaderboard", help="Show the leaderboard of a saved exam-report.json.")
    parser.add_argument("report", type=Path, help="Path to exam-report.json.")
    parser.add_argument("--label", default="max-grade",
                        help="Qrels label variant of the measures (default: max-grade).")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import shutil

    from exam_harness.report.terminal import render_to_text
    from exam_harness.results.read import read_report

    report = read_report(args.report)
    width = shutil.get_terminal_size((120, 24)).columns
    sys.stdout.write(render_to_text(report, color=sys.stdout.isatty(), width=width, label=args.label))
    return 0
