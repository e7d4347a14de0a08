"""``exam-harness`` command line: one subcommand per module of this package.

Subcommand modules expose ``add_parser(subparsers)`` and ``run(args) -> int`` and are imported
only when listed here, so ``exam-harness --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from exam_harness import __version__
from exam_harness.errors import INFRASTRUCTURE_FAILED, ExamError, InfrastructureError

COMMANDS: tuple[str, ...] = (
    "exam", "graders", "leaderboard", "compare", "schema", "generate", "evaluate", "analyze", "import_grades",
    "calibrate", "record", "queries",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exam-harness",
        description="Exam-based evaluation of retrieval and RAG systems (EXAM, RUBRIC, nugget pyramids).",
    )
    parser.add_argument("--version", action="version", version=f"exam-harness {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"exam_harness.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"exam_harness.cli.{name}":
                continue  # a subcommand not shipped in this build
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_given = list(sys.argv[1:] if argv is None else argv)
    if args_given[:1] == ["exam"]:
        # Everything after ``exam`` is pytest's; argparse would claim options such as -q or -k as its own.
        from exam_harness.cli.exam import run_pytest

        return run_pytest(args_given[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on a usage error; ours is 4 like pytest's usage errors
        return 4 if exc.code == 2 else int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except InfrastructureError as exc:  # a server died or cannot be reached: retry later, not a usage error
        print(f"exam-harness {args.command}: error: {exc}", file=sys.stderr)
        return INFRASTRUCTURE_FAILED
    except ExamError as exc:
        print(f"exam-harness {args.command}: error: {exc}", file=sys.stderr)
        return 4
    except KeyboardInterrupt:
        print("exam-harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
