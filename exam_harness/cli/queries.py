"""``exam-harness queries BANKS... --format tsv|jsonl``: the banks' queries, for a script of one's own."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exam_harness.config.options import Argument, choice


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "queries",
        help="List the queries of bank files or folders (id and text), e.g. to call a system from a script.",
        description="List the queries of bank files or folders, one per line: 'id<TAB>text' (tsv) or "
        '{"query_id", "text", "facets"} (jsonl); a query in several banks is listed once.',
    )
    Argument("banks", "Bank files or folders.", Path, nargs="+", metavar="BANK", positional=True).add_to(parser)
    Argument("format", "Output format (default: tsv).", choice("tsv", "jsonl"), default="tsv",
             metavar="{tsv,jsonl}").add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.extensions import cli_registries

    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    seen: set[str] = set()
    out = sys.stdout
    for bank in inputs.load_banks(args.banks):
        query = bank.query
        if query.id in seen:
            continue
        seen.add(query.id)
        if args.format == "tsv":
            # a tab or line break inside a text would split the line: written as a space
            out.write(f"{query.id}\t{' '.join(query.text.split())}\n")
        else:
            out.write(json.dumps({"query_id": query.id, "text": query.text, "facets": dict(query.facets)},
                                 ensure_ascii=False) + "\n")
    return 0
