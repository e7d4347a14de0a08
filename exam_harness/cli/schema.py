"""``exam-harness schema``: print the JSON Schema of the JSON report and of ``evaluate --json``."""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "schema", help="Print the JSON Schema of exam-report.json and of evaluate --json (one schema, by kind).")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.results.document import json_schema

    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0
