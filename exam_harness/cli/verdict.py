"""``exam-harness verdict REPORT.json [gate options]``: the verdict of a saved document.

The same checks a pytest session makes, decided by the same function (results/verdict.py) from the
document alone: thresholds (``--fail-under``), the baseline run (``--baseline``), regressions against a
kept report (``--compare`` with ``--compare-fail``), incomplete runs and runs past ``--max-fallbacks``.
The gate options are pytest's (``config/options.py``) without the ``exam-`` prefix. The document is a pytest
report (``exam-report.json``, a kept report) or ``evaluate``'s (``evaluation.json``, ``evaluate --json``).
Exit status: 0 when every check passed, 1 when one failed (or the document's exam cases failed: a missed
required test point), 4 for a usage error, as the session that wrote the document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.config.options import GATES, SIGNIFICANCE, Argument, ExamOptions, add_cli_options, options_from_cli

if TYPE_CHECKING:
    from exam_harness.results.schema import ExamReport

GROUPS = (GATES, SIGNIFICANCE)
DOCUMENT = Argument("document", "exam-report.json (a pytest session's or a kept one), or evaluate's evaluation.json / "
                    "--json output.", Path, metavar="REPORT", positional=True)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "verdict", help="The CI verdict of a saved exam report or evaluation, with the gates of a pytest session.",
        description="Check a saved result document against the gates a pytest session takes (thresholds, the "
        "baseline, regressions against a kept report) and the checks it always makes (incomplete runs, grades read "
        "by a fallback rule); exit 1 when one fails, as the session would.")
    DOCUMENT.add_to(parser)
    add_cli_options(parser, GROUPS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.config.gates import check_measures, check_thresholds
    from exam_harness.extensions import cli_registries
    from exam_harness.results.document import read_document
    from exam_harness.results.verdict import Checks, decision

    options = options_from_cli(args, GROUPS)
    registries = cli_registries()  # plugin measures and gate figures (installed, ./conftest.py), named like built-ins
    registry = registries.measures
    check_thresholds(options.fail_under, registry, registries.gate_figures, "--fail-under")
    check_measures([a.measure for a in options.compare_fail], registry, "--compare-fail")
    reference = _reference(options)
    document = read_document(args.document)
    found = decision(document, Checks.of(options, reference, registry, registries.gate_figures))
    for result in found.verdict.gates:
        print(result.message, file=sys.stdout if result.passed else sys.stderr)
    if found.failed_cases:
        print(f"FAIL {found.failed_cases} exam case{'s' if found.failed_cases != 1 else ''} failed in the session "
              "(a missed required test point, or pairs that could not be graded)", file=sys.stderr)
    checks = len(found.verdict.gates)
    failed = sum(not r.passed for r in found.verdict.gates)
    counted = f"{checks} check{'s' if checks != 1 else ''}"
    print(f"verdict: {'passed' if found.passed else 'failed'} ({counted}" + (f", {failed} failed" if failed else "")
          + f") for {args.document}")
    return 0 if found.passed else 1


def _reference(options: ExamOptions) -> tuple[str, ExamReport] | None:
    """The kept report ``--compare`` names, as the session reads it: nothing kept is a warning (an error
    under ``--compare-required``) and the regressions are then not checked."""
    from exam_harness.core.errors import ConfigError
    from exam_harness.results.history import NothingKept
    from exam_harness.results.preflight import load_reference

    if options.compare_fail and options.compare is None:
        raise ConfigError("--compare-fail needs --compare [REF]: the kept report to compare with")
    try:
        return load_reference(options, Path.cwd())
    except NothingKept as exc:
        if options.compare_required:
            raise ConfigError(f"{exc} (--compare-required)") from None
        gated = " and the --compare-fail gates are not checked" if options.compare_fail else ""
        print(f"warning: {exc}; this document is not compared{gated}", file=sys.stderr)
        return None
