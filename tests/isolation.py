"""What each test must leave as it found it in this process: an autouse fixture that tests/conftest.py imports.

An in-process pytester session runs in this process: what the plugin or a feature keeps at module level
outlives it (issue 36: a leaked declaration put one test's live systems into a later test's session).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import exam_harness.config.options
import exam_harness.core.host
import exam_harness.features.live_systems.declare
import exam_harness.features.live_systems.secrets
import exam_harness.results.left_out
import exam_harness.results.sections

# Variables the package sets once for its process, on purpose: the command line (OPENBLAS_NUM_THREADS), the
# embedding grader (HF_HUB_OFFLINE), AutoJudge's offline NLTK (NLTK_DATA).
SET_FOR_THE_PROCESS = frozenset({"OPENBLAS_NUM_THREADS", "HF_HUB_OFFLINE", "NLTK_DATA"})
PYTEST_OWN = "PYTEST_CURRENT_TEST"  # rewritten by pytest at each phase of each test, removed by an in-process run


@pytest.fixture(autouse=True)
def isolated_state() -> Iterator[None]:
    """Each test, and the sessions it runs in process, leaves the process as it found it.

    Fails the test that leaves state behind (its teardown errs naming what, and the state is put back so the
    next test starts clean): live systems still declared (the plugin forgets them when a session ends; a
    test declaring them directly clears them itself), a changed working folder, a changed environment
    variable. Put back without failing, as the package keeps them for its process's life by design: the
    secrets live systems named (a command line process scrubs them from every later text; here one test's
    secret would be scrubbed from a later test's output), the folders and the ``conftest`` module the command
    line's conftest import leaves on sys.path and in sys.modules (exam_harness/extensions.py), and the
    variables in ``SET_FOR_THE_PROCESS``; and what a front end makes active for its session or command (the
    hook relay scoring calls, the sections registry, the features' options, the notes of what outputs left
    out), which pytest's and the command line's ends reset, but which the tests that build the command line's
    registries directly (``cli_registries``, ``Registries.from_hook``) leave active."""
    declare = exam_harness.features.live_systems.declare
    secrets = exam_harness.features.live_systems.secrets
    leaked = [system.name for system in declare.declared()]
    declare.clear()
    assert not leaked, f"live systems declared before the test began (at import or by an earlier test): {leaked}"
    folder, environment = os.getcwd(), dict(os.environ)
    remembered, path, conftest = set(secrets._SECRETS), list(sys.path), sys.modules.get("conftest")
    lists: list[list[Any]] = [exam_harness.core.host._active, exam_harness.results.sections._active]
    dicts: list[dict[str, Any]] = [exam_harness.config.options._features, exam_harness.results.left_out._noted]
    saved_lists, saved_dicts = [list(state) for state in lists], [dict(state) for state in dicts]
    yield
    left: list[str] = []
    if declare.declared():
        left.append(f"live systems still declared: {[system.name for system in declare.declared()]}")
    declare.clear()
    if os.getcwd() != folder:
        left.append(f"the working folder changed from {folder} to {os.getcwd()}")
        os.chdir(folder)
    changed = sorted(name for name in {*environment, *os.environ} - {PYTEST_OWN}
                     if environment.get(name) != os.environ.get(name))
    if set(changed) - SET_FOR_THE_PROCESS:
        left.append(f"environment variables changed: {', '.join(sorted(set(changed) - SET_FOR_THE_PROCESS))}")
    for name in changed:  # only these: threads a test left running may read the others meanwhile
        if name in environment:
            os.environ[name] = environment[name]
        else:
            del os.environ[name]
    secrets._SECRETS.clear()
    secrets._SECRETS.update(remembered)
    sys.path[:] = path
    for state, saved in zip(lists, saved_lists):
        state[:] = saved
    for mapping, saved_mapping in zip(dicts, saved_dicts):
        mapping.clear()
        mapping.update(saved_mapping)
    if conftest is None:
        sys.modules.pop("conftest", None)
    else:
        sys.modules["conftest"] = conftest
    if left:
        pytest.fail("the test left state behind for later tests (put back now): " + "; ".join(left), pytrace=False)

