"""Shared test set-up (fixtures); scaffolding lives in tests/helpers.py.

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
import scipy.stats  # noqa: F401  (imports numpy.fft, a C extension)

import exam_harness.io
import exam_harness.measures
import exam_harness.report.build  # noqa: F401

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project with a deterministic marker grader (see tests/helpers.py)."""
    from tests.helpers import make_project

    return make_project(pytester)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The published data beside the project (../shared/data); skips the test when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA.resolve()
