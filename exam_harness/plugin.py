"""pytest entry point (``pytest11``): options, bank collection, fixtures. Imports nothing heavy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exam_harness import hookspecs
from exam_harness.collect import BankFile, is_bank_path
from exam_harness.errors import ExamError
from exam_harness.settings import add_options, bank_paths, settings_from_config
from exam_harness.stash import SESSION_KEY


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from exam_harness.report.writers import BuiltinReporters
    from exam_harness.session import ExamSession

    config.addinivalue_line("markers", "exam_required: a required test point; missing it fails the case")
    try:
        settings = settings_from_config(config)
    except ExamError as exc:
        raise pytest.UsageError(str(exc)) from None
    session = ExamSession(config, settings)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "exam-session")
    config.pluginmanager.register(BuiltinReporters(), "exam-reporters")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        del config.stash[SESSION_KEY]


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not is_bank_path(file_path.name):
        return None
    config = parent.config
    roots = [p.resolve() for p in bank_paths(config)]
    named = [Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args]
    resolved = file_path.resolve()
    # A bank file is collected when it lies in a configured bank folder or is named on the command line.
    if _under(resolved, roots) or resolved in named:
        return BankFile.from_parent(parent, path=file_path)
    return None


# ---------------------------------------------------------------------- fixtures for users' tests
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "exam_run" in metafunc.fixturenames:
        session = metafunc.config.stash[SESSION_KEY]
        try:
            names = session.run_names()
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        metafunc.parametrize("exam_run", names, ids=names, scope="session", indirect=True)


@pytest.fixture(scope="session")
def exam_session(request: pytest.FixtureRequest) -> Any:
    """The exam session: settings, loaded data (``.data``), grader spec and grading outcome."""
    return request.config.stash[SESSION_KEY]


@pytest.fixture(scope="session")
def exam_run(request: pytest.FixtureRequest, exam_session: Any) -> Any:
    """Each run (system) taking the exam, as a :class:`exam_harness.models.Run`; tests using it are
    parametrized over all runs."""
    return exam_session.data.runs[request.param]


@pytest.fixture(scope="session")
def exam_scores(exam_session: Any) -> Any:
    """The exam's scores (:class:`exam_harness.report.schema.ExamReport`) over the collected banks,
    grading whatever is not graded yet. Use it to assert on scores in your own tests."""
    from exam_harness.scoring import build_report

    if exam_session.outcome is None:
        exam_session.grade(exam_session.all_banks())
    return build_report(exam_session)
