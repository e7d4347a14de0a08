"""The command line and Python's cyclic collector: the subcommand's imports and the loaded inputs are
frozen out of the collector's passes while it is paused (a pass started by the first allocation after a
resume would walk all of them), and nothing stays frozen after ``main`` returns."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from exam_harness.cli import main
from tests.helpers import write_exam


def _recording(calls: list[tuple[str, bool]], name: str, function: Callable[..., object]) -> Callable[..., object]:
    def recorded(*args: object, **kwargs: object) -> object:
        calls.append((name, gc.isenabled()))
        return function(*args, **kwargs)

    return recorded


@pytest.fixture
def collector_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """(what, whether the collector ran then) for every subcommand import and every freeze."""
    calls: list[tuple[str, bool]] = []
    real_import = importlib.import_module

    def import_module(name: str, package: str | None = None) -> ModuleType:
        if name.startswith("exam_harness.cli."):  # a subcommand's module (other callers import sections)
            calls.append((f"import {name}", gc.isenabled()))
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    monkeypatch.setattr(gc, "freeze", _recording(calls, "freeze", gc.freeze))
    return calls


def test_evaluate_imports_and_freezes_with_the_collector_paused_and_leaves_nothing_frozen(
    collector_calls: list[tuple[str, bool]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, official = write_exam(tmp_path / "data")
    assert gc.isenabled()
    code = main(["evaluate", str(runs), "--official", str(official), "--k", "2", "--brief", "--bootstrap", "0"])
    capsys.readouterr()
    assert code == 0
    assert collector_calls == [
        ("import exam_harness.cli.evaluate", False),  # the subcommand's modules: imported while paused
        ("freeze", False),  # ... and frozen before the collector resumes
        ("freeze", False),  # the loaded run files: read while paused, frozen before it resumes
    ]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # the command's objects are collectable again (main called in-process)


def test_a_usage_error_leaves_the_collector_running_and_nothing_frozen(
    collector_calls: list[tuple[str, bool]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "--no-such-option"]) == 4
    capsys.readouterr()
    assert ("freeze", False) in collector_calls
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_process_command_keeps_what_it_froze_for_the_exit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main()`` of the console script (no argv): the process ends with the command, and Python's last
    full pass at exit skips what stays frozen."""
    runs, _official = write_exam(tmp_path / "data")
    monkeypatch.setattr("sys.argv", ["exam-harness", "evaluate", str(runs), "--k", "2", "--brief", "--bootstrap", "0"])
    try:
        assert main() == 0
        capsys.readouterr()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
