"""Fixtures of the viewer's tests: the example exam's reports, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.features.view.example import Example, build_example

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    return build_example(tmp_path_factory.mktemp("example"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here that reads the example exam is slow: building it (two example exams in subprocesses,
    graded by the default model grader) took 94 s of the first such test's set-up in a worker (--durations,
    2 workers on a loaded 2-core machine); ``make test-fast`` leaves them out, and so never builds it."""
    for item in items:
        if item.path.is_relative_to(HERE) and "example" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
