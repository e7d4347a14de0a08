"""``exam-harness view REPORT.json [REFERENCE.json]``: a saved result document in the terminal, keyboard only
(docs/view.md). Needs the ``[view]`` extra (Textual), imported only when the command runs. A ``Command``
(config/commands.py) the feature registers; ``exam-harness view --help`` shows its help and description."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.api import Argument, ConfigError

if TYPE_CHECKING:
    from exam_harness.features.view.app import ViewerApp

ARGUMENTS: tuple[Argument, ...] = (
    Argument("document", "exam-report.json (a pytest session's or a kept one), or evaluate's --json document.", Path,
             metavar="REPORT", positional=True),
    Argument("reference", "A second document to compare with (the flips, both documents' scores): a kept report, "
             "an earlier exam-report.json.", Path, metavar="REFERENCE", positional=True, nargs="?"),
    Argument("compare", "Compare with a kept report instead: latest, a number NNNN or a name (of --history-dir).",
             metavar="REF"),
    Argument("history-dir", "Folder of kept reports (default: .exam-history).", Path, default=Path(".exam-history")),
    Argument("root", "The folder the session ran in, which the report's paths (runs, banks, grade cache) are "
             "relative to (default: the current folder, else the folder above the report's).", Path),
    Argument("search", "Open the search with this filter (e.g. 'run:weak-ranker missed').", metavar="FILTER"),
)


class ViewCommand:
    """``exam-harness view``, registered by the feature (plugin.py: ``pytest_exam_register_commands``)."""

    help = ("Review a saved report or evaluation in the terminal: leaderboard, why a test point was missed, flips, "
            "sections (keyboard only; the [view] extra).")
    description = (
        "An interactive viewer of a saved result document (docs/view.md): the leaderboard of every measure with the "
        "verdict first; run -> query -> test point -> its best passage, grade and reason and every pair of the run's "
        "top-k (from the grade cache the report names, read-only); the flips against a second document or a kept "
        "report; the sections; a search. ? shows the keys.")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        for argument in ARGUMENTS:
            argument.add_to(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


COMMAND = ViewCommand()


def run(args: argparse.Namespace) -> int:
    from exam_harness.features.view.document import Viewed, open_document
    from exam_harness.features.view.pairs import host_lookups, pair_source

    if args.reference is not None and args.compare is not None:
        raise ConfigError("give a REFERENCE document or --compare REF, not both")
    app_class = viewer_class()
    # the graders and formats of the plugins the command line registered (its sections: results/sections.py)
    lookups = host_lookups()
    opened = open_document(args.document)
    reference = None
    if args.reference is not None:
        reference = open_document(args.reference)
    elif args.compare is not None:
        from exam_harness.results import history

        reference = open_document(history.resolve(args.history_dir, args.compare, Path.cwd()))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError("exam-harness view needs a terminal (for text in a pipe: exam-harness leaderboard, compare, "
                          "verdict)")
    pairs = pair_source(args.document, opened.document, args.root, lookups)
    app_class(Viewed(opened, reference), pairs, search=args.search).run()
    return 0


def viewer_class() -> type[ViewerApp]:
    """The Textual app's class, or a ConfigError saying how to install Textual."""
    try:
        from exam_harness.features.view.app import ViewerApp
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "textual":
            raise ConfigError("exam-harness view needs Textual: pip install 'exam-harness[view]'") from None
        raise
    return ViewerApp
