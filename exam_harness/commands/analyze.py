"""``exam-harness analyze ANALYSIS RUN_FILES``: the human-in-the-loop analyses of a graded exam.

Analyses: ``verify`` (per test point, extracted answers and grades), ``grid`` (per passage of a
query, every test point's grade and answer), ``missing`` (judged-relevant passages no test point
covers), ``spurious`` (test points that judged non-relevant passages cover), ``agreement`` (grade x
judgment tables and Cohen's kappa) and ``edit-impact`` (old vs new bank: changes, label flips and
score moves, grading only the changed test points through the cache). Each prints rich tables and
writes ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from exam_harness.commands.evaluate import add_source_arguments, grade_source, show_progress
from exam_harness.errors import ConfigError

ANALYSES = ("verify", "grid", "missing", "spurious", "agreement", "edit-impact")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "analyze",
        help="Human-in-the-loop analyses: verify grading, grade grid, missing in bank, spurious test points, "
        "agreement, bank edit impact.",
        description="Analyses that show which grades to check and which test points to add, fix or drop.",
    )
    inner = parser.add_subparsers(dest="analysis", metavar="ANALYSIS")
    inner.required = True

    def common(name: str, help_text: str, *, grades: bool = True) -> argparse.ArgumentParser:
        sub = inner.add_parser(name, help=help_text, description=help_text)
        add_source_arguments(sub)
        sub.add_argument("--json", type=Path, metavar="OUT", help="Write the analysis as JSON.")
        sub.add_argument("--limit", type=int, default=20, help="Rows shown per table; 0 for all (default: 20).")
        if grades:
            sub.add_argument("--query", help="Only this query (default: all).")
        sub.set_defaults(func=run)
        return sub

    verify = common("verify", "Per test point: the extracted answers with their grades, highest first.")
    verify.add_argument("--test-point", help="Only this test point id (default: all of the queries chosen).")
    verify.add_argument("--min-grade", type=int, default=0, help="Hide answers graded below this (default: 0).")

    grid = common("grid", "Per passage of one query: every test point's grade (and answer with --answers).")
    grid.add_argument("--passage", action="append", default=[], help="Only these passages; repeatable (default: the pool).")
    grid.add_argument("--answers", action="store_true", help="Show the extracted answers under the grades.")

    for name, text in (
        ("missing", "Passages judged relevant that reach no grade >= TAU on any test point (the bank needs a question)."),
        ("spurious", "Test points ranked by how often judged non-relevant passages reach grade >= TAU on them."),
    ):
        sub = common(name, text)
        sub.add_argument("--min-grade", type=int, help="Minimum grade tau (default: the grader's, 4 for self-ratings).")
        sub.add_argument("--relevance-level", type=int, default=2,
                         help="Judgment level counted relevant: 2 for TREC DL, 1 for CAR (default: 2).")

    agreement = common("agreement", "Grade x judgment counts, lenient / strict binarisations and Cohen's kappa.", grades=False)
    agreement.add_argument("--relevance-level", type=int, default=2,
                           help="Judgment level counted relevant: 2 for TREC DL, 1 for CAR (default: 2).")
    agreement.add_argument("--min-grade", type=int, nargs="*", default=[], help="Extra binarisations at these grades.")

    impact = inner.add_parser(
        "edit-impact",
        help="Old vs new bank: changed test points, passages whose label changes, systems whose scores move.",
        description="Grade only the queries an edit touches (old grades from the cache, new grades for changed "
        "and added test points) and report the bank diff, label changes and score moves.",
    )
    impact.add_argument("runs", nargs="+", type=Path, metavar="RUN_FILE", help="Workbench paragraph file(s) or runs.")
    impact.add_argument("--old", type=Path, required=True, action="append", metavar="BANK", help="The bank before the edit.")
    impact.add_argument("--new", type=Path, required=True, action="append", metavar="BANK", help="The bank after the edit.")
    impact.add_argument("--grader", default="embedding", help="Grader of both banks (default: embedding).")
    impact.add_argument("--grader-option", action="append", default=[], metavar="KEY=VALUE", help="Grader option, repeatable.")
    impact.add_argument("--model", help="Model name or local path for the grader (default: the grader's own).")
    impact.add_argument("--cache", default=".exam-cache/grades.sqlite", metavar="PATH",
                        help="SQLite grade cache holding the old grades (default: .exam-cache/grades.sqlite).")
    impact.add_argument("--batch-size", type=int, help="Pairs per grading batch (default: the grader's).")
    impact.add_argument("--device", help="Device for model graders (default: automatic).")
    impact.add_argument("--min-grade", type=int, help="Minimum grade tau (default: the grader's).")
    impact.add_argument("--k", type=int, default=20, help="Rank cut-off of the runs (default: 20).")
    impact.add_argument("--label", default="max-grade", choices=("max-grade", "count", "at-least-m"),
                        help="Qrels label variant (default: max-grade).")
    impact.add_argument("--measures", nargs="*", default=["P@20", "ndcg@10"], help="trec_eval measures (default: P@20 ndcg@10).")
    impact.add_argument("--limit", type=int, default=20, help="Rows shown per table; 0 for all (default: 20).")
    impact.add_argument("--json", type=Path, metavar="OUT", help="Write the analysis as JSON.")
    impact.add_argument("--no-progress", action="store_true", help="Do not draw the grading progress bar.")
    impact.set_defaults(func=run_edit_impact)


def _limit(args: argparse.Namespace) -> int | None:
    if args.limit < 0:
        raise ConfigError(f"--limit must be >= 0, got {args.limit}")
    return None if args.limit == 0 else args.limit


def _write_json(path: Path | None, payload: Any) -> None:
    if path is None:
        return
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {path}")


def _tau(args: argparse.Namespace, default: int) -> int:
    tau = args.min_grade if args.min_grade is not None else default
    if tau < 1:
        raise ConfigError(f"--min-grade must be >= 1, got {tau}")
    return int(tau)


def run(args: argparse.Namespace) -> int:
    from exam_harness.evaluation import analyses, render
    from exam_harness.evaluation.pipeline import obtain_grades
    from exam_harness.io import load_runs

    limit = _limit(args)
    loaded = load_runs(args.runs)
    view, table = obtain_grades(loaded.data, grade_source(args), progress=render.progress_factory(show_progress(args)))
    console = render.console_for()
    payload: Any
    if args.analysis == "verify":
        reports = analyses.verify_grading(view, table, query=args.query, test_point=args.test_point,
                                          min_grade=args.min_grade)
        for t in render.verify_tables(reports, limit=limit):
            console.print(t)
        payload = [r.model_dump(mode="json") for r in reports]
    elif args.analysis == "grid":
        if args.query is None:
            raise ConfigError("analyze grid needs --query QUERY_ID")
        grid = analyses.grade_grid(view, table, query=args.query, passages=args.passage or None)
        console.print(render.grid_table(grid, answers=args.answers, limit=limit))
        payload = grid.model_dump(mode="json")
    elif args.analysis == "missing":
        result = analyses.missing_in_bank(view, table, min_grade=_tau(args, table.default_min_grade),
                                          relevance_level=args.relevance_level, query=args.query)
        for t in render.missing_tables(result, limit=limit):
            console.print(t)
        payload = result.model_dump(mode="json")
    elif args.analysis == "spurious":
        tau = _tau(args, table.default_min_grade)
        points = analyses.spurious_test_points(view, table, min_grade=tau, relevance_level=args.relevance_level,
                                               query=args.query)
        console.print(render.spurious_table(points, min_grade=tau, relevance_level=args.relevance_level, limit=limit))
        payload = {"min_grade": tau, "relevance_level": args.relevance_level,
                   "test_points": [p.model_dump(mode="json") for p in points]}
    else:  # agreement
        from exam_harness.evaluation.agreement import agreement_tables

        if not loaded.data.judgments:
            raise ConfigError("the run files hold no human judgments to agree with")
        tps = {q: view.test_points[q] for q in view.queries}
        result_a = agreement_tables(table.grades, tps, loaded.data.judgments, relevance_level=args.relevance_level,
                                    min_grades=args.min_grade)
        for t in render.agreement_renderables(result_a):
            console.print(t)
        payload = result_a.model_dump(mode="json")
    _write_json(args.json, payload)
    return _failures(table)


def _failures(table: Any) -> int:
    if table.failures:
        print(f"exam-harness analyze: {len(table.failures):,} pool pairs have no grade "
              f"(e.g. {'; '.join(table.summary.failure_examples)})", file=sys.stderr)
        return 1
    return 0


def run_edit_impact(args: argparse.Namespace) -> int:
    from exam_harness.cache import GradeCache
    from exam_harness.evaluation import render
    from exam_harness.evaluation.edit_impact import bank_edit_impact
    from exam_harness.evaluation.pipeline import grader_registry, load_banks, parse_options
    from exam_harness.graders.base import GraderConfig
    from exam_harness.io import load_runs

    limit = _limit(args)
    if args.k < 1:
        raise ConfigError(f"--k must be >= 1, got {args.k}")
    loaded = load_runs(args.runs)
    old_banks, new_banks = load_banks(args.old), load_banks(args.new)
    config = GraderConfig(model=args.model, options=parse_options(args.grader_option), data=loaded.data,
                          batch_size=args.batch_size, device=args.device)
    grader = grader_registry().create(args.grader, config)
    tau = _tau(args, grader.spec().default_min_grade)
    cache = GradeCache(None if str(args.cache).lower() == "none" else Path(args.cache))
    try:
        impact = bank_edit_impact(
            loaded.data, old_banks, new_banks, grader, cache, min_grade=tau, k=args.k, label=args.label,
            measures=args.measures, progress=render.progress_factory(show_progress(args)),
        )
    finally:
        grader.close()
        cache.close()
    console = render.console_for()
    for t in render.edit_impact_tables(impact, limit=limit):
        console.print(t)
    console.print(render.grading_line(impact.old_grading, "old bank"), soft_wrap=True)
    console.print(render.grading_line(impact.new_grading, "new bank"), soft_wrap=True)
    _write_json(args.json, impact.model_dump(mode="json"))
    failures = (impact.old_grading.failures if impact.old_grading else 0) + (impact.new_grading.failures if impact.new_grading else 0)
    if failures:
        print(f"exam-harness analyze edit-impact: {failures:,} pairs failed to grade and count as uncovered", file=sys.stderr)
        return 1
    return 0
