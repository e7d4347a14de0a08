"""A subcommand a feature adds to ``exam-harness`` (hook ``pytest_exam_register_commands``).

The built-in subcommands are the modules of exam_harness/cli (each ``add_parser(subparsers)`` and ``run(args)``);
a feature's is an object of the :class:`Command` protocol, registered by name: the command line makes its parser
(``exam-harness NAME --help`` shows ``help`` and ``description``), lets it add its arguments (an option of the schema
with ``config.options.add_cli_options``, its own with ``Argument.add_to``) and calls ``run`` with the parsed
arguments; the return value is the exit status, an ``ExamError`` is a one-line error with status 4, as for every
subcommand.
"""

from __future__ import annotations

import argparse
from typing import Protocol, runtime_checkable


@runtime_checkable
class Command(Protocol):
    """One ``exam-harness`` subcommand (see the module docstring)."""

    help: str  # one line, in ``exam-harness --help``
    description: str  # ``exam-harness NAME --help``

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the subcommand's arguments to its ``parser``."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the subcommand; the exit status."""
