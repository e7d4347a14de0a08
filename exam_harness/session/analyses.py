"""A named analysis of a graded exam (hook ``pytest_exam_register_analyses``): ``exam-harness analyze NAME`` and,
where it offers a section, pytest's ``--exam-analysis NAME``.

An analysis is an object of the :class:`Analysis` protocol: its ``help`` (``analyze --help``), its arguments
(``add_arguments``; :func:`add_graded_arguments` adds the ones every graded analysis takes: the run files, banks,
grading and scoring options, ``--json``, ``--limit``, ``--query``, ``--reveal``), its computation and rendering on
the command line (``run(args, session)``: :class:`AnalysisSession` grades on first use and writes ``--json``), and
its section after pytest's leaderboard (``section(exam)``: a title and rich renderables, where ``in_pytest``). The
command line's own analyses (verify, grid, missing, spurious, edit-impact: session/builtin_analyses.py) are
registered the same way, before the features'; the front ends name none.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

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
    options_from_cli,
)
from exam_harness.core.display import command_console
from exam_harness.core.errors import ConfigError
from exam_harness.exam.inputs import ExamView
from exam_harness.grading.passes import GradingOutcome

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from exam_harness.session.grades import Graded
    from exam_harness.session.registries import Registries

GROUPS = (GRADING, SCORING, RECORDED)  # the options of every graded analysis

QUERY = Argument("query", "Only this query (default: all).")
REVEAL = Argument("reveal", "Show the text of secret banks' test points and the answers graded on them (for the "
                  "bank's owner; default: ids only).", None)


@dataclass(frozen=True)
class AnalysisExam:
    """What an analysis's pytest section reads: the graded exam (``view`` built with the grades: its pool holds every
    graded passage; a secret bank's session shows no analysis), the plan's cut and relevance level, the row limit."""

    view: ExamView
    outcome: GradingOutcome
    min_grade: int
    relevance_level: int
    limit: int | None = 10  # None: every row (analyze --limit 0)


@runtime_checkable
class Analysis(Protocol):
    """One ``exam-harness analyze NAME`` analysis (see the module docstring)."""

    @property
    def help(self) -> str:
        """One line, in ``analyze --help`` and ``analyze NAME --help``."""

    @property
    def in_pytest(self) -> bool:
        """Whether pytest's ``--exam-analysis NAME`` may name it (``section`` then gives its section)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the analysis's arguments (:func:`add_graded_arguments` for the shared ones)."""

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        """Compute, print and write (``session.write_json``) the analysis; the exit status."""

    def section(self, exam: AnalysisExam) -> tuple[str, Sequence[RenderableType]] | None:
        """pytest's ``--exam-analysis NAME`` section: its title and what it prints (None where not ``in_pytest``)."""


def add_graded_arguments(parser: argparse.ArgumentParser, *, runs: str = "+") -> None:
    """The arguments every graded analysis takes (``runs``: the run files' ``nargs``)."""
    RUN_FILES.add_to(parser, nargs=runs)
    BANK_FILES.add_to(parser)
    add_cli_options(parser, GROUPS)
    for argument in (JSON_OUT, ROW_LIMIT, QUERY, REVEAL):
        argument.add_to(parser)


class AnalysisSession:
    """One ``analyze`` command's options, grades (on first use), console and ``--json``."""

    def __init__(self, args: argparse.Namespace, registries: Registries) -> None:
        self.args = args
        self.registries = registries
        self.console: Console = command_console()

    @functools.cached_property
    def options(self) -> ExamOptions:
        return options_from_cli(self.args, GROUPS)

    @property
    def limit(self) -> int | None:
        return None if self.args.limit == 0 else int(self.args.limit)  # ROW_LIMIT's converter refuses a negative

    @functools.cached_property
    def graded(self) -> Graded:
        from exam_harness.session.grades import obtain_grades

        return obtain_grades(self.args, self.options, registries=self.registries)

    def shown(self) -> tuple[ExamView, GradingOutcome]:
        """The view and outcome as analyses may quote them: of a secret exam (unless ``--reveal``) its test points'
        texts, gold answers and the answers graded on them left out (the ids stay, so the bank owner can look up)."""
        graded = self.graded
        if not graded.inputs.redacted or self.args.reveal:
            return graded.view, graded.outcome
        secret = {tp.id for banks in graded.inputs.banks.values() for b in banks for tp in b.test_points
                  if b.secret or graded.inputs.redact_all}
        print(f"exam-harness analyze: {len(secret):,} test points of secret banks are shown by id only "
              "(--reveal shows their text, for the bank's owner)", file=sys.stderr)
        answers = {pair: None if pair[1] in secret else answer for pair, answer in graded.outcome.answers.items()}
        return graded.view.without_secrets(secret.__contains__), dataclasses.replace(graded.outcome, answers=answers)

    def write_json(self, payload: Any, path: Path | None = None) -> None:
        """``payload`` as JSON into ``--json`` (or ``path``), atomically; nothing when neither is given."""
        target = path if path is not None else getattr(self.args, "json", None)
        if target is None:
            return
        from exam_harness.io.textio import atomic_write_text

        atomic_write_text(target, json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
        print(f"wrote {target}")

    def finish(self, outcome: GradingOutcome) -> int:
        """The exit status of a graded analysis: 1 with a note when pairs have no grade."""
        from exam_harness.session.grades import report_failures

        return report_failures("analyze", outcome, self.graded.inputs.redact)


def section_text(analysis: Analysis, exam: AnalysisExam, width: int = 100) -> tuple[str, str]:
    """``analysis``'s pytest section as ``(title, text)``: its renderables as plain text at ``width``."""
    from exam_harness.core.display import render_text

    section = analysis.section(exam)
    if section is None:
        raise ConfigError(f"analysis {type(analysis).__name__} offers no section under pytest")
    title, parts = section
    return title, "".join(render_text(part, width) for part in parts)
