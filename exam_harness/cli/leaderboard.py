"""``exam-harness leaderboard REPORT.json``: render a saved JSON report as the terminal leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.config.options import Argument


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("leaderboard", help="Show the leaderboard of a saved exam-report.json.")
    Argument("report", "Path to exam-report.json.", Path, positional=True).add_to(parser)
    Argument("label", "Qrels label variant of the measures (default: max-grade).", default="max-grade").add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import shutil

    from exam_harness.report.terminal import render_to_text
    from exam_harness.results.left_out import taken
    from exam_harness.results.read import read_report

    report = read_report(args.report)
    width = shutil.get_terminal_size((120, 24)).columns
    # a kept report's texts are data: the renderer shows them escaped, as verdict's messages are
    sys.stdout.write(render_to_text(report, color=sys.stdout.isatty(), width=width, label=args.label))
    for warning in taken():  # a plugin section whose code failed, left out
        print(warning, file=sys.stderr)
    return 0
