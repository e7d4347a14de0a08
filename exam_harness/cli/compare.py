"""``exam-harness compare OLD.json NEW.json``: what changed between two exam reports, per run and per query.

The same comparison as pytest's ``--exam-compare``: each run's mean per measure, the difference and a
paired permutation test over the queries both reports scored, then the features' tables (hook
``pytest_exam_compare_tables``: the flips feature's test points that flipped between answered and missed);
``--fail MEASURE:DROP`` exits 1 when a run dropped by more than allowed (``exam-cover:0.05`` absolute,
``exam-cover:5%`` relative).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.config.gates import Allowance, parse_allowance
from exam_harness.config.options import ROW_LIMIT, Argument, significance_level
from exam_harness.core.display import command_console


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("compare", help="Differences between two exam reports, per run and per query.")
    for argument in ARGUMENTS:
        argument.add_to(parser)
    ROW_LIMIT.add_to(parser, help="Per-query rows shown; 0 for all (default: 20).")
    parser.set_defaults(func=run)


# This subcommand's own arguments, with the schema's converters (exam_harness/config/options.py).
ARGUMENTS: tuple[Argument, ...] = (
    Argument("old", "The reference report (exam-report.json or a kept report).", Path, positional=True),
    Argument("new", "The report to compare with it.", Path, positional=True),
    Argument("measure", "Measures to compare, by name: exam-cover, n-exam-cover, nugget-f, a trec_eval measure "
             "(ndcg@10, recip_rank) or a plugin's measure; repeatable (default: exam-cover and n-exam-cover).",
             default=[], many=True, metavar="MEASURE"),
    Argument("fail", "Exit 1 when a run dropped by more than this: MEASURE:DROP or MEASURE:PCT%; repeatable.",
             parse_allowance, default=[], many=True, metavar="MEASURE:DROP"),
    Argument("alpha", "Significance level shown with each drop (default: 0.05).", significance_level, default=0.05),
)


def run(args: argparse.Namespace) -> int:
    from exam_harness.config.gates import COMPARED, check_measures
    from exam_harness.extensions import cli_registries
    from exam_harness.report.compare import changes_table, query_table
    from exam_harness.results.gate_checks import compare, regression_failures
    from exam_harness.results.read import read_report

    registries = cli_registries()
    registry = registries.measures  # plugin measures (installed, ./conftest.py) are named like built-ins
    allowances: list[Allowance] = args.fail
    alpha: float = args.alpha
    measures = list(dict.fromkeys([*(args.measure or COMPARED), *(a.measure for a in allowances)]))
    check_measures(args.measure, registry, "--measure")
    check_measures([a.measure for a in allowances], registry, "--fail")
    old, new = read_report(args.old), read_report(args.new)
    changes = compare(old, new, measures, allowances, registry)
    console = command_console()
    console.print(changes_table(changes, new, title_suffix=f"from {args.old.name} to {args.new.name}",
                                registry=registry))
    for measure in measures:
        console.print(query_table(old, new, measure, limit=args.limit or None, registry=registry))
    for tables in registries.hook.pytest_exam_compare_tables(
            old=old, new=new, title_suffix=f"from {args.old.name} to {args.new.name}", limit=args.limit or None):
        for table in tables or ():
            console.print(table)
    failures = regression_failures(changes, allowances, new, args.old.name, alpha, registry, old=old)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0

