"""``exam-harness compare OLD.json NEW.json``: what changed between two exam reports, per run and per query.

The same comparison as pytest's ``--exam-compare``: each run's mean per measure, the difference and a
paired permutation test over the queries both reports scored; ``--fail MEASURE:DROP`` exits 1 when a
run dropped by more than allowed (``exam-cover:0.05`` absolute, ``exam-cover:5%`` relative).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.errors import ConfigError
from exam_harness.gates import Allowance, parse_allowance
from exam_harness.options import significance_level


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("compare", help="Differences between two exam reports, per run and per query.")
    parser.add_argument("old", type=Path, help="The reference report (exam-report.json or a kept report).")
    parser.add_argument("new", type=Path, help="The report to compare with it.")
    parser.add_argument("--measure", action="append", default=[], metavar="MEASURE",
                        help="Measures to compare, by name: exam-cover, n-exam-cover, nugget-f, a trec_eval measure "
                        "(ndcg@10, recip_rank) or a plugin's measure; repeatable "
                        "(default: exam-cover and n-exam-cover).")
    parser.add_argument("--fail", action="append", default=[], metavar="MEASURE:DROP",
                        help="Exit 1 when a run dropped by more than this: MEASURE:DROP or MEASURE:PCT%%; repeatable.")
    parser.add_argument("--alpha", default="0.05", help="Significance level shown with each drop (default: 0.05).")
    parser.add_argument("--limit", type=int, default=20, help="Per-query rows shown; 0 for all (default: 20).")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.extensions import cli_registries
    from exam_harness.gates import COMPARED, check_measures, compare, regression_failures
    from exam_harness.report.compare import changes_table, query_table
    from exam_harness.results.read import read_report

    registry = cli_registries().measures  # plugin measures (installed, ./conftest.py) are named like built-ins
    allowances = [_allowance(raw) for raw in args.fail]
    alpha = _alpha(args.alpha)
    measures = list(dict.fromkeys([*(args.measure or COMPARED), *(a.measure for a in allowances)]))
    check_measures(args.measure, registry, "--measure")
    check_measures([a.measure for a in allowances], registry, "--fail")
    old, new = read_report(args.old), read_report(args.new)
    changes = compare(old, new, measures, allowances, registry)
    console = Console(highlight=False, markup=False)  # names in the output are data, not markup
    console.print(changes_table(changes, new, title_suffix=f"from {args.old.name} to {args.new.name}",
                                registry=registry))
    for measure in measures:
        console.print(query_table(old, new, measure, limit=args.limit or None, registry=registry))
    failures = regression_failures(changes, allowances, new, args.old.name, alpha, registry)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


def _allowance(raw: str) -> Allowance:
    try:
        return parse_allowance(raw)
    except ValueError as exc:
        raise ConfigError(f"--fail {exc}, got {raw!r}") from None


def _alpha(raw: str) -> float:
    try:
        return significance_level(raw)
    except ValueError as exc:
        raise ConfigError(f"--alpha {exc}, got {raw!r}") from None
