"""Shared test set-up.

pytester's in-process runs drop modules first imported inside them; C extensions such as numpy
cannot be imported twice in one process, so the modules the plugin loads lazily are imported here.
"""

from __future__ import annotations

from pathlib import Path

import numpy  # noqa: F401
import openai  # noqa: F401  (its HTTP transport too: a re-import mid-run breaks its timeouts)
import pytest
import pytrec_eval  # noqa: F401
import rich.progress  # noqa: F401

import exam_harness.io  # noqa: F401
import exam_harness.metrics  # noqa: F401
import exam_harness.report.writers  # noqa: F401
import exam_harness.scoring  # noqa: F401

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The published data beside the project (../shared/data); skips the test when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA.resolve()
