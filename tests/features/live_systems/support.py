"""The live systems' example project, shared by the tests of live systems and of what reads their
outputs: the example conftest with a dict system added, the session run in process, what the system was called
with and the manifest it recorded."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.paths import REPO

QUERIES = ["tides", "vaccines", "sky", "photosynthesis"]  # the example bank's queries

DICT_SYSTEM = '''
import exam_harness
from pathlib import Path

ANSWERS = {
    "tides": "The gravitational pull of the moon raises two tidal bulges; spring and neap tides follow.",
    "vaccines": "Vaccines expose the immune system to an antigen; memory B and T cells remain.",
    "sky": "Rayleigh scattering of blue light by air molecules makes the sky blue.",
    "photosynthesis": "In plants, chlorophyll absorbs light; glucose stores the energy.",
}

@exam_harness.system("dict-rag", concurrency=CONCURRENCY)
def dict_rag(query):
    with open(Path(__file__).parent / "calls.log", "a") as log:
        log.write(query.id + "\\n")
    BODY
    return ANSWERS.get(query.id, "I do not know.")
'''


def conftest(body: str = "pass", concurrency: int = 4, extra: str = "") -> str:
    own = (REPO / "conftest.py").read_text()
    return own + DICT_SYSTEM.replace("BODY", body).replace("CONCURRENCY", str(concurrency)) + extra


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for folder in ("banks", "runs"):
        shutil.copytree(REPO / folder, pytester.path / folder)
    shutil.copy(REPO / "pyproject.toml", pytester.path / "pyproject.toml")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("EXAM_SYSTEM_MODE", raising=False)
    return pytester


def exam(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    # The example's filterwarnings=error would turn pytest's "already imported, cannot rewrite" note
    # about the installed plugin (imported by this test process) into an internal error.
    return run("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
               "--exam-grader", "lexical", "--exam-cache", "none",
                              "--junitxml", "junit.xml", *args)


def calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    calls = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def manifest(pytester: pytest.Pytester, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((pytester.path / "runs" / f"{name}.system.json").read_text())
    return loaded


RANKING_SYSTEM = '''
@exam_harness.system("dict-retriever", kind="ranking")
async def dict_retriever(query):
    text = ANSWERS.get(query.id, "nothing relevant")
    return [exam_harness.Passage(None, text, 2.0), ("fixed-" + query.id, "an unrelated passage", 1.0)]
'''
