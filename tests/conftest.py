"""Shared test set-up (fixtures); scaffolding lives in tests/helpers.py.

pytester's in-process runs drop modules first imported inside them; C extensions such as numpy
cannot be imported twice in one process, so the modules the plugin loads lazily are imported here. Modules
holding state are too: a second copy of the live systems' declarations (``exam_harness.system`` writing into the
dropped copy's table, the session clearing the new one's) kept one test's systems in a later test's session.
What else a session leaves in the process is checked around every test (tests/isolation.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy  # noqa: F401
import openai  # noqa: F401  (its HTTP transport too: a re-import mid-run breaks its timeouts)
import pytest
import pytrec_eval  # noqa: F401
import rich.progress  # noqa: F401
import scipy.stats  # noqa: F401  (imports numpy.fft, a C extension)

# transformers' lazy modules, first imported inside an in-process pytester run, are dropped after it and then
# fail to import again ("Could not import module 'PreTrainedModel'"): the embedding, cascade and reranker
# graders met that depending on which test ran first in a worker
import sentence_transformers  # noqa: F401
import torch  # noqa: F401  (a C extension the default grader loads: imported twice it crashes the process)
import transformers.modeling_utils  # noqa: F401

import exam_harness.features.live_systems.declare
import exam_harness.io
import exam_harness.measures
import exam_harness.report.build
import exam_harness.results.document  # noqa: F401
from tests.isolation import isolated_state  # noqa: F401  (an autouse fixture)
from tests.paths import SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def openai_transport_loaded() -> None:
    """What the OpenAI client loads lazily on its first request (its HTTP transport, the exception classes
    it maps to its own errors) loaded before any test's in-process pytester run: first imported inside a
    run, those modules are dropped after it, and on the next import the client no longer recognises the
    transport's timeouts and dropped connections, which then escape its retries as raw transport errors.
    Faults on the first request take the retry paths too."""
    from exam_harness.llm.backend import PromptParts
    from exam_harness.llm.openai import OpenAIBackend
    from tests.fake_openai_server import FakeOpenAIServer, Fault

    with FakeOpenAIServer(lambda prompt: "1") as server:
        server.add_next_faults(Fault("slow", delay=5.0), Fault("drop"), Fault("status", status=429, retry_after="0"))
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="test", timeout=0.25,
                                backoff_base=0.001, backoff_max=0.002)
        answers = backend.generate([PromptParts("warm-up", "")], max_new_tokens=2)
    assert [getattr(a, "text", None) for a in answers] == ["1"]


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
