"""Fixtures of the viewer's tests: the example exam's reports, built once per session."""

from __future__ import annotations

import pytest

from tests.features.view.example import Example, build_example


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    return build_example(tmp_path_factory.mktemp("example"))
