"""``exam-harness exam [PYTEST ARGS]``: run the exam under pytest (same as ``pytest banks``).

Every argument after ``exam`` is pytest's, options first or not (``-q``, ``-k tides``,
``--exam-fail-under=0.5``): :func:`exam_harness.cli.main` hands them over before its own parser
could read one as its own, and ``exam-harness exam --help`` is pytest's help.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from exam_harness.config.options import PYTEST_ARGS


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    # Listed for ``exam-harness --help``; main() never parses an ``exam`` command line with it.
    parser = subparsers.add_parser(
        "exam",
        help="Run the exam under pytest; every further argument goes to pytest (default: the configured banks).",
        description="Run the exam under pytest. Every argument is passed on to pytest, e.g. "
        "'exam-harness exam -q -k tides --exam-fail-under=0.5'.",
    )
    PYTEST_ARGS.add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_pytest(list(args.pytest_args))


def run_pytest(pytest_args: Sequence[str]) -> int:
    import pytest

    return int(pytest.main(list(pytest_args)))
