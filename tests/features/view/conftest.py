"""Fixtures of the viewer's tests: the example exam's reports, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.built_once import built_once
from tests.features.view.example import Example, build_example, example_at

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Example:
    """Built once per test run (both workers read the same one: its tests only read it or label into files of
    their own)."""
    built: list[Example] = []
    root = built_once(tmp_path_factory, worker_id, "view-example", lambda folder: built.append(build_example(folder)))
    return built[0] if built else example_at(root)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here that reads the example exam is slow: building it (two example exams in subprocesses,
    graded by the default model grader) took 94 s of the first such test's set-up in a worker (--durations,
    2 workers on a loaded 2-core machine); ``make test-fast`` leaves them out, and so never builds it."""
    for item in items:
        if item.path.is_relative_to(HERE) and "example" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
