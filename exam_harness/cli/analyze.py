"""``exam-harness analyze ANALYSIS RUN_FILES``: the human-in-the-loop analyses of a graded exam.

Analyses: ``verify`` (per test point, extracted answers and grades), ``grid`` (per passage of a
query, every test point's grade and answer), ``missing`` (judged-relevant passages no test point
covers), ``spurious`` (test points that judged non-relevant passages cover), ``agreement`` (grade x
judgment tables and Cohen's kappa) and ``edit-impact`` (old vs new bank: changes, label flips and
score moves, grading only the changed test points through the cache). Each prints rich tables and
writes ``--json``. Grading and scoring options come from the one schema (``exam_harness/config/options.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exam_harness.config.options import (
    BANK_FILES,
    GRADING,
    JSON_OUT,
    RECORDED,
    ROW_LIMIT,
    RUN_FILES,
    SCORING,
    Argument,
    ExamOptions,
    add_cli_options,
    integer,
    options_from_cli,
)
from exam_harness.core.errors import ConfigError
from exam_harness.exam.inputs import ExamView
from exam_harness.grading.passes import GradingOutcome
from exam_harness.session.grades import Graded, obtain_grades, report_failures, show_progress

if TYPE_CHECKING:
    from rich.console import Console

    from exam_harness.exam.plan import ExamPlan

GROUPS = (GRADING, SCORING, RECORDED)
IMPACT_GROUPS = (GRADING, SCORING)
# edit-impact grades the edited bank, so it cannot replay recorded grades: it grades by default
IMPACT_DEFAULTS = {"grader": "embedding"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "analyze",
        help="Human-in-the-loop analyses: verify grading, grade grid, missing in bank, spurious test points, "
        "agreement, bank edit impact.",
        description="Analyses that show which grades to check and which test points to add, fix or drop.",
    )
    inner = parser.add_subparsers(dest="analysis", metavar="ANALYSIS")
    inner.required = True

    def common(name: str, help_text: str, *, runs: str = "+") -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = inner.add_parser(name, help=help_text, description=help_text)
        RUN_FILES.add_to(sub, nargs=runs)
        BANK_FILES.add_to(sub)
        add_cli_options(sub, GROUPS)
        for argument in (JSON_OUT, ROW_LIMIT, QUERY, REVEAL):
            argument.add_to(sub)
        sub.set_defaults(func=run)
        return sub

    verify = common("verify", "Per test point: the extracted answers with their grades, highest first.")
    TEST_POINT.add_to(verify)
    HIDE_BELOW.add_to(verify)
    grid = common("grid", "Per passage of one query: every test point's grade (and answer with --answers).")
    PASSAGES.add_to(grid)
    ANSWERS.add_to(grid)
    common("missing", "Passages judged relevant that reach no grade >= TAU on any test point "
                      "(the bank needs a question).")
    common("spurious", "Test points ranked by how often judged non-relevant passages reach grade >= TAU on them.")
    # the run files are optional beside --grades (checked in run)
    agreement = common("agreement", "Grade x judgment counts, lenient / strict binarisations and Cohen's kappa "
                                    "(plus one binarisation per --min-grade); the 'min answers = m' views with "
                                    "per-row kappa and the merged 3-way table; the recorded direct grades' tables.",
                       runs="*")
    from exam_harness.cli.evaluate import DEFAULT_MIN_ANSWERS, add_min_answers_argument

    add_min_answers_argument(agreement, default=DEFAULT_MIN_ANSWERS)
    GRADE_FILES.add_to(agreement)
    TEAM_LABELS.add_to(agreement)

    impact = inner.add_parser(
        "edit-impact",
        help="Old vs new bank: changed test points, passages whose label changes, systems whose scores move.",
        description="Grade only the queries an edit touches (old grades from the cache, new grades for changed "
        "and added test points) and report the bank diff, label changes and score moves (first --labels variant).",
    )
    RUN_FILES.add_to(impact, help="Workbench paragraph file(s) or runs.")
    OLD_BANK.add_to(impact)
    NEW_BANK.add_to(impact)
    add_cli_options(impact, IMPACT_GROUPS, defaults=IMPACT_DEFAULTS)
    ROW_LIMIT.add_to(impact)
    JSON_OUT.add_to(impact)
    impact.set_defaults(func=run_edit_impact)


# This subcommand's own arguments (the shared ones are in exam_harness/config/options.py).
QUERY = Argument("query", "Only this query (default: all).")
REVEAL = Argument("reveal", "Show the text of secret banks' test points and the answers graded on them (for the "
                  "bank's owner; default: ids only).", None)
TEST_POINT = Argument("test-point", "Only this test point id (default: all of the queries chosen).")
HIDE_BELOW = Argument("hide-below", "Hide answers graded below this (default: 0).", integer(0), default=0,
                      metavar="GRADE")
PASSAGES = Argument("passage", "Only these passages; repeatable (default: the pool).", default=[], many=True)
ANSWERS = Argument("answers", "Show the extracted answers under the grades.", None)
GRADE_FILES = Argument(
    "grades", "Instead of grades x judgments: the agreement of two graders, or two runs of one grader; give it twice "
    "(Workbench files with exam_grades, e.g. from evaluate --export-workbench, compared per (passage, test point); "
    "or two exam-report.json, compared per case by best grade). Run files are then not needed.", Path, default=[],
    many=True, metavar="FILE")
OLD_BANK = Argument("old", "The bank before the edit.", Path, many=True, required=True, metavar="BANK")
NEW_BANK = Argument("new", "The bank after the edit.", Path, many=True, required=True, metavar="BANK")
# --labels already names the EXAM-Qrels label variants: the team's labels file is --team-labels
TEAM_LABELS = Argument("team-labels", "Instead of grades x judgments: the grader's per-pair verdicts (grade >= TAU) "
                       "against a team's own labels (exam-harness label): precision, recall and kappa, with 95% "
                       "intervals; then every other grader whose grades the cache holds for labelled pairs.", Path,
                       metavar="FILE")


def _label_agreement(args: argparse.Namespace, graded: Graded, options: ExamOptions) -> int:
    """The session's grader's verdicts against the labels of ``--team-labels``, then every other grader whose
    grades the cache holds for labelled pairs (exam_harness/analysis/labels.py, label_graders.py)."""
    from exam_harness.analysis.label_graders import cached_agreement, labelled_requests
    from exam_harness.analysis.labels import LabelAgreement, label_agreement, read_labels
    from exam_harness.graders.base import GraderConfig
    from exam_harness.grading.cache import GradeCache

    labels = read_labels(args.team_labels)
    tau = graded.plan.min_grade
    found = label_agreement(graded.outcome.grades, labels, tau)

    def shown(value: float | None, interval: tuple[float, float]) -> str:
        return "–" if value is None else f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"

    def figures(agreement: LabelAgreement) -> str:
        return (f"precision {shown(agreement.precision, agreement.precision_interval)}, recall "
                f"{shown(agreement.recall, agreement.recall_interval)}, kappa "
                + ("–" if agreement.kappa is None else f"{agreement.kappa:.3f}"))

    print(f"{graded.spec.name} against {args.team_labels} ({found.pairs} labelled pairs graded, grade >= {tau}): "
          + figures(found))
    cache = GradeCache(options.cache)
    try:
        banks = [bank for file_banks in graded.inputs.banks.values() for bank in file_banks]
        others = cached_agreement(cache, graded.registries.graders,
                                  labelled_requests(labels, banks, graded.inputs.data), labels,
                                  data=graded.inputs.data, session=graded.spec,
                                  session_config=GraderConfig(model=options.model, options=options.grader_options))
    finally:
        cache.close()
    if others.rows or others.unprobed:
        print(f"the other graders whose grades the cache {options.cache or '(in memory)'} names:")
    for row in others.rows:
        who = ", ".join(part for part in (row.model, f"prompt {row.prompt}" if row.prompt else None) if part)
        print(f"  {row.grader}{f' ({who})' if who else ''}: {row.agreement.pairs} labelled pairs cached, grade >= "
              f"{row.min_grade}: {figures(row.agreement)}")
    for line in others.unprobed:
        print(f"  not measured: {line}")
    calibration = _calibration(args, graded, options)
    session_row = {"grader": graded.spec.name, "model": graded.spec.model, "prompt": graded.spec.prompt_class,
                   "min_grade": tau, "session": True, **dataclasses.asdict(found)}
    _write_json(args.json, {**session_row, "labels": str(args.team_labels),
                            "graders": [session_row, *({"grader": r.grader, "model": r.model, "prompt": r.prompt,
                                                        "min_grade": r.min_grade, "session": False,
                                                        **dataclasses.asdict(r.agreement)} for r in others.rows)],
                            "not_measured": others.unprobed,
                            **({"calibration": calibration} if calibration is not None else {})})
    return 0


def _calibration(args: argparse.Namespace, graded: Graded, options: ExamOptions) -> dict[str, Any] | None:
    """The section the team's labels add where a feature computes one (the calibration feature's ``calibration``:
    each judge's figures estimated with the labels' sample weights, by field, the judges against each other, the
    corrected scores): asked for through the features' scoring inputs with the labels as their option
    ``team_labels``, computed and printed as every output shows it; its content for the JSON (None: no such
    section)."""
    sections = graded.registries.sections
    if "calibration" not in sections:
        return None
    from rich.console import Console

    from exam_harness.report.evaluation import score_evaluation
    from exam_harness.results.scored import collect_scoring_inputs

    given = dataclasses.replace(options, feature_values=(*options.feature_values, ("team_labels", args.team_labels)))
    inputs = collect_scoring_inputs(given, "evaluate", graded.registries.hook)
    scored = score_evaluation(graded.view, graded.outcome, graded.plan, graded.spec,
                              responses=graded.inputs.responses)
    section = sections.get("calibration")
    content = section.compute(dataclasses.replace(scored, inputs=inputs))
    if content is None:
        return None
    console = Console(highlight=False, markup=False)
    for part in section.terminal(content):
        console.print(part)
    return content.model_dump(mode="json")


def _limit(args: argparse.Namespace) -> int | None:
    return None if args.limit == 0 else int(args.limit)  # ROW_LIMIT's converter refuses a negative limit


def _write_json(path: Path | None, payload: Any) -> None:
    if path is None:
        return
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.analysis import analyses
    from exam_harness.report import analysis_tables as tables

    limit = _limit(args)
    options = options_from_cli(args, GROUPS)
    if args.analysis == "agreement" and args.grades:
        return _grader_agreement(args, options.min_grade)
    if not args.runs:
        raise ConfigError(f"analyze {args.analysis} needs RUN_FILE(s)"
                          + (" (or --grades A --grades B)" if args.analysis == "agreement" else ""))
    from exam_harness.extensions import cli_registries

    graded = obtain_grades(args, options, registries=cli_registries())
    if args.analysis == "agreement" and getattr(args, "team_labels", None) is not None:
        return _label_agreement(args, graded, options)
    view, outcome, plan = graded.view, graded.outcome, graded.plan
    if graded.inputs.redacted and not args.reveal:
        view, outcome = _without_secrets(graded)
    console = Console(highlight=False, markup=False)  # names in the output are data, not markup
    payload: Any
    if args.analysis == "verify":
        reports = analyses.verify_grading(view, outcome, query=args.query, test_point=args.test_point,
                                          min_grade=args.hide_below)
        for t in tables.verify_tables(reports, limit=limit):
            console.print(t)
        payload = [r.model_dump(mode="json") for r in reports]
    elif args.analysis == "grid":
        if args.query is None:
            raise ConfigError("analyze grid needs --query QUERY_ID")
        grid = analyses.grade_grid(view, outcome, query=args.query, passages=args.passage or None)
        console.print(tables.grid_table(grid, answers=args.answers, limit=limit))
        payload = grid.model_dump(mode="json")
    elif args.analysis == "missing":
        result = analyses.missing_in_bank(view, outcome, min_grade=plan.min_grade,
                                          relevance_level=plan.relevance_level, query=args.query)
        for t in tables.missing_tables(result, limit=limit):
            console.print(t)
        payload = result.model_dump(mode="json")
    elif args.analysis == "spurious":
        points = analyses.spurious_test_points(view, outcome, min_grade=plan.min_grade,
                                               relevance_level=plan.relevance_level, query=args.query)
        console.print(tables.spurious_table(points, min_grade=plan.min_grade, relevance_level=plan.relevance_level,
                                            limit=limit))
        payload = {"min_grade": plan.min_grade, "relevance_level": plan.relevance_level,
                   "test_points": [p.model_dump(mode="json") for p in points]}
    else:  # agreement
        payload = _agreement(args, view, outcome, plan, options.min_grade, console)
    _write_json(args.json, payload)
    return report_failures("analyze", outcome, graded.inputs.redact)


def _agreement(
    args: argparse.Namespace, view: ExamView, outcome: GradingOutcome, plan: ExamPlan, min_grades: Sequence[int],
    console: Console,
) -> dict[str, Any]:
    """The agreement tables; the min-answers views (``--min-answers``, default 1 2 5) and, when the files
    hold recorded direct grades, one view per direct grading run. JSON: the max-grade tables' keys, plus
    ``min_answers`` and ``direct_agreement`` (present only when the files hold direct grades)."""
    from exam_harness.analysis.agreement import agreement_tables, direct_agreement, min_answers_agreement
    from exam_harness.cli.evaluate import min_answers_of
    from exam_harness.report import analysis_tables as tables
    from exam_harness.report.evaluation_tables import agreement_view_tables

    judgments = view.data.judgments
    if not judgments:
        raise ConfigError("the run files hold no human judgments to agree with")
    tps = {q: view.test_points[q] for q in view.queries}
    result = agreement_tables(outcome.grades, tps, judgments, relevance_level=plan.relevance_level,
                              min_grades=min_grades)
    views = min_answers_agreement(outcome.grades, tps, judgments, min_answers_of(args.min_answers),
                                  relevance_level=plan.relevance_level, min_grades=min_grades)
    direct = direct_agreement(view.data.recorded, judgments, relevance_level=plan.relevance_level)
    for t in [*tables.agreement_renderables(result), *agreement_view_tables(views, direct)]:
        console.print(t)
    payload: dict[str, Any] = result.model_dump(mode="json")
    payload["min_answers"] = [v.model_dump(mode="json") for v in views]
    if direct:
        payload["direct_agreement"] = [v.model_dump(mode="json") for v in direct]
    return payload


def _grader_agreement(args: argparse.Namespace, min_grades: Sequence[int]) -> int:
    """``analyze agreement --grades A --grades B``: two graders' (or two runs') grades against each other."""
    from rich.console import Console

    from exam_harness.analysis.grader_agreement import grader_agreement
    from exam_harness.report.analysis_tables import grader_agreement_tables

    if len(args.grades) != 2:
        raise ConfigError(f"--grades compares two files; {len(args.grades)} given")
    if args.runs or args.bank:
        raise ConfigError("--grades compares two grade files by themselves; leave out RUN_FILE and --bank")
    (a, unit_a, tau_a), (b, unit_b, tau_b) = (_grades_of(path) for path in args.grades)
    if unit_a != unit_b:
        raise ConfigError(f"--grades {args.grades[0]} holds {unit_a} grades and {args.grades[1]} {unit_b} grades; "
                          "compare two Workbench files or two exam-report.json")
    tau = min_grades[0] if min_grades else tau_a if tau_a is not None else tau_b if tau_b is not None else 4
    result = grader_agreement(a, b, name_a=str(args.grades[0]), name_b=str(args.grades[1]), unit=unit_a,
                              min_grade=tau)
    if not result.common:
        raise ConfigError(f"{args.grades[0]} and {args.grades[1]} grade no {unit_a} in common")
    console = Console(highlight=False, markup=False)
    for table in grader_agreement_tables(result):
        console.print(table)
    _write_json(args.json, result.model_dump(mode="json"))
    return 0


def _grades_of(path: Path) -> tuple[dict[Any, int], str, int | None]:
    """(unit -> grade, unit kind, the file's tau if it says one) of a JSON report or a Workbench file."""
    if path.suffix == ".json":
        from exam_harness.results.read import read_report

        report = read_report(path)
        grades: dict[Any, int] = {(o.run, o.test_point_id): o.best_grade for o in report.outcomes
                                  if o.best_grade is not None}
        return grades, "case", report.settings.min_grade
    from exam_harness.exam.inputs import ExamInputs, is_direct_id
    from exam_harness.extensions import cli_registries
    from exam_harness.grading.passes import choose_grading_run

    registries = cli_registries()
    data = ExamInputs(registries.bank_formats, registries.run_formats).load_runs([path])
    try:
        llm, prompt_class = choose_grading_run(data)
    except ConfigError as exc:
        raise ConfigError(f"--grades {path}: {exc}") from None
    grades = {}
    for pair, records in data.recorded.items():
        if is_direct_id(pair[1]):
            continue
        grade = next((r.grade for r in records if r.llm == llm and r.prompt_class == prompt_class), None)
        if grade is not None:
            grades[pair] = grade
    return grades, "pair", None


def _without_secrets(graded: Graded) -> tuple[ExamView, GradingOutcome]:
    """The view and outcome of a secret exam as analyses may quote them: secret test points' texts,
    gold answers and the answers graded on them left out (the ids stay, so the bank owner can look up)."""
    secret = {tp.id for banks in graded.inputs.banks.values() for b in banks for tp in b.test_points
              if b.secret or graded.inputs.redact_all}
    print(f"exam-harness analyze: {len(secret):,} test points of secret banks are shown by id only "
          "(--reveal shows their text, for the bank's owner)", file=sys.stderr)
    answers = {pair: None if pair[1] in secret else answer for pair, answer in graded.outcome.answers.items()}
    return graded.view.without_secrets(secret.__contains__), dataclasses.replace(graded.outcome, answers=answers)


def run_edit_impact(args: argparse.Namespace) -> int:
    from rich.console import Console

    from exam_harness.analysis.edit_impact import bank_edit_impact
    from exam_harness.core.progress import GradingProgress
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.extensions import cli_registries
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.setup import open_grading
    from exam_harness.report import analysis_tables as tables

    limit = _limit(args)
    options = options_from_cli(args, IMPACT_GROUPS, defaults=IMPACT_DEFAULTS)
    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    data = inputs.load_runs(args.runs)
    old_banks = [b for path in args.old for b in inputs.load_bank_file(path)]
    new_inputs = ExamInputs(registries.bank_formats, registries.run_formats)  # the new bank may reuse old ids
    new_banks = [b for path in args.new for b in new_inputs.load_bank_file(path)]
    grading = open_grading(options, registries, data, where="--min-grade")
    cache = GradeCache(options.cache)
    with grading:
        try:
            progress = GradingProgress(f"grading with {grading.grader.name}", show_progress(options))
            impact = bank_edit_impact(data, old_banks, new_banks, grading, cache, progress=progress)
        finally:
            cache.close()
    console = Console(highlight=False, markup=False)  # names in the output are data, not markup
    for t in tables.edit_impact_tables(impact, limit=limit):
        console.print(t)
    console.print(tables.grading_line(impact.old_grading, "old bank"), soft_wrap=True)
    console.print(tables.grading_line(impact.new_grading, "new bank"), soft_wrap=True)
    _write_json(args.json, impact.model_dump(mode="json"))
    failures = (impact.old_grading.failures if impact.old_grading else 0) + (
        impact.new_grading.failures if impact.new_grading else 0)
    if failures:
        print(f"exam-harness analyze edit-impact: {failures:,} pairs failed to grade and count as uncovered",
              file=sys.stderr)
        return 1
    return 0
