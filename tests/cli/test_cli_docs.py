"""docs/cli.md lists every subcommand the command line registers (issue 36: it left out compare, calibrate, label
and models), the in-tree features' included, and nothing it does not."""

from __future__ import annotations

import re

from exam_harness.cli import COMMANDS, build_parser
from tests.paths import REPO


def documented() -> list[str]:
    text = (REPO / "docs" / "cli.md").read_text()
    block = text.split("```", 2)[1]
    return [m.group(1) for m in re.finditer(r"^exam-harness ([a-z][a-z-]*)", block, re.MULTILINE)]


def in_tree_commands() -> list[str]:
    from exam_harness.core.registry import Registry
    from exam_harness.features import default_manager

    registry: Registry[object] = Registry("subcommand")
    default_manager().hook.pytest_exam_register_commands(registry=registry)
    return registry.names()


def test_docs_cli_lists_every_registered_subcommand() -> None:
    parser = build_parser()
    registered = next(a for a in parser._actions if a.dest == "command").choices  # argparse's subparsers
    assert registered is not None
    assert sorted(documented()) == sorted(registered)
    # the built-in modules and the in-tree features' subcommands (view), nothing of a plugin's
    assert sorted(documented()) == sorted([*(name.replace("_", "-") for name in COMMANDS), *in_tree_commands()])
    assert len(documented()) == len(set(documented()))
