"""The analyses the command line ships (session/analyses.py): ``verify`` (per test point, extracted answers and
grades), ``grid`` (per passage of a query, every test point's grade and answer), ``missing`` (judged-relevant
passages no test point covers), ``spurious`` (test points that judged non-relevant passages cover) and
``edit-impact`` (old vs new bank: changes, label flips and score moves, grading only the changed test points
through the cache). :func:`analysis_registry` holds them first, then what the features and plugins register
through ``pytest_exam_register_analyses``, as the other registries start with their built-in entries.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exam_harness.config.options import GRADING, JSON_OUT, ROW_LIMIT, RUN_FILES, SCORING, Argument, integer
from exam_harness.core.errors import ConfigError
from exam_harness.core.registry import Registry, unknown_name_message
from exam_harness.session.analyses import Analysis, AnalysisExam, AnalysisSession, add_graded_arguments

if TYPE_CHECKING:
    from rich.console import RenderableType

TEST_POINT = Argument("test-point", "Only this test point id (default: all of the queries chosen).")
HIDE_BELOW = Argument("hide-below", "Hide answers graded below this (default: 0).", integer(0), default=0,
                      metavar="GRADE")
PASSAGES = Argument("passage", "Only these passages; repeatable (default: the pool).", default=[], many=True)
ANSWERS = Argument("answers", "Show the extracted answers under the grades.", None)
OLD_BANK = Argument("old", "The bank before the edit.", Path, many=True, required=True, metavar="BANK")
NEW_BANK = Argument("new", "The bank after the edit.", Path, many=True, required=True, metavar="BANK")

IMPACT_GROUPS = (GRADING, SCORING)
# edit-impact grades the edited bank, so it cannot replay recorded grades: it grades by default
IMPACT_DEFAULTS = {"grader": "embedding"}


def _needs_runs(args: argparse.Namespace, session: AnalysisSession) -> None:
    """The options are read first (a bad one is said before missing run files), as every analysis reads them."""
    session.options  # noqa: B018
    if not args.runs:
        raise ConfigError(f"analyze {args.analysis} needs RUN_FILE(s)")


@dataclass(frozen=True)
class Verify:
    help: str = "Per test point: the extracted answers with their grades, highest first."
    in_pytest: bool = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_graded_arguments(parser)
        TEST_POINT.add_to(parser)
        HIDE_BELOW.add_to(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        from exam_harness.analysis import analyses
        from exam_harness.report import analysis_tables as tables

        _needs_runs(args, session)
        view, outcome = session.shown()
        reports = analyses.verify_grading(view, outcome, query=args.query, test_point=args.test_point,
                                          min_grade=args.hide_below)
        for t in tables.verify_tables(reports, limit=session.limit):
            session.console.print(t)
        session.write_json([r.model_dump(mode="json") for r in reports])
        return session.finish(outcome)

    def section(self, exam: AnalysisExam) -> tuple[str, Sequence[RenderableType]]:
        from exam_harness.analysis import analyses
        from exam_harness.report import analysis_tables as tables

        reports = analyses.verify_grading(exam.view, exam.outcome)
        return "exam: verify grading", tables.verify_tables(reports, limit=exam.limit)


@dataclass(frozen=True)
class Grid:
    help: str = "Per passage of one query: every test point's grade (and answer with --answers)."
    in_pytest: bool = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_graded_arguments(parser)
        PASSAGES.add_to(parser)
        ANSWERS.add_to(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        from exam_harness.analysis import analyses
        from exam_harness.report import analysis_tables as tables

        _needs_runs(args, session)
        view, outcome = session.shown()
        if args.query is None:
            raise ConfigError("analyze grid needs --query QUERY_ID")
        grid = analyses.grade_grid(view, outcome, query=args.query, passages=args.passage or None)
        session.console.print(tables.grid_table(grid, answers=args.answers, limit=session.limit))
        session.write_json(grid.model_dump(mode="json"))
        return session.finish(outcome)

    def section(self, exam: AnalysisExam) -> None:
        return None  # one query's grid: asked for by query, on the command line


def _run_on_plan(args: argparse.Namespace, session: AnalysisSession,
                 parts: Callable[[AnalysisExam, str | None], tuple[Sequence[RenderableType], Any]]) -> int:
    """An analysis whose pytest section and command share one computation (``parts``: what it prints and its
    ``--json`` payload from the graded exam and ``--query``), run on the command line at the plan's tau and
    relevance level."""
    _needs_runs(args, session)
    view, outcome = session.shown()
    plan = session.graded.plan
    exam = AnalysisExam(view, outcome, plan.min_grade, plan.relevance_level, session.limit)
    shown, payload = parts(exam, args.query)
    for part in shown:
        session.console.print(part)
    session.write_json(payload)
    return session.finish(outcome)


@dataclass(frozen=True)
class Missing:
    help: str = "Passages judged relevant that reach no grade >= TAU on any test point (the bank needs a question)."
    in_pytest: bool = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_graded_arguments(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        return _run_on_plan(args, session, self.parts)

    def section(self, exam: AnalysisExam) -> tuple[str, Sequence[RenderableType]]:
        return "exam: relevant passages missing in the bank", self.parts(exam, None)[0]

    def parts(self, exam: AnalysisExam, query: str | None) -> tuple[Sequence[RenderableType], Any]:
        from exam_harness.analysis import analyses
        from exam_harness.report import analysis_tables as tables

        missing = analyses.missing_in_bank(exam.view, exam.outcome, min_grade=exam.min_grade,
                                           relevance_level=exam.relevance_level, query=query)
        return tables.missing_tables(missing, limit=exam.limit), missing.model_dump(mode="json")


@dataclass(frozen=True)
class Spurious:
    help: str = "Test points ranked by how often judged non-relevant passages reach grade >= TAU on them."
    in_pytest: bool = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_graded_arguments(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        return _run_on_plan(args, session, self.parts)

    def section(self, exam: AnalysisExam) -> tuple[str, Sequence[RenderableType]]:
        return "exam: spurious test points", self.parts(exam, None)[0]

    def parts(self, exam: AnalysisExam, query: str | None) -> tuple[Sequence[RenderableType], Any]:
        from exam_harness.analysis import analyses
        from exam_harness.report import analysis_tables as tables

        points = analyses.spurious_test_points(exam.view, exam.outcome, min_grade=exam.min_grade,
                                               relevance_level=exam.relevance_level, query=query)
        table = tables.spurious_table(points, min_grade=exam.min_grade, relevance_level=exam.relevance_level,
                                      limit=exam.limit)
        payload = {"min_grade": exam.min_grade, "relevance_level": exam.relevance_level,
                   "test_points": [p.model_dump(mode="json") for p in points]}
        return [table], payload


@dataclass(frozen=True)
class EditImpact:
    help: str = "Old vs new bank: changed test points, passages whose label changes, systems whose scores move."
    in_pytest: bool = False
    description: str = ("Grade only the queries an edit touches (old grades from the cache, new grades for changed "
                        "and added test points) and report the bank diff, label changes and score moves (first "
                        "--labels variant).")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from exam_harness.config.options import add_cli_options

        RUN_FILES.add_to(parser, help="Workbench paragraph file(s) or runs.")
        OLD_BANK.add_to(parser)
        NEW_BANK.add_to(parser)
        add_cli_options(parser, IMPACT_GROUPS, defaults=IMPACT_DEFAULTS)
        ROW_LIMIT.add_to(parser)
        JSON_OUT.add_to(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        from exam_harness.analysis.edit_impact import bank_edit_impact
        from exam_harness.config.options import options_from_cli
        from exam_harness.core.progress import GradingProgress
        from exam_harness.exam.inputs import ExamInputs
        from exam_harness.grading.cache import GradeCache
        from exam_harness.grading.setup import open_grading
        from exam_harness.report import analysis_tables as tables
        from exam_harness.session.grades import show_progress

        limit = session.limit
        options = options_from_cli(args, IMPACT_GROUPS, defaults=IMPACT_DEFAULTS)
        registries = session.registries
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
        console = session.console
        for t in tables.edit_impact_tables(impact, limit=limit):
            console.print(t)
        console.print(tables.grading_line(impact.old_grading, "old bank"), soft_wrap=True)
        console.print(tables.grading_line(impact.new_grading, "new bank"), soft_wrap=True)
        session.write_json(impact.model_dump(mode="json"))
        failures = (impact.old_grading.failures if impact.old_grading else 0) + (
            impact.new_grading.failures if impact.new_grading else 0)
        if failures:
            print(f"exam-harness analyze edit-impact: {failures:,} pairs failed to grade and count as uncovered",
                  file=sys.stderr)
            return 1
        return 0

    def section(self, exam: AnalysisExam) -> None:
        return None  # it grades a second bank: a command of its own


def _not_an_analysis(entry: object) -> str | None:
    return None if isinstance(entry, Analysis) else f"{entry!r} is not an Analysis (it needs help, in_pytest, " \
        "add_arguments, run, section)"


def analysis_registry(hook: Any) -> Registry[Analysis]:
    """The built-in analyses, then those the features and plugins register through ``hook``; each entry's
    description is its topic in ``analyze --help``'s line."""
    registry: Registry[Analysis] = Registry("analysis", problem=_not_an_analysis)
    builtin: tuple[tuple[str, Analysis, str], ...] = (
        ("verify", Verify(), "verify grading"), ("grid", Grid(), "grade grid"),
        ("missing", Missing(), "missing in bank"), ("spurious", Spurious(), "spurious test points"),
        ("edit-impact", EditImpact(), "bank edit impact"))
    for name, analysis, topic in builtin:
        registry.register(name, analysis, topic)
    hook.pytest_exam_register_analyses(registry=registry)
    return registry


def pytest_analyses(hook: Any, names: Sequence[str]) -> list[Analysis]:
    """The analyses pytest's ``--exam-analysis`` names, each registered and offering a section."""
    registry = analysis_registry(hook)
    offered = [name for name in registry if registry.get(name).in_pytest]
    for name in names:
        if name not in offered:
            raise ConfigError(f"--exam-analysis: {unknown_name_message('analysis', name, offered)}")
    return [registry.get(name) for name in names]
