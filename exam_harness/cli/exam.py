"""``exam-harness exam [PYTEST ARGS]``: run the exam under pytest (same as ``pytest banks``)."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "exam",
        help="Run the exam under pytest; extra arguments go to pytest (default: the configured banks).",
        description="Run the exam under pytest. Every argument is passed on to pytest, e.g. "
        "'exam-harness exam banks/ --exam-fail-under 0.5'.",
    )
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="Arguments for pytest.")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import pytest

    return int(pytest.main(list(args.pytest_args)))
