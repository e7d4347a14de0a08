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
    from exam_harness.core.registry import Registry
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.graders.registry import GraderRegistry
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.io.formats import BankFormat, RunFormat
    from exam_harness.measures.base import Measure
    from exam_harness.report.writers import Writer
    from exam_harness.results.schema import ExamReport
    from exam_harness.results.sections import Section

# the marker ``pytest.hookspec`` is (project "pytest"), made here so that the command line adds these
# specifications to its manager without importing pytest
hookspec = pluggy.HookspecMarker("pytest")


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


@hookspec
def pytest_exam_grading_finished(plan: ExamPlan, outcome: GradingOutcome) -> None:
    """Called after the grading pass, before any exam case runs, with every grade and failure."""


@hookspec
def pytest_exam_report(report: ExamReport, plan: ExamPlan) -> None:
    """Called at session finish by the process that writes reports, after the report files are written.

    Publish scores anywhere else from here (a dashboard, a database, a PR comment).
    """
