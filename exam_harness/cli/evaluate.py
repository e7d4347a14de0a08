"""``exam-harness evaluate RUN_FILES``: the method's leaderboards, correlations and agreement tables.

Without ``--grader`` the recorded grades of the Workbench paragraph file are replayed (choose a
grading run with ``--llm`` / ``--prompt-class`` when it holds several); with ``--bank BANK
--grader NAME`` every (passage, test point) pair of the pool is graded through the grade cache.
Options come from the one schema (``exam_harness/config/options.py``), as in pytest without the ``exam-`` prefix;
the analyses only this command draws have their own options here: ``--min-answers`` (the "min answers
= m" agreement views); the features add theirs (the external qrels feature's ``--qrels``). Every output is made by
a writer of the one registry pytest writes with (report/writers.py): ``--report-dir`` the same report
set, ``--markdown``/``--html`` the same summaries (options of the schema), ``--json``, ``--qrels-dir``,
``--plot`` and a feature's writer of one file (the Workbench feature's ``--export-workbench``) one writer's files each.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.config.min_answers import DEFAULT_MIN_ANSWERS as DEFAULT_MIN_ANSWERS
from exam_harness.config.min_answers import add_min_answers_argument, min_answers_of
from exam_harness.config.options import (
    EVALUATE,
    GRADING,
    INPUTS,
    JSON_OUT,
    RECORDED,
    REPORTS,
    SCORING,
    SIGNIFICANCE,
    Argument,
    ExamOptions,
    add_cli_options,
    options_from_cli,
)
from exam_harness.core.display import command_console, print_notice
from exam_harness.core.errors import ConfigError
from exam_harness.io.qrels import Qrels
from exam_harness.results.preflight import check_writable
from exam_harness.session.grades import Graded, add_input_arguments, obtain_grades, report_failures

if TYPE_CHECKING:
    from exam_harness.config.options import FeatureOption
    from exam_harness.measures.qrels import Qrels
    from exam_harness.report.writers import WriterInput
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.session.registries import Registries

GROUPS = (GRADING, SCORING, RECORDED, SIGNIFICANCE, EVALUATE)
# the inputs group on the command line: the options of features that name input files (TREC RAG's --assignments)
INPUT_GROUPS = (INPUTS,)
# the outputs pytest writes too, from the one schema: --report-dir (none unless given), --markdown, --html
REPORT_OUTPUTS = ("report_dir", "markdown", "html")  # the report set and the summaries, as pytest names them
OUTPUT_DEFAULTS = {"report_dir": None}
def report_options() -> tuple[str, ...]:
    """The reports group's options evaluate takes: the report set and summaries pytest writes, and every option
    a feature adds to the group (a feature's reports are both front ends')."""
    import dataclasses

    from exam_harness.config.options import ExamOptions, specs

    core = {f.name for f in dataclasses.fields(ExamOptions)}
    return (*REPORT_OUTPUTS, *(name for name, _ in specs((REPORTS,), "cli") if name not in core))


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "evaluate",
        help="Leaderboards (EXAM-Cover, n-EXAM, EXAM-Qrels measures), correlations and agreement tables.",
        description="Compute the method's leaderboards for chosen minimum grades from recorded grades or by "
        "grading with any grader, correlate them with an official leaderboard and tabulate agreement "
        "with human judgments.",
    )
    add_input_arguments(parser, runs_required=False)
    add_cli_options(parser, (*INPUT_GROUPS, *GROUPS))
    add_cli_options(parser, (REPORTS,), only=report_options(), defaults={"report_dir": "none"})
    JSON_OUT.add_to(parser, help="Write the leaderboards as JSON.")
    for argument in OUTPUTS:
        argument.add_to(parser)
    add_min_answers_argument(parser, default=None)
    parser.set_defaults(func=run)


# This subcommand's own arguments, with the schema's converters (exam_harness/config/options.py).
OUTPUTS: tuple[Argument, ...] = (
    Argument("qrels-dir", "Write the EXAM-Qrels files (one per label variant and minimum grade) here.", Path,
             metavar="DIR"),
    Argument("plot", "Draw the leaderboards (PNG and SVG) into this folder.", Path, metavar="DIR"),
    Argument("brief", "Print only the correlations and agreement tables.", None),
)


def run(args: argparse.Namespace) -> int:
    from exam_harness.config.options import specs
    from exam_harness.extensions import cli_registries
    from exam_harness.io import load_leaderboard
    from exam_harness.report.evaluation import evaluate_exam, score_evaluation
    from exam_harness.report.evaluation_tables import print_evaluation
    from exam_harness.results.scored import collect_scoring_inputs
    from exam_harness.session.grades import exam_inputs

    options = options_from_cli(args, (*INPUT_GROUPS, *GROUPS, REPORTS), defaults=OUTPUT_DEFAULTS)
    if options.report_dir is not None and not options.per_query:
        # the report set is pytest's, whose per-topic files (trec-rag-<run>.metrics.jsonl, ...) read the
        # per-query values: without them it held only each run's "all" row
        options = replace(options, per_query=True)
    check_writable([("--json", args.json, False), ("--qrels-dir", args.qrels_dir, True), ("--plot", args.plot, True),
                    ("--markdown", options.markdown, False),
                    ("--html", options.html, True)])
    registries = cli_registries()
    check_writable([(f"--{option.spec.name}", target, False) for _, option, target in requested(registries, options)])
    exam = exam_inputs(args, options, registries)  # the features' options may supply inputs (checked here)
    step_summary = check_outputs(args, options, exam.supplied_files)
    if not args.runs and not exam.supplied_files:
        named = ", ".join(f"--{spec.name} FILE ..." for _, spec in specs(INPUT_GROUPS, "cli"))
        raise ConfigError("evaluate needs run files (RUN_FILE ...)" + (f", or {named}" if named else ""))
    official = load_leaderboard(options.official) if options.official else None
    min_answers = min_answers_of(args.min_answers)
    inputs = collect_scoring_inputs(options, "evaluate", registries.hook)  # the features' inputs, before grading
    graded = obtain_grades(args, options, registries=registries, inputs=exam)
    registries.hook.pytest_exam_grading_finished(plan=graded.plan, outcome=graded.outcome)
    for notes in registries.hook.pytest_exam_run_notes(runs=graded.view.data.runs, folders=args.runs):
        for note in notes or ():  # a live system's manifest with no run beside it
            print_notice(note)
    plan = graded.plan
    # the pairs a feature grades beyond the pool (the citation-support feature's --support): the measures' inputs
    extras = [e for e in registries.hook.pytest_exam_extra_grading(options=options, graded=graded) if e is not None]
    credits = next((e.support for e in extras if e.support is not None), None)
    in_set = options.report_dir is not None  # only the report set's writers read the qrels
    scored = score_evaluation(graded.view, graded.outcome, plan, graded.spec, responses=graded.inputs.responses,
                              support=credits, qrels=in_set or args.qrels_dir is not None, run_folders=args.runs)
    result = evaluate_exam(scored, graded.spec, options, official=official, min_answers=min_answers,
                           cache=str(options.cache) if options.cache is not None else None,
                           inputs=inputs)
    supplied = [str(p) for p in exam.supplied_files]  # files a feature's option named (--assignments)
    result.settings.runs = [*map(str, args.runs), *supplied]
    result.settings.banks = [str(p) for p in args.bank] or supplied
    if options.official:
        result.settings.official = str(args.official)

    console = command_console()
    print_evaluation(result, console, brief=args.brief, label=plan.labels[0])
    out = writer_input(result, scored.result.qrels, graded)
    written, warnings = write_outputs(args, options, out, graded, step_summary)
    written += [path for paths in registries.hook.pytest_exam_write_outputs(options=options, out=out) if paths
                for path in paths]  # what the features' options ask for (TREC RAG's --trec-rag-dir)
    for path in written:
        console.print(f"wrote {path}", soft_wrap=True)
    from exam_harness.results.left_out import taken

    for line in [*warnings, *taken()]:  # taken(): what an output left out (a plugin section, a NaN), results/
        print(line, file=sys.stderr)
    registries.hook.pytest_exam_report(report=result, plan=plan)
    failed = report_failures("evaluate", graded.outcome, graded.inputs.redact)
    for extra in extras:
        if extra.outcome.failures:
            print(f"exam-harness evaluate: {len(extra.outcome.failures):,} {extra.unmet} (e.g. " + "; ".join(
                f"{p} on {t}: {m}" for (p, t), m in list(extra.outcome.failures.items())[:3]) + ")", file=sys.stderr)
            failed = 1
    return failed


def check_outputs(args: argparse.Namespace, options: ExamOptions, supplied: Sequence[Path] = ()) -> str | None:
    """The outputs checked before any grading: the report folder can be owned, the Workbench file is named
    as one; returns ``$GITHUB_STEP_SUMMARY`` when the markdown summary can be appended there."""
    import os

    from exam_harness.io.report_set import check_owned_folder
    from exam_harness.report.writers import GITHUB_STEP_SUMMARY, step_summary_problem

    if options.report_dir is not None:
        check_owned_folder(options.report_dir, rootdir=Path.cwd(), inputs=[*args.runs, *args.bank, *supplied],
                           label="--report-dir")
    path = os.environ.get(GITHUB_STEP_SUMMARY)
    if not path:
        return None
    problem = step_summary_problem(Path(path))
    if problem is not None:
        print(f"warning: ${GITHUB_STEP_SUMMARY}={path} {problem}; the markdown summary is not appended there",
              file=sys.stderr)
        return None
    return path


def writer_input(result: EvaluationReport, qrels: Mapping[str, Qrels], graded: Graded) -> WriterInput:
    """What the writers read for evaluate's document: the EXAM-Qrels at every tau (made by scoring when
    asked for: they take as long as scoring), the exam's grades (the Workbench feature writes them as a paragraph
    file) and the runs' cited answers (the TREC RAG feature writes them in the 2025 format)."""
    from exam_harness.report.writers import GradedExam, WriterInput

    return WriterInput(result, graded.plan, qrels, exam=GradedExam(graded.view, graded.outcome, graded.spec),
                       answers=graded.inputs.answers)


def requested(registries: Registries, options: ExamOptions) -> list[tuple[str, FeatureOption[Path | None], Path]]:
    """(writer, option, file) of each feature's writer whose option names its file (``--export-workbench``)."""
    from exam_harness.report.writers import requested_option

    found = []
    for name in registries.writers.names():
        option = requested_option(registries.writers, name)
        target = options.feature(option) if option is not None else None
        if option is not None and target is not None:
            found.append((name, option, target))
    return found


def write_outputs(args: argparse.Namespace, options: ExamOptions, out: WriterInput, graded: Graded,
                  step_summary: str | None) -> tuple[list[Path], list[str]]:
    """Every output asked for, each by its writer of the one registry (report/writers.py): the report set
    (--report-dir, as pytest's), the document (--json), the qrels, plots, Workbench file, markdown and HTML;
    the markdown summary is also appended to ``$GITHUB_STEP_SUMMARY``. Returns the paths and warnings."""
    from exam_harness.report.writers import (
        GITHUB_STEP_SUMMARY,
        append_step_summary,
        requested_text,
        write_report_files,
        write_requested_file,
        write_requested_folder,
    )

    writers = graded.registries.writers
    written: list[Path] = []
    warnings: list[str] = []
    asked = (("json", args.json, False), ("qrels", args.qrels_dir, True), ("plots", args.plot, True),
             *((name, target, False) for name, _, target in requested(graded.registries, options)),
             ("markdown", options.markdown, False), ("html", options.html, True))
    for name, target, folder in asked:
        if target is not None:
            write = write_requested_folder if folder else write_requested_file
            written += write(writers, name, target, out)
    if options.report_dir is not None:
        written += write_report_files(options.report_dir, writers, out)
    if step_summary is not None:
        try:
            append_step_summary(step_summary, requested_text(writers, "markdown", out))
        except OSError as exc:
            warnings.append(f"warning: cannot append the markdown summary to ${GITHUB_STEP_SUMMARY}={step_summary}: "
                            f"{exc.strerror or exc}")
    return written, warnings
