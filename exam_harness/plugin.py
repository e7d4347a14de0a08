"""pytest entry point (``pytest11``): options from the one schema, the in-tree features, the exam plugins, fixtures.

Imports nothing heavy. The in-tree features (exam_harness/features) are registered with the hook specifications,
before any conftest.py; each concern of the session is its own plugin object (``exam_harness/pytest_plugins``),
registered in ``pytest_configure``; the gates only when a gate is asked for.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from exam_harness import hookspecs
from exam_harness.config.options import (
    PYTEST_GROUPS,
    FeatureOption,
    FeatureOptions,
    add_pytest_option,
    add_pytest_options,
    options_from_pytest,
)
from exam_harness.core.errors import ConfigError, ExamError, InputError
from exam_harness.core.models import Run
from exam_harness.results.schema import ExamReport


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from exam_harness.features import register_features

    pluginmanager.add_hookspecs(hookspecs)
    register_features(pluginmanager)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    def add(option: FeatureOption[object]) -> None:  # a feature's option of the groups pytest registers
        if option.spec.group in PYTEST_GROUPS:
            add_pytest_option(parser, option.name, option.spec)

    declared = FeatureOptions(on_add=add)  # the session's feature options start here
    add_pytest_options(parser, PYTEST_GROUPS)
    parser.addini(
        "exam_banks",
        "Bank files or folders collected as exams (default: banks/ when it exists).",
        type="paths",
        default=[],
    )
    pluginmanager.hook.pytest_exam_add_options.call_historic(kwargs={"options": declared})


def pytest_unconfigure(config: pytest.Config) -> None:
    from exam_harness.config.options import reset_feature_options
    from exam_harness.core.host import reset_hook
    from exam_harness.results.sections import reset_sections

    # what this session's plugins registered ends with it (pytester runs sessions in-process)
    reset_sections()
    reset_hook()
    reset_feature_options()


def pytest_configure(config: pytest.Config) -> None:
    from exam_harness.pytest_plugins.collection import ExamCollector, bank_paths
    from exam_harness.pytest_plugins.grading import ExamGrading
    from exam_harness.pytest_plugins.outcomes import ExamOutcomes
    from exam_harness.pytest_plugins.reporting import ExamReporting, InterruptedSummary
    from exam_harness.pytest_plugins.state import SETUP_KEY, ExamSetup

    config.addinivalue_line("markers", "exam_required: a required test point; missing it fails the case")
    if config.option.help:  # help is shown whatever the ini file holds
        return
    try:
        check_ini_keys(config)
        check_swallowed_values(config)
        options = options_from_pytest(config, PYTEST_GROUPS)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if options.shard is not None and options.cache is None:
        raise pytest.UsageError(f"--exam-shard={options.shard[0]}/{options.shard[1]} grades into the grade cache and "
                                "keeps nothing else: with --exam-cache=none its grades would be lost; give "
                                "--exam-cache a file of this shard's own (docs/shards.md)")
    if (options.dry_run or options.shard is not None) and getattr(config.option, "dist", "no") != "no":
        # A dry run grades nothing and a shard runs no case, so pytest-xdist's workers have nothing to do: this
        # process counts or grades
        # (xdist decides in its own, later pytest_configure).
        config.option.dist = "no"
    from exam_harness.core.host import use_hook
    from exam_harness.results.scored import collect_scoring_inputs

    use_hook(config.hook)  # the hooks scoring calls (core/host.py): this session's plugins
    try:
        inputs = collect_scoring_inputs(options, "pytest", config.hook)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    setup = config.stash[SETUP_KEY] = ExamSetup(options=options, bank_roots=bank_paths(config), scoring_inputs=inputs)
    collector = ExamCollector(config)
    config.pluginmanager.register(collector, "exam-collector")
    try:
        # the features' session plugins (the live systems'), registered between the collector and the grading
        config.hook.pytest_exam_configure(config=config, options=options, inputs=lambda: setup.exam_inputs(config),
                                          scoring=inputs)
    except (ConfigError, InputError) as exc:
        raise pytest.UsageError(str(exc)) from None
    grading = ExamGrading(config, collector)
    outcomes = ExamOutcomes(config)
    reporting = ExamReporting(config, grading, outcomes)
    for name, plugin in (
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
        from exam_harness.session.builtin_analyses import pytest_analyses

        try:
            analyses = pytest_analyses(config.hook, options.analysis)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(ExamAnalyses(config, grading, reporting, analyses), "exam-analyses")


def check_ini_keys(config: pytest.Config) -> None:
    """An ``exam_*`` key of the ini file that no option declares is a usage error with a did-you-mean:
    a misspelt gate (``exam_fail_undr``) would otherwise leave the gate off behind a mere warning."""
    import difflib

    from exam_harness.config.options import specs

    known = sorted({spec.ini_name for _, spec in specs(PYTEST_GROUPS, "pytest")} | {"exam_banks"})
    # pytest 9 keeps the ini file's keys in ``_inicfg`` (its ``inicfg`` is deprecated); pytest 8 in ``inicfg``.
    present = config._inicfg if hasattr(config, "_inicfg") else config.inicfg
    unknown = sorted(key for key in present if key.startswith("exam_") and key not in known)
    if not unknown:
        return
    where = f" in {config.inipath}" if config.inipath else ""
    lines = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1)
        lines.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"unknown exam-harness ini option{'s' if len(unknown) > 1 else ''}{where}: "
                      f"{', '.join(lines)}; 'pytest --help' lists the exam_* ini options")


def check_swallowed_values(config: pytest.Config) -> None:
    """``--exam-runs /elsewhere/runs`` (space form): pytest chooses its rootdir and configuration file
    before it knows exam-harness's options, so it reads ``/elsewhere/runs`` as a test path then. When the
    rootdir or configuration file it chose differs from the one it chooses without those values, the
    session would run without the project's configuration: refused, naming the ``=`` form. When both
    are the same (``pytest banks --exam-runs /elsewhere/runs``), the command is right and runs."""
    from exam_harness.config.options import specs

    names = {f"--exam-{spec.name}" for _, spec in specs(PYTEST_GROUPS, "pytest") if not spec.flag}
    swallowed = [(option, value) for option, value in itertools.pairwise(config.invocation_params.args)
                 if option in names and value and not value.startswith("-")]
    if not swallowed:
        return
    rootpath, inipath = setup_without_swallowed(config)
    if rootpath == config.rootpath and inipath == config.inipath:
        return
    # blame the value that moves the rootdir: a harmless one before it (--exam-runs runs) is not the cause
    option, value = next(((option, value) for option, value in swallowed
                          if setup_without_swallowed(config, value) != (rootpath, inipath)), swallowed[0])
    raise ConfigError(
        f"{option} {value}: pytest read {value!r} as a test path while choosing its rootdir (exam-harness's "
        f"options are not known yet at that point), so it settled on rootdir {config.rootpath} and configuration "
        f"file {config.inipath or '(none)'} instead of {rootpath} and {inipath or '(none)'}; write "
        f"{option}={value} instead"
    )


def setup_without_swallowed(config: pytest.Config, *extra: str) -> tuple[Path, Path | None]:
    """The rootdir and configuration file pytest chooses from the command line's test paths as parsed
    with every option known (the swallowed values belong to their options then); with ``extra``, as if
    those values were test paths too."""
    import inspect

    from _pytest.config.findpaths import determine_setup

    option = config.option
    given = {"inifile": option.inifilename, "override_ini": option.override_ini,
             "args": [*(str(arg) for arg in option.file_or_dir or ()), *extra],
             "rootdir_cmd_arg": option.rootdir or None,
             "invocation_dir": Path(config.invocation_params.dir)}
    accepted = inspect.signature(determine_setup).parameters  # its keywords differ between pytest 8 and 9
    rootpath, inipath, *_ = determine_setup(**{k: v for k, v in given.items() if k in accepted})
    return Path(rootpath), inipath


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
    """Each run (system) taking the exam, as a :class:`exam_harness.core.models.Run`; tests using it are
    parametrized over all runs."""
    from exam_harness.pytest_plugins.state import setup_of

    setup = setup_of(request.config)
    return setup.exam_inputs(request.config).load_runs(list(setup.options.runs)).runs[request.param]


@pytest.fixture(scope="session")
def exam_scores(request: pytest.FixtureRequest) -> ExamReport:
    """The exam's scores (:class:`exam_harness.results.schema.ExamReport`) over the collected banks
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
            SessionOutcome(graded.grading, graded.banks, inputs=setup.scoring_inputs),
            graded.plan,
            root=Path(config.rootpath),
            run_paths=list(setup.options.runs),
        )
    except ExamError as exc:
        raise pytest.UsageError(str(exc)) from None
    return built.report
