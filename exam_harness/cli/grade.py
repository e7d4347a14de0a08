"""``exam-harness grade RUN_FILES --bank BANK --grader NAME``: grade the pool into the cache, scoring nothing.

``--batch submit|status|collect`` works the batch jobs of a grader with ``batch=true`` (docs/batch.md):
``submit`` sends the pairs the cache lacks that no job carries, ``status`` shows each job's progress,
``collect`` stores the grades of finished jobs (answers read by the grader's own parser) and sends again
what failed. The jobs live in ``<cache>.batch.json``: any machine with the inputs, the cache and that
file can collect. A later ``pytest`` or ``evaluate`` over the same inputs scores from the cache.
"""

from __future__ import annotations

import argparse
import sys

from exam_harness.config.options import GRADING, SCORING, Argument, add_cli_options, choice, options_from_cli
from exam_harness.core.errors import INFRASTRUCTURE_FAILED, ConfigError
from exam_harness.core.progress import GradingProgress
from exam_harness.extensions import cli_registries
from exam_harness.graders.base import GradingRequest
from exam_harness.grading.batches import Exchange, batch_of, describe, exchange
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import group_by_key
from exam_harness.grading.setup import open_grading
from exam_harness.llm.batch import BatchState
from exam_harness.session.grades import add_input_arguments, exam_inputs, load_inputs, report_failures, show_progress

GROUPS = (GRADING, SCORING)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "grade",
        help="Grade the pool into the grade cache without scoring; --batch submit|status|collect for batch jobs.",
        description="Grade every pool pair the cache lacks with --grader NAME (the same pairs pytest and evaluate "
        "grade), or, for a grader with --grader-option batch=true, submit them as batch jobs, show the jobs' "
        "status, or collect their grades into the cache.",
    )
    add_input_arguments(parser)
    add_cli_options(parser, GROUPS)
    Argument("batch", "submit: send the pairs the cache lacks as batch jobs; status: each job's progress; collect: "
             "store finished jobs' grades and send again what failed (exit status 75 while pairs still wait).",
             choice("submit", "status", "collect"), metavar="{submit,status,collect}").add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    options = options_from_cli(args, GROUPS)
    if options.grader == "recorded":
        raise ConfigError("grade needs --grader NAME: the grader that grades the pool")
    registries = cli_registries()
    inputs, banks = load_inputs(args, exam_inputs(args, options, registries))
    if not banks:
        raise ConfigError(f"--grader {options.grader} needs --bank BANK_FILE: the test points to grade the passages on")
    grading = open_grading(options, registries, inputs.data, where="--min-grade")
    cache = GradeCache(options.cache)
    with grading:
        try:
            grader = grading.grader
            if args.batch is None:
                progress = GradingProgress(f"grading with {grader.name}", show_progress(options))
                _, outcome = grading.grade(inputs.data, banks, cache, progress=progress)
                print(f"graded {outcome.graded} pairs, {outcome.cache_hits} found in the cache, "
                      f"{len(outcome.failures)} without a grade")
                return report_failures("grade", outcome, inputs.redact)
            if batch_of(grader) is None:
                raise ConfigError("--batch works the batch jobs of a grader with --grader-option batch=true")
            by_key = group_by_key(grader, grading.requests(inputs.data, banks), {})
            found = cache.get_grades(by_key, max_grade=grader.spec().max_grade, answers=False)
            todo: dict[str, GradingRequest] = {key: group[0] for key, group in by_key.items() if key not in found}
            done = exchange(grader, todo, cache.path, cache.put_many, collect=args.batch == "collect",
                            submit=args.batch != "status") if todo or args.batch != "status" else Exchange()
            if cache.path is not None:
                for line in describe(BatchState(cache.path)):
                    print(line)
            print(_summary(done, len(by_key) - len(todo)))
            return INFRASTRUCTURE_FAILED if args.batch == "collect" and done.pending else 0
        finally:
            cache.close()


def _summary(done: Exchange, cached: int) -> str:
    jobs = len(set(done.pending.values()))
    text = (f"{cached} pairs were already in the cache; {len(done.grades)} grades collected and stored; "
            f"{len(done.submitted)} new batch file{'s' * (len(done.submitted) != 1)}; {len(done.pending)} pairs "
            f"waiting in {jobs} job{'s' * (jobs != 1)}")
    if done.resent:
        text += f"; {len(done.resent)} answers were not grades (sent again)"
    for problem in done.problems[:5]:
        print(f"batch output: {problem}", file=sys.stderr)
    return text
