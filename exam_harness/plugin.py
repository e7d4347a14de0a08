"""pytest entry point (``pytest11``): options from the one schema, the exam plugins, fixtures.

Imports nothing heavy. Each concern is its own plugin object (``exam_harness/pytest_plugins``),
registered in ``pytest_configure``; the gates only when a gate is asked for.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from exam_harness import hookspecs
from exam_harness.errors import ConfigError, ExamError
from exam_harness.models import Run
from exam_harness.options import (
    GATES,
    GRADING,
    INPUTS,
    REPORTS,
    SCORING,
    SIGNIFICANCE,
    add_pytest_options,
    options_from_pytest,
)
from exam_harness.report.schema import ExamReport

PYTEST_GROUPS = (INPUTS, GRADING, SCORING, SIGNIFICANCE, GATES, REPORTS)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser, PYTEST_GROUPS)
    parser.addini(
        "exam_banks",
        "Bank files or folders collected as exams (default: banks/ when it exists).",
        type="paths",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    from exam_harness.pytest_plugins.collection import ExamCollector, bank_paths
    from exam_harness.pytest_plugins.grading import ExamGrading
    from exam_harness.pytest_plugins.outcomes import ExamOutcomes
    from exam_harness.pytest_plugins.reporting import ExamReporting, InterruptedSummary
    from exam_harness.pytest_plugins.state import SETUP_KEY, ExamSetup

    config.addinivalue_line("markers", "exam_required: a required test point; missing it fails the case")
    try:
        check_swallowed_values(config)
        options = options_from_pytest(config, PYTEST_GROUPS)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SETUP_KEY] = ExamSetup(options=options, bank_roots=bank_paths(config))
    collector = ExamCollector(config)
    grading = ExamGrading(config, collector)
    outcomes = ExamOutcomes(config)
    reporting = ExamReporting(config, grading, outcomes)
    for name, plugin in (
        ("exam-collector", collector),
        ("exam-grading", grading),
        ("exam-outcomes", outcomes),
        ("exam-reporting", reporting),
        ("exam-interrupted-summary", InterruptedSummary(reporting)),
    ):
        config.pluginmanager.register(plugin, name)
    if options.fail_under or options.baseline is not None or options.compare is not None or options.compare_fail:
        from exam_harness.pytest_plugins.gates import ExamGates

        config.pluginmanager.register(ExamGates(config, reporting), "exam-gates")
    if options.markdown is not None or options.html is not None or os.environ.get("GITHUB_STEP_SUMMARY"):
        from exam_harness.pytest_plugins.summaries import ExamSummaries

        config.pluginmanager.register(ExamSummaries(config, reporting), "exam-summaries")
    if options.analysis:
        from exam_harness.pytest_plugins.analyses import ExamAnalyses

        config.pluginmanager.register(ExamAnalyses(config, grading, reporting), "exam-analyses")


def check_swallowed_values(config: pytest.Config) -> None:
    """``--exam-cache /elsewhere/c.sqlite`` (space form): pytest chooses its rootdir and configuration
    before it knows exam-harness's options, so it reads ``/elsewhere/c.sqlite`` as a test path there;
    when that path lies outside the rootdir it settled on, the configuration it found is not the
    project's. Say so instead of running an exam without its configuration."""
    from exam_harness.options import specs

    args = list(config.invocation_params.args)
    names = {f"--exam-{spec.name}" for _, spec in specs(PYTEST_GROUPS, "pytest") if not spec.flag}
    root = Path(config.rootpath).resolve()
    invocation = Path(config.invocation_params.dir)
    for option, value in itertools.pairwise(args):
        path = (invocation / value).resolve() if value and not value.startswith("-") else None
        if option in names and path is not None and path.exists() and root != path and root not in path.parents:
            raise ConfigError(
                f"{option} {value}: pytest read {value!r} as a test path while choosing its rootdir (exam-harness's "
                f"options are not known yet at that point), so it settled on rootdir {root} and its configuration "
                f"file {config.inipath or '(none)'}; write {option}={value} instead"
            )


# ---------------------------------------------------------------------- fixtures for users' tests
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "exam_run" in metafunc.fixturenames:
        from exam_harness.pytest_plugins.state import setup_of

        setup = setup_of(metafunc.config)
        try:
            names = setup.exam_inputs(metafunc.config).run_names(list(setup.options.runs))
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        metafunc.parametrize("exam_run", names, ids=names, scope="session", indirect=True)


@pytest.fixture(scope="session")
def exam_run(request: pytest.FixtureRequest) -> Run:
    """Each run (system) taking the exam, as a :class:`exam_harness.models.Run`; tests using it are
    parametrized over all runs."""
    from exam_harness.pytest_plugins.state import setup_of

    setup = setup_of(request.config)
    return setup.exam_inputs(request.config).load_runs(list(setup.options.runs)).runs[request.param]


@pytest.fixture(scope="session")
def exam_scores(request: pytest.FixtureRequest) -> ExamReport:
    """The exam's scores (:class:`exam_harness.report.schema.ExamReport`) over the collected banks
    (every configured bank when no exam case was collected), grading whatever is not graded yet."""
    from exam_harness.pytest_plugins.collection import bank_paths
    from exam_harness.pytest_plugins.grading import ExamGrading
    from exam_harness.pytest_plugins.state import setup_of
    from exam_harness.report.build import SessionOutcome, build_report

    config = request.config
    grading = config.pluginmanager.get_plugin("exam-grading")
    assert isinstance(grading, ExamGrading)
    setup = setup_of(config)
    inputs = setup.exam_inputs(config)
    try:
        graded = grading.graded or grading.grade(inputs.load_banks(bank_paths(config)))
        built = build_report(
            inputs,
            SessionOutcome(graded.grading, graded.banks),
            graded.plan,
            root=Path(config.rootpath),
            run_paths=list(setup.options.runs),
        )
    except ExamError as exc:
        raise pytest.UsageError(str(exc)) from None
    return built.report
