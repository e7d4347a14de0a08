"""``exam-harness leaderboard REPORT.json``: render a saved JSON report as the terminal leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("leaderboard", help="Show the leaderboard of a saved exam-report.json.")
    parser.add_argument("report", type=Path, help="Path to exam-report.json.")
    parser.add_argument("--label", default="max-grade", help="Qrels label variant of the measures (default: max-grade).")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.report.reader import read_report
    from exam_harness.report.terminal import cache_line, leaderboard

    report = read_report(args.report)
    console = Console(file=sys.stdout)
    console.print(leaderboard(report, label=args.label, width=console.width))
    console.print(cache_line(report), soft_wrap=True)
    return 0
