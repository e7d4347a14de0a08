"""``exam-harness import-grades``: store a graded Workbench file's grades in the grade cache.

The grades become cache entries of the ``recorded`` grader, one grading run (model, prompt class) at
a time, so an exam over the same passages (e.g. TREC runs with a collection) replays them with
``--exam-grader recorded --exam-grader-option llm=... --exam-grader-option prompt_class=...``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from exam_harness.api import Argument
from exam_harness.config.options import BANK_FILES, GRADING, add_cli_options, options_from_cli

_DESCRIPTION = __doc__ or ""  # the module's docstring (in the class body, __doc__ is the class's)


class ImportGradesCommand:
    """``exam-harness import-grades``, a ``Command`` (config/commands.py) the feature registers (plugin.py:
    ``pytest_exam_register_commands``); its description is the module's docstring, as a built-in subcommand's."""

    help = "Store the recorded grades of a Workbench paragraph file in the grade cache."
    description = _DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the description's lines as written
        Argument("paragraphs", "Graded Workbench paragraph file.", Path, metavar="PARAGRAPH_FILE",
                 positional=True).add_to(parser)
        BANK_FILES.add_to(parser, default=None, required=True,
                          help="Bank with the test points' texts (part of every grade's cache key); repeatable.")
        add_cli_options(parser, [GRADING], only=["cache"])

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


COMMAND = ImportGradesCommand()


def run(args: argparse.Namespace) -> int:
    from exam_harness.core.host import active_hook
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.features.workbench.grades import import_workbench_grades
    from exam_harness.grading.cache import GradeCache
    from exam_harness.session.registries import Registries

    registries = Registries.from_hook(active_hook())  # the command line's formats (core/host.py), as view's
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    banks = inputs.load_banks(args.bank)
    cache_path = options_from_cli(args, [GRADING]).cache
    cache = GradeCache(cache_path)
    try:
        imported = import_workbench_grades(args.paragraphs, cache, banks)
    finally:
        cache.close()
    if not imported:
        print(f"{args.paragraphs}: no recorded test point grades to import")
        return 1
    for entry in imported:
        print(
            f"imported {entry.stored} grades of llm={entry.llm} prompt_class={entry.prompt_class} into {cache_path}"
            + (f" ({entry.skipped} skipped: test points no bank lists)" if entry.skipped else "")
        )
        print(f"  replay: --exam-grader recorded --exam-grader-option llm={entry.llm} "
              f"--exam-grader-option prompt_class={entry.prompt_class}")
    return 0
