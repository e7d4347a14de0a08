"""``exam-harness graders [NAME]``: the graders a session can use (built-in, installed plugins and the
current folder's conftest.py), or one grader's options."""

from __future__ import annotations

import argparse

from exam_harness.config.options import Argument


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("graders", help="List the available graders, or the options of one.")
    Argument("name", "A grader whose options to list (default: list every grader).", nargs="?",
             positional=True).add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.extensions import cli_registries
    from exam_harness.graders.base import declared_options

    registry = cli_registries().graders
    if args.name is None:
        for name, description in registry.describe().items():
            print(f"{name:<16} {description}".rstrip())
        return 0
    factory = registry.get(args.name)  # unknown names: ConfigError with a did-you-mean
    description = registry.describe()[args.name]
    print(f"{args.name}: {description}" if description else args.name)
    options = declared_options(factory)
    if not options:
        print("  (declares no options)")
        return 0
    print("options (--exam-grader-option KEY=VALUE, or --grader-option KEY=VALUE):")
    width = max(len(o.name) for o in options)
    for option in options:
        default = "none" if option.default is None else option.default
        shown = option.help if "(default" in option.help else f"{option.help} (default: {default})"
        print(f"  {option.name:<{width}}  {shown}")
    return 0
