"""Fixtures of the live systems' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from exam_harness.features.live_systems import declare


@pytest.fixture(autouse=True)
def fresh_declarations() -> Iterator[None]:
    """Each test declares its own systems: none from an earlier test, none left for a later one."""
    declare.clear()
    yield
    declare.clear()
