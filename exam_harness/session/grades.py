"""What ``evaluate``, ``analyze`` and the features that run an exam share: inputs through the registries, and
grades from the recorded grading run of the files (replayed) or from a grader through the cache."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from exam_harness.config.options import BANK_FILES, RUN_FILES, ExamOptions
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import ExamData, GraderSpec, QueryBank
from exam_harness.core.progress import GradingProgress
from exam_harness.exam.inputs import ExamInputs, ExamView
from exam_harness.exam.plan import ExamPlan, make_plan
from exam_harness.grading.passes import GradingOutcome, replay
from exam_harness.io.runs import collector_paused
from exam_harness.results.preflight import check_overlap, check_run_name
from exam_harness.session.registries import Registries

if TYPE_CHECKING:
    from exam_harness.results.scoring import SupportCredits

# Grading through a grader (its cache: sqlite3, the prompt modes) is imported where it is done: replaying the
# recorded grades, evaluate's usual path, needs none of it.


def add_input_arguments(parser: argparse.ArgumentParser, runs_required: bool = True) -> None:
    """Run files (positional; ``runs_required=False``: the command checks there are some when it needs
    them) and ``--bank`` files."""
    RUN_FILES.add_to(parser, **({} if runs_required else {"nargs": "*"}))
    BANK_FILES.add_to(parser)


@dataclass(frozen=True)
class Graded:
    """An evaluation's exam: the inputs, the view, its grades, the grader's identity and the plan."""

    inputs: ExamInputs
    view: ExamView
    outcome: GradingOutcome
    spec: GraderSpec
    plan: ExamPlan
    registries: Registries  # built-ins and plugins': the writers of the outputs too


def show_progress(options: ExamOptions) -> bool:
    return not options.no_progress and sys.stderr.isatty()


def exam_inputs(args: argparse.Namespace, options: ExamOptions, registries: Registries) -> ExamInputs:
    """The inputs of the run files and ``--bank`` files ``args`` names, read through ``registries``' formats as the
    features' options configure them (hook ``pytest_exam_inputs``: a feature may supply files of its own
    options, TREC RAG's ``--assignments``); nothing is read yet."""
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    inputs.given_runs, inputs.given_banks = tuple(args.runs), tuple(args.bank)
    from exam_harness.core.host import active_hook

    hook = registries.hook if registries.hook is not None else active_hook()  # built-in registries: the defaults'
    hook.pytest_exam_inputs(options=options, front="evaluate", inputs=inputs)
    return inputs


def load_inputs(args: argparse.Namespace, inputs: ExamInputs) -> tuple[ExamInputs, list[QueryBank]]:
    """The runs (with the files features supplied) and the banks of ``--bank``, with those the supplied files
    bring in place of the bank files' banks of their topics."""
    # A command runs once: what is loaded now stays until it exits, so the cyclic collector is told
    # to leave it out of its passes (on DL19 ~240k containers, walked by every later full collection).
    # Frozen before the collector resumes: the first allocation after a resume would otherwise start a
    # pass over everything read (DL19: one pass, a thirtieth of the command's CPU time).
    with collector_paused():
        inputs.load_runs(args.runs)
        supplied = inputs.supplied_banks()
        covered = {bank.query.id for bank in supplied}
        # a --bank folder is searched as pytest searches a bank folder (its bank files, sorted)
        banks = [bank for bank in inputs.load_banks(args.bank) if bank.query.id not in covered] + supplied
        gc.freeze()
    if banks and inputs.answers:
        say_dropped_answers(inputs.answers, {bank.query.id for bank in banks})
    return inputs, banks


def say_dropped_answers(answers: Mapping[str, Mapping[str, object]], covered: set[str]) -> list[tuple[str, str]]:
    """Name the answers (TREC RAG answer files) whose topic no bank holds: nothing scores them (one line on stderr)."""
    dropped = sorted((run, q) for run, by_query in answers.items() for q in by_query if q not in covered)
    if dropped:
        from exam_harness.core.display import print_notice

        shown = ", ".join(f"{run}/{q}" for run, q in dropped[:10]) + (" ..." if len(dropped) > 10 else "")
        print_notice(f"warning: {len(dropped)} answer(s) for topics no bank holds are not scored: {shown}")
    return dropped


def obtain_grades(args: argparse.Namespace, options: ExamOptions, *, registries: Registries, several: bool = True,
                  adjust: Callable[[ExamData], None] | None = None, inputs: ExamInputs | None = None) -> Graded:
    """Replay the recorded grades (``--grader recorded``, the default, on files that hold some) or grade
    the pool with ``--grader NAME`` through the cache; the plan is made before any grading starts.
    ``adjust`` may change the loaded data before the pool is made (calibrate swaps in other judgments);
    ``registries``: the command's (the command line's: the current folder's plugins, extensions.py); ``inputs``:
    made by :func:`exam_inputs` (by default here)."""
    inputs, banks = load_inputs(args, inputs if inputs is not None else exam_inputs(args, options, registries))
    data = inputs.data
    if adjust is not None:
        adjust(data)
    if options.baseline is not None:
        check_run_name(options.baseline, data.runs, "--baseline")
    if banks:
        check_overlap(banks, data)
    if options.grader == "recorded" and data.recorded:
        if options.grader_options or options.model:
            raise ConfigError("--grader-option and --model need --grader NAME (without it the recorded grades "
                              "are replayed)")
        view, outcome, spec = replay(data, llm=options.llm, prompt_class=options.prompt_class, banks=banks)
        plan = make_plan(options, spec, where="--min-grade", several=several, registry=registries.measures)
        return Graded(inputs, view, outcome, spec, plan, registries)
    if options.llm is not None or options.prompt_class is not None:
        raise ConfigError("--llm/--prompt-class choose recorded grades; with --grader use --grader-option instead")
    if not banks:
        raise ConfigError(f"--grader {options.grader} needs --bank BANK: the test points to grade the passages on")
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.setup import open_grading

    grading = open_grading(options, registries, data, where="--min-grade", several=several)
    cache = GradeCache(options.cache, keep_text=options.cache_text == "keep")
    with grading:
        try:
            progress = GradingProgress(f"grading with {grading.grader.name}", show_progress(options))
            view, outcome = grading.grade(data, banks, cache, progress=progress)
        finally:
            cache.close()
    return Graded(inputs, view, outcome, grading.grader.spec(), grading.plan, registries)


@dataclass(frozen=True)
class ExtraGrading:
    """Pairs a feature graded beyond the exam's pool once its pass was done (hook ``pytest_exam_extra_grading``):
    the pass's outcome and what the measures read of it."""

    outcome: GradingOutcome
    # run -> query -> per answer sentence, each citation's support credit: the citation measures' input
    # (measures/citations.py), None where the feature gives none
    support: SupportCredits | None = None
    unmet: str = "pairs have no grade"  # what evaluate's note says of the pairs left without a grade


def report_failures(command: str, outcome: GradingOutcome, redact: Callable[[str], str] = str) -> int:
    """Exit code 1 with a note when pairs have no grade (they count as uncovered), else 0. ``redact``
    hides secret bank text a grader's error message may echo."""
    if not outcome.failures:
        return 0
    examples = "; ".join(f"{p} on {t}: {redact(m)}" for (p, t), m in list(outcome.failures.items())[:3])
    print(f"exam-harness {command}: {len(outcome.failures):,} pool pairs have no grade and count as uncovered "
          f"(e.g. {examples})", file=sys.stderr)
    return 1
