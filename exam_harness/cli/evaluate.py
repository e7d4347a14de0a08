"""``exam-harness evaluate RUN_FILES``: the method's leaderboards, correlations and agreement tables.

Without ``--grader`` the recorded grades of the Workbench paragraph file are replayed (choose a
grading run with ``--llm`` / ``--prompt-class`` when it holds several); with ``--bank BANK
--grader NAME`` every (passage, test point) pair of the pool is graded through the grade cache.
Options come from the one schema (``exam_harness/options.py``), as in pytest without the ``exam-`` prefix;
the analyses only this command draws have their own options here: ``--min-answers`` (the "min answers
= m" agreement views), ``--qrels`` / ``--qrels-level`` / ``--official-qrels`` (the runs scored over
given qrels files, with per-query correlations against the official qrels).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.cli.grades import Graded, add_input_arguments, obtain_grades, obtain_support, report_failures
from exam_harness.errors import ConfigError
from exam_harness.io.qrels import Qrels
from exam_harness.options import (
    EVALUATE,
    GRADING,
    RECORDED,
    SCORING,
    SIGNIFICANCE,
    add_cli_options,
    options_from_cli,
)
from exam_harness.preflight import check_writable

if TYPE_CHECKING:
    from exam_harness.analysis.trec_rag_agreement import AssignmentAgreement, HumanLabels
    from exam_harness.measures.context import ScoringContext
    from exam_harness.report.evaluation import ExternalQrels

GROUPS = (GRADING, SCORING, RECORDED, SIGNIFICANCE, EVALUATE)
DEFAULT_MIN_ANSWERS = (1, 2, 5)
OFFICIAL_FROM_JUDGMENTS = "judgments of the run files"


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "evaluate",
        help="Leaderboards (EXAM-Cover, n-EXAM, EXAM-Qrels measures), correlations and agreement tables.",
        description="Compute the method's leaderboards for chosen minimum grades from recorded grades or by "
        "grading with any grader, correlate them with an official leaderboard and tabulate agreement "
        "with human judgments.",
    )
    add_input_arguments(parser)
    add_cli_options(parser, GROUPS)
    parser.add_argument("--json", type=Path, metavar="OUT", help="Write the leaderboards as JSON.")
    parser.add_argument("--qrels-dir", type=Path, metavar="DIR",
                        help="Write the EXAM-Qrels files (one per label variant and minimum grade) here.")
    parser.add_argument("--plot", type=Path, metavar="DIR",
                        help="Draw the leaderboards (PNG and SVG) into this folder.")
    parser.add_argument("--export-workbench", type=Path, metavar="FILE",
                        help="Write passages, runs, judgments and grades as a Workbench paragraph file (.jsonl[.gz]).")
    parser.add_argument("--brief", action="store_true", help="Print only the correlations and agreement tables.")
    add_min_answers_argument(parser, default=None)
    parser.add_argument("--qrels", type=Path, nargs="+", action="extend", default=[], metavar="QRELS_FILE",
                        help="Score the runs over these trec_eval qrels files (repeatable) with the --measures, one "
                        "leaderboard per file and relevance level, correlated with --official; with official "
                        "qrels, also per query (and drawn under --plot).")
    parser.add_argument("--qrels-level", type=int, nargs="+", default=None, metavar="LEVEL",
                        help="Relevance levels of the --qrels files, one leaderboard each (default: 1, trec_eval's).")
    parser.add_argument("--official-qrels", type=Path, metavar="QRELS_FILE",
                        help="The official qrels (at --relevance-level) that per-query correlations compare with "
                        "(default: the human judgments in the run files, if any).")
    parser.set_defaults(func=run)


def add_min_answers_argument(parser: argparse.ArgumentParser, default: Sequence[int] | None) -> None:
    """``--min-answers M ...``; bare ``--min-answers`` means 1 2 5."""
    when = "default: 1 2 5" if default else "bare: 1 2 5; default: none"
    parser.add_argument("--min-answers", type=int, nargs="*", default=default, metavar="M",
                        help="Agreement with the judgments when a passage is relevant at tau if at least M test "
                        "points reach tau (its label: the M-th highest grade), with per-row kappa and the merged "
                        f"3-way table; one view per M ({when}).")


def min_answers_of(value: Sequence[int] | None) -> tuple[int, ...]:
    """The m values asked for (a bare option: 1 2 5); each must be a positive integer."""
    if value is None:
        return ()
    ms = tuple(value) or DEFAULT_MIN_ANSWERS
    bad = [m for m in ms if m < 1]
    if bad:
        raise ConfigError(f"--min-answers takes positive integers (test points per passage), got {bad[0]}")
    return ms


@dataclass(frozen=True)
class QrelsInputs:
    """The --qrels files (path -> qrels), the --official-qrels file, the --qrels-level levels."""

    files: dict[str, Qrels]
    official: Qrels | None
    levels: tuple[int, ...]


def load_external_qrels(args: argparse.Namespace) -> QrelsInputs:
    """The qrels options, read and checked before any grading: a bad line stops the command naming the
    file and line."""
    if args.qrels_level is not None and not args.qrels:
        raise ConfigError("--qrels-level needs --qrels QRELS_FILE: the qrels files to score the runs over")
    levels = tuple(dict.fromkeys(args.qrels_level or (1,)))
    if any(level < 1 for level in levels):
        raise ConfigError(f"--qrels-level takes levels >= 1 (at level 0 every judged passage, label 0 too, would "
                          f"count as relevant), got {min(levels)}")
    files = {str(path): _read_qrels(path) for path in args.qrels}
    official = _read_qrels(args.official_qrels) if args.official_qrels else None
    return QrelsInputs(files, official, levels)


def _read_qrels(path: Path) -> Qrels:
    from exam_harness.errors import InputError
    from exam_harness.io.qrels import read_qrels

    qrels = read_qrels(path)
    if not qrels:
        raise InputError("the qrels file holds no judgments", path=path, line=1,
                         expected="'query_id iteration passage_id label' lines")
    return qrels


def external_request(args: argparse.Namespace, graded: Graded, loaded: QrelsInputs, tie_order: str) -> ExternalQrels:
    """What --qrels scores: every run at its full depth, ordered for trec_eval (``tie_order``); the
    official qrels are --official-qrels, else the judgments of the run files."""
    from exam_harness.report.evaluation import ExternalQrels

    official = loaded.official
    runs = graded.view.data.runs
    rankings = {
        name: {q: (run.trec_order(q) if tie_order == "score" else run.top_k(q, len(ranked)))
               for q, ranked in run.rankings.items()}
        for name, run in sorted(runs.items())
    }
    name = str(args.official_qrels) if args.official_qrels else OFFICIAL_FROM_JUDGMENTS
    if official is None and graded.view.data.judgments:
        official = graded.view.data.judgments
    if not graded.plan.trec_measures:
        raise ConfigError("--qrels scores the runs by trec_eval measures, and --measures names none "
                          "(add one, e.g. --measures ndcg@10)")
    return ExternalQrels(rankings=rankings, qrels=loaded.files, measures=graded.plan.trec_measures,
                         relevance_levels=loaded.levels,
                         official_qrels=official, official_name=name,
                         official_relevance_level=graded.plan.relevance_level)


def human_agreement(ctx: ScoringContext, graded: Graded, human: HumanLabels) -> AssignmentAgreement:
    """The grader's TREC RAG nugget assignments against the human ones (at the plan's first tau)."""
    from exam_harness.analysis.trec_rag_agreement import assignment_agreement
    from exam_harness.sections.trec_rag import rag_assignments

    if not ctx.exam.importance:
        raise ConfigError("--human-assignments needs nuggets that carry an importance (a nuggetizer nugget file "
                          "among the banks)")
    plan, view = graded.plan, graded.view
    rows = rag_assignments(ctx, plan.k, plan.min_grade, view.points, view.query_texts, {})
    machine = ((row.run_id, row.qid, n.text or "", n.assignment) for row in rows for n in row.nuggets)
    return assignment_agreement(machine, human)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.io import load_leaderboard
    from exam_harness.report.build import exam_qrels
    from exam_harness.report.evaluation import evaluate_exam, scoring_context
    from exam_harness.report.evaluation_tables import print_evaluation

    options = options_from_cli(args, GROUPS)
    check_writable([("--json", args.json, False), ("--qrels-dir", args.qrels_dir, True), ("--plot", args.plot, True),
                    ("--export-workbench", args.export_workbench, False)])
    official = load_leaderboard(options.official) if options.official else None
    min_answers = min_answers_of(args.min_answers)
    human = None
    if options.human_assignments:
        from exam_harness.analysis.trec_rag_agreement import load_human_assignments

        human = load_human_assignments(options.human_assignments)  # read before any pair is graded
    loaded = load_external_qrels(args) if args.qrels or args.official_qrels else None
    graded = obtain_grades(args, options)
    plan = graded.plan
    ctx = scoring_context(graded.view, graded.outcome, plan, graded.inputs.responses)
    support = None
    if options.support:
        from dataclasses import replace

        from exam_harness.measures.context import ScoringContext

        credits, support = obtain_support(options, graded)
        ctx = ScoringContext(replace(ctx.exam, support=credits))
    external = external_request(args, graded, loaded, plan.tie_order) if loaded is not None else None
    result = evaluate_exam(ctx, graded.view, graded.outcome, graded.spec, plan, options, official=official,
                           min_answers=min_answers, external=external,
                           cache=str(options.cache) if options.cache is not None else None)
    if human is not None:
        result.trec_rag_agreement = human_agreement(ctx, graded, human)
    result.settings.runs = [str(p) for p in args.runs]
    result.settings.banks = [str(p) for p in args.bank]
    if options.official:
        result.settings.official = str(args.official)

    console = Console(highlight=False, markup=False)  # names in the output are data, not markup
    print_evaluation(result, console, brief=args.brief, label=plan.labels[0])
    written: list[Path] = []
    if args.json:
        written.append(result.write_json(args.json))
    if args.qrels_dir:
        from exam_harness.io.qrels import write_qrels

        for name, qrels in exam_qrels(ctx, plan, plan.min_grades).items():
            written.append(write_qrels(args.qrels_dir / name, qrels))
    if args.plot:
        from exam_harness.report.plots import plot_leaderboards

        written.extend(plot_leaderboards(result, args.plot))
        if result.external_qrels is not None and result.external_qrels.per_query:
            from exam_harness.report.plots import plot_per_query

            written.extend(plot_per_query(result.external_qrels, args.plot))
    if args.export_workbench:
        from exam_harness.io.workbench_export import export_view

        export_view(args.export_workbench, graded.view, graded.outcome, graded.spec)
        written.append(args.export_workbench)
    for path in written:
        console.print(f"wrote {path}", soft_wrap=True)
    failed = report_failures("evaluate", graded.outcome, graded.inputs.redact)
    if support is not None and support.failures:
        print(f"exam-harness evaluate: {len(support.failures):,} (sentence, cited document) pairs have no support "
              "grade and count as no support (e.g. " + "; ".join(
                  f"{p} on {t}: {m}" for (p, t), m in list(support.failures.items())[:3]) + ")", file=sys.stderr)
        failed = 1
    return failed
