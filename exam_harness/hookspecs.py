"""Hook specifications of exam-harness, added to pytest's plugin manager in ``pytest_addhooks``.

Implement them in a conftest.py or in a package registered under the ``pytest11`` entry point (a
package that requires exam-harness). The ``exam-harness`` command line calls the registration hooks
too: it loads the installed ``pytest11`` plugins of packages that require exam-harness and the current
folder's conftest.py (``exam_harness/extensions.py``), so a grader, format, measure or reporter a
conftest.py registers works in ``pytest``, ``evaluate``, ``analyze`` and ``graders`` alike. Hook
functions need no decorator (as in pytest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from pathlib import Path

    import pytest
    from rich.console import RenderableType

    from exam_harness.analysis.label_screens import LabelScreen
    from exam_harness.config.commands import Command
    from exam_harness.config.gates import GateFigure, GateResult
    from exam_harness.config.options import ExamOptions, FeatureOptions
    from exam_harness.core.models import GraderSpec, Query
    from exam_harness.core.registry import Registry
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.graders.base import Grader
    from exam_harness.graders.registry import GraderRecipe, GraderRegistry
    from exam_harness.grading.engines import Engine
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.io.formats import BankFormat, RunFormat
    from exam_harness.measures.base import Measure
    from exam_harness.measures.context import ScoringInput
    from exam_harness.report.writers import Writer, WriterInput
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.schema import ExamReport
    from exam_harness.results.scored import Scored, ScoringFront, ScoringInputs
    from exam_harness.results.sections import Section
    from exam_harness.session.grades import ExtraGrading, Graded

# the markers ``pytest.hookspec`` and ``pytest.hookimpl`` are (project "pytest"), made here so that the command
# line adds these specifications to its manager, and a feature marks its implementations, without importing pytest
hookspec = pluggy.HookspecMarker("pytest")
hookimpl = pluggy.HookimplMarker("pytest")


@hookspec
def pytest_exam_register_graders(registry: GraderRegistry) -> None:
    """Add grader factories with ``registry.register(name, factory_or_"module:attr", description)``.

    A factory is a :class:`exam_harness.graders.base.Grader` subclass (its ``options`` declare what
    ``--exam-grader-option`` accepts) or any callable taking a ``GraderConfig``. Called whenever a
    front end needs the graders: before the grader named by ``--exam-grader`` is created, and by
    ``exam-harness graders``/``evaluate``/``analyze``.
    """


@hookspec
def pytest_exam_register_bank_formats(registry: Registry[BankFormat]) -> None:
    """Add bank file formats (objects with ``claims(path)`` and ``load(path)``; see ``io/formats.py``).

    Formats a plugin registers are asked before the built-in ones, in pytest's bank collection and in
    ``exam-harness evaluate --bank`` alike, so a format may claim any file name.
    """


@hookspec
def pytest_exam_register_run_formats(registry: Registry[RunFormat]) -> None:
    """Add run-side file formats (objects with ``collection``, ``claims(path)`` and ``read(path, keep)``
    returning an ``exam_harness.io.parts.FilePart``); asked before the built-in ones."""


@hookspec
def pytest_exam_register_measures(registry: Registry[type[Measure]]) -> None:
    """Add measure families (``Measure`` subclasses) that ``--exam-measures``/``--measures`` can name."""


@hookspec
def pytest_exam_register_reporters(registry: Registry[Writer]) -> None:
    """Add writers: objects whose ``files(out)`` return files by name (each a text, an iterable of its
    pieces, or a ``Binary``) from ``out.document`` (the pytest report or ``evaluate``'s document) and what
    stands beside it (``out.plan``, ``out.qrels``). Both front ends write them into their report set with
    the built-in ones (see ``report/writers.py``)."""


@hookspec
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    """Add sections of the result document (objects of the ``Section`` protocol, results/sections.py:
    ``name``, ``title``, ``model``, ``compute(scored)`` and the terminal, markdown and HTML renderings).
    Both front ends compute every registered section and every output shows it: the terminal summary,
    the JSON report, markdown, HTML and ``exam-harness evaluate`` (``--json`` too)."""


@hookspec(historic=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    """Add options to the one option schema: ``options.add(feature_option("NAME", default, help, convert,
    group=GROUP))`` (config/options.py). pytest registers ``--exam-NAME`` and the ini key ``exam_NAME``, every
    subcommand that takes ``GROUP``'s options ``--NAME`` (``fronts=("cli",)`` or ``("pytest",)`` for one front end);
    the value, converted as every option's, is ``options.feature(OPTION)`` of the ``ExamOptions`` both front ends
    read. Historic: a conftest.py pytest loads later adds its options too."""


@hookspec
def pytest_exam_inputs(options: ExamOptions, front: ScoringFront, inputs: ExamInputs) -> None:
    """Adjust how the exam's inputs are read, before any file is (exam/inputs.py): ``inputs.run_formats`` replaced
    by a registry whose formats the feature's options configure, or run-side files an option names supplied with
    the banks they bring (``inputs.supply(SuppliedInputs(...))``: read among the runs; their banks replace the bank
    files' banks of their topics). ``inputs.given_runs`` and ``inputs.given_banks`` are what the front end was given
    (evaluate's run files and ``--bank`` files). Called when a front end makes its inputs: a pytest session at its
    first use of them, ``evaluate`` (and the subcommands that grade as it does) before reading any; an
    ``InputError`` or ``ConfigError`` stops either before any grading."""


@hookspec
def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    """Add what a feature's sections read beside the grades: ``inputs.set(KEY, value)`` with an
    ``InputKey[T]`` of the feature's own; a section reads it as ``scored.input(KEY)`` (results/scored.py).
    ``front`` is ``"pytest"`` (called at configure, before any grading) or ``"evaluate"`` (before grading too;
    a library call of ``report.evaluation.evaluate_exam`` asks the in-tree features). Raise ``ConfigError`` for
    a bad value: it stops the session or command before any grading."""


@hookspec
def pytest_exam_planned_measures(exam: ScoringInput, grader: GraderSpec) -> list[Measure] | None:
    """Measures a feature plans for every exam that holds what they score, beside the plan's own (EXAM-Cover,
    n-EXAM, nugget F ...): unbound ``Measure`` objects, each bound to the plan at every tau scored (None or [] for
    none). ``exam`` is what the measures read (measures/context.py: the queries, test points, grades, nugget
    importance ...), ``grader`` the identity of the grader that gave the grades (core/grade_kinds.py says what kind
    they are). Asked by both front ends as they score (results/scoring.py)."""


@hookspec
def pytest_exam_register_gate_figures(registry: Registry[GateFigure]) -> None:
    """Add gate figures (objects of the ``GateFigure`` protocol, config/gates.py: ``name``, ``title``, ``section``,
    ``lower_is_better``, ``value(content, run)``): a section's value per run that ``--exam-fail-under`` and
    ``exam-harness verdict --fail-under`` gate by name (``[RUN=]NAME:LIMIT``), decided by results/verdict.py for
    both, from the document."""


@hookspec
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    """Add ``exam-harness NAME`` subcommands (objects of the ``Command`` protocol, config/commands.py: ``help``,
    ``description``, ``add_arguments(parser)``, ``run(args) -> int``), listed by ``exam-harness --help``."""


@hookspec(firstresult=True)
def pytest_exam_grading_engine(options: ExamOptions, grader: Grader, recipe: GraderRecipe) -> Engine | None:
    """The engine that grades the grading pass's cache misses (an object of the ``Engine`` protocol,
    grading/engines.py), or None to leave them to the pass itself. Asked once per grading set-up, by both front
    ends, after ``grader`` is created; ``recipe`` builds the same grader again in another process (a worker's).
    The first plugin that answers decides (the ray_engine feature answers for ``--exam-engine ray``)."""


@hookspec
def pytest_exam_register_label_screens(registry: Registry[LabelScreen]) -> None:
    """Add labelling screens of ``exam-harness label`` (objects of the ``LabelScreen`` protocol,
    analysis/label_screens.py: ``unavailable()``, ``label(pairs, write, blind=, earlier=)``): the command labels on
    the first one that can run here under ``--screen on``, or ``auto`` on a terminal, else with its line prompt."""


@hookspec
def pytest_exam_extra_grading(options: ExamOptions, graded: Graded) -> ExtraGrading | None:
    """``exam-harness evaluate`` only: pairs a feature grades beyond the exam's pool once its grading pass is done
    (the citation-support feature's ``--support``: every answer sentence against each document it cites), through
    the grade cache; ``graded`` is the exam's inputs, grades and plan (session/grades.py). Return an
    ``ExtraGrading``: the pass's outcome (pairs left without a grade are said after the outputs, and the command
    exits 1) and what the measures read of it (``support``: the citation measures' credits), or None. A
    ``ConfigError`` stops the command before scoring."""


@hookspec
def pytest_exam_write_outputs(options: ExamOptions, out: WriterInput) -> list[Path] | None:
    """Write the files a feature's options ask for beside the front end's outputs (after them): ``out`` is what the
    writers read (report/writers.py); return the paths written (the command line prints them, the pytest summary
    lists them). Write each file atomically (io/textio.py)."""


@hookspec
def pytest_exam_grading_finished(plan: ExamPlan, outcome: GradingOutcome) -> None:
    """Called after the grading pass with every grade and failure: in a pytest session before any exam case runs,
    in ``exam-harness evaluate`` before scoring."""


@hookspec
def pytest_exam_report(report: ExamReport | EvaluationReport, plan: ExamPlan) -> None:
    """Called once the result document is complete and its files are written: at session finish by the process
    that writes reports (an ``ExamReport``), and by ``exam-harness evaluate`` (its ``EvaluationReport``).

    Publish scores anywhere else from here (a dashboard, a database, a PR comment).
    """


@hookspec
def pytest_exam_verdict_checks(document: ExamReport | EvaluationReport) -> list[GateResult] | None:
    """Checks always made on a result document beside the gates asked for (results/verdict.py): a failed
    ``GateResult`` for what a feature's section says failed (the cost feature's ``exam-max-cost``, the live systems'
    ``exam-stale``), from the document alone, so that ``exam-harness verdict`` on a saved document decides as the
    session did. Asked by both front ends and ``verdict``; the in-tree features' checks come in their order."""


@hookspec
def pytest_exam_unanswered(scored: Scored) -> Mapping[str, Collection[str]] | None:
    """Run -> the queries a feature says the run holds no answer for (a live system failed on them): their scores
    count them as not covered, marked incomplete (report/core.py, both front ends)."""


@hookspec
def pytest_exam_run_notes(runs: Collection[str], folders: Sequence[Path]) -> list[str] | None:
    """Warnings about the run-side files ``exam-harness evaluate`` read (``runs``: the runs' names; ``folders``: the
    run files and folders it was given), each printed on standard error after grading (a live system's manifest
    with no run beside it)."""


@hookspec
def pytest_exam_compare_tables(old: ExamReport, new: ExamReport, title_suffix: str,
                               limit: int | None) -> list[RenderableType] | None:
    """Tables ``exam-harness compare OLD NEW`` prints after its own (the flips feature's flipped test points):
    ``title_suffix`` names the two reports, ``limit`` is ``--limit`` (None: every row)."""


@hookspec
def pytest_exam_configure(config: pytest.Config, options: ExamOptions, inputs: Callable[[], ExamInputs],
                          scoring: ScoringInputs) -> None:
    """pytest only: the exam session is configured, its options read and its collector registered, before its
    grading and reporting plugins are (a plugin of pytest's hooks registered here, with
    ``config.pluginmanager.register``, takes its place among them). ``inputs()`` is the exam's inputs (made on
    first call); ``scoring`` the session's scoring inputs (``pytest_exam_scoring_inputs``), where a feature may
    set one its session fills later. A ``ConfigError`` or ``InputError`` is a usage error."""


@hookspec
def pytest_exam_before_grading(config: pytest.Config, queries: Callable[[str], Sequence[Query]]) -> None:
    """pytest only: make the runs the session's cases read before they are graded (a live system's answers, added
    to the inputs' ``extra_runs`` and read again after ``forget_runs()``): in a single process before the first
    case, on the pytest-xdist controller before the workers start, on a worker before its first case.
    ``queries(run)``: the queries asked of ``run`` (those of its collected cases; on the controller every query of
    the requested banks). An ``ExamError`` is a usage error."""


@hookspec(firstresult=True)
def pytest_exam_case_error(item: pytest.Item, run: str, query_id: str) -> str | None:
    """pytest only: why the exam case ``item`` (of ``run`` on ``query_id``) is an error before its verdict is read
    (a live system failed on the query), or None; the first message given is the case's error. A feature may
    add a user property to ``item`` (pytest's ERRORS section can then say such cases once)."""
