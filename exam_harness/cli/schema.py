"""``exam-harness schema``: print the JSON Schema of the JSON report."""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("schema", help="Print the JSON Schema of exam-report.json.")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.report.schema import ExamReport

    print(json.dumps(ExamReport.model_json_schema(), indent=2, sort_keys=True))
    return 0
