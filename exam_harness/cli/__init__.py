"""``exam-harness`` command line: one subcommand per module of this package, and the features' and plugins'.

Subcommand modules expose ``add_parser(subparsers)`` and ``run(args) -> int`` and are imported
only when listed here, so ``exam-harness --help`` stays fast. A feature or plugin adds a subcommand
through ``pytest_exam_register_commands`` (config/commands.py) and options through
``pytest_exam_add_options``: the parser is built after the plugin manager (extensions.py) is.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from exam_harness.core.errors import INFRASTRUCTURE_FAILED, ConfigError, ExamError, InfrastructureError
from exam_harness.core.version import __version__

COMMANDS: tuple[str, ...] = (
    "exam", "graders", "leaderboard", "compare", "schema", "evaluate", "analyze",
    "calibrate", "queries", "verdict", "grade", "cache", "label", "models",
)


def _first_word(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand module ``argv`` names (its first word), when it names one."""
    first = _first_word(argv)
    name = first.replace("-", "_") if first else None
    return name if name in COMMANDS else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments and they name a subcommand, with that subcommand alone (importing
    every subcommand's module costs a second or more; help and usage errors elsewhere list them all): a built-in
    one's module, or a feature's or plugin's command without the built-in modules. The features' and plugins'
    options are part of the schema the subcommands' parsers are built from, and their subcommands (``exam-harness
    record``, ``view``: in-tree features') are listed after the built-in ones."""
    from exam_harness.extensions import Registries, cli_feature_options, cli_plugin_manager, keep_for_command

    named = _named_command(argv) if argv is not None else None
    manager = cli_plugin_manager()
    keep_for_command(manager)  # the subcommand's parser and its run take their registries from it
    cli_feature_options(manager)
    parser = argparse.ArgumentParser(
        prog="exam-harness",
        description="Exam-based evaluation of retrieval and RAG systems (EXAM, RUBRIC, nugget pyramids).",
    )
    parser.add_argument("--version", action="version", version=f"exam-harness {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = Registries.from_hook(manager.hook).commands if named is None else None
    first = _first_word(argv) if argv is not None else None
    plugin_named = commands is not None and first in commands  # a feature's or plugin's subcommand
    for name in (named,) if named else () if plugin_named else COMMANDS:
        try:
            module = importlib.import_module(f"exam_harness.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"exam_harness.cli.{name}":
                continue  # a subcommand not shipped in this build
            raise
        module.add_parser(subparsers)
    if commands is not None:
        for name in commands:
            if name.replace("-", "_") in COMMANDS:
                raise ConfigError(f"subcommand {name!r} is registered by a plugin and is a built-in one")
            if plugin_named and name != first:
                continue  # that command alone, as a built-in one's module alone
            command = commands.get(name)
            sub = subparsers.add_parser(name, help=command.help, description=command.description)
            command.add_arguments(sub)
            sub.set_defaults(func=command.run)
    return parser


def build_parser_uncollected(argv: Sequence[str]) -> argparse.ArgumentParser:
    """:func:`build_parser` with Python's cyclic collector paused while the subcommand's modules are imported,
    then those modules' objects frozen out of its later passes. Imports build classes, functions and pydantic
    schemas by the thousand that live until the command exits: passes over them find nothing to free (evaluate
    on DL19: ~120 passes during its imports, a twentieth of its CPU time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        parser = build_parser(argv)
        gc.freeze()  # before the collector resumes: its first pass would walk everything just imported
    finally:
        if enabled:
            gc.enable()
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: the process's arguments). What the command froze out of the
    cyclic collector's passes (its imports, its inputs) stays frozen when the process ends with it: Python's
    last full pass at exit would walk it all; called in-process (``argv`` given) it is collectable again."""
    try:
        return _command(argv)
    finally:
        from exam_harness.config.options import reset_feature_options
        from exam_harness.extensions import end_command
        from exam_harness.results.sections import reset_sections

        end_command()

        # what the folder's plugins registered (sections, hooks, options) ends with the command (called in-process)
        reset_sections()
        reset_feature_options()
        if argv is not None:
            gc.unfreeze()


def _command(argv: Sequence[str] | None) -> int:
    # numpy's OpenBLAS runs one thread unless the user sets it: the commands multiply small matrices
    # (runs x queries by bootstrap resamples), where waking a thread pool costs more than the product
    # (evaluate on DL19, 2 busy cores: 63 products in 3 s wall / 1 s CPU with the pool, 0.04 s without).
    # Set before any numpy import; torch keeps its own threads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["exam"]:
        # Everything after ``exam`` is pytest's; argparse would claim options such as -q or -k as its own.
        from exam_harness.cli.exam import run_pytest

        return run_pytest(argv[1:])
    try:
        parser = build_parser_uncollected(argv)
    except ExamError as exc:  # a plugin that cannot be loaded, or a subcommand registered twice
        print(f"exam-harness: error: {exc}", file=sys.stderr)
        return 4
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
    except BrokenPipeError:
        # the reader went away (``exam-harness queries banks | head``): stop quietly, as other Unix tools
        # do; stdout goes to devnull so that Python's flush at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool a pipe closed
    except KeyboardInterrupt:
        print("exam-harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
