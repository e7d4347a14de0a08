"""A fixture's product built once per test run, not once per pytest-xdist worker: the first worker to ask builds
it in the run's shared temporary folder under a file lock, the others wait and read it (pytest-xdist's documented
recipe for session fixtures). Only for products the tests read and do not change (reports, a warm cache)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE = ".built"


def built_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str,
               build: Callable[[Path], None]) -> Path:
    """The folder ``name`` with ``build(folder)`` done once in this run (in the worker's own temporary folder
    without xdist). A build that failed leaves no mark: the next worker to ask builds it again, and fails alike."""
    if worker_id == "master":  # no xdist: this process is the run
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder above each worker's basetemp
    folder = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not (folder / DONE).exists():
            if folder.exists():  # a failed build's leftovers
                import shutil

                shutil.rmtree(folder)
            folder.mkdir()
            build(folder)
            (folder / DONE).touch()
    return folder
