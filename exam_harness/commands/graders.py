"""``exam-harness graders``: list the graders a session can use, built-in and from plugins."""

from __future__ import annotations

import argparse

from exam_harness.graders.registry import default_registry


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("graders", help="List the available graders.")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import pluggy

    from exam_harness import hookspecs

    registry = default_registry()
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(hookspecs)
    manager.load_setuptools_entrypoints("pytest11")
    manager.hook.pytest_exam_register_graders(registry=registry)
    for name, description in registry.describe().items():
        print(f"{name:<16} {description}".rstrip())
    return 0
