"""The extension registries and how each front end fills them through the same hooks.

Under pytest the hooks are pytest's (installed plugins, ``-p`` plugins and every conftest.py pytest
loaded). The ``exam-harness`` command line builds a small pluggy manager with the same hook
specifications, loads the installed ``pytest11`` plugins and the current folder's ``conftest.py``,
and calls the same registration hooks. Like pytest, it accepts hook functions without a decorator.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

from exam_harness import hookspecs
from exam_harness.errors import ConfigError
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.io.formats import BankFormat, RunFormat, builtin_bank_formats, builtin_run_formats
from exam_harness.measures.base import Measure
from exam_harness.measures.registry import builtin_measures
from exam_harness.registry import Registry
from exam_harness.report.reporters import Reporter, builtin_reporters

HOOK_PREFIX = "pytest_exam_"


@dataclass(frozen=True)
class Registries:
    """One registry per extension point."""

    graders: GraderRegistry
    bank_formats: Registry[BankFormat]
    run_formats: Registry[RunFormat]
    measures: Registry[type[Measure]]
    reporters: Registry[Reporter]

    @classmethod
    def builtin(cls) -> Registries:
        return cls(default_registry(), builtin_bank_formats(), builtin_run_formats(), builtin_measures(),
                   builtin_reporters())

    @classmethod
    def from_hook(cls, hook: Any) -> Registries:
        """Built-in entries plus what plugins register through ``hook`` (pytest's or the CLI's)."""
        registries = cls.builtin()
        hook.pytest_exam_register_graders(registry=registries.graders)
        hook.pytest_exam_register_bank_formats(registry=registries.bank_formats)
        hook.pytest_exam_register_run_formats(registry=registries.run_formats)
        hook.pytest_exam_register_measures(registry=registries.measures)
        hook.pytest_exam_register_reporters(registry=registries.reporters)
        return registries


class _Manager(pluggy.PluginManager):
    """Recognises undecorated ``pytest_exam_*`` functions as hook implementations, as pytest does."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX) and callable(getattr(plugin, name, None)):
            return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                    "trylast": False, "specname": None}
        return opts


def cli_plugin_manager(folder: Path | None = None) -> pluggy.PluginManager:
    """Installed ``pytest11`` plugins and ``folder``'s conftest.py (the current folder by default)."""
    manager = _Manager("pytest")
    manager.add_hookspecs(hookspecs)
    try:
        manager.load_setuptools_entrypoints("pytest11")
    except ImportError as exc:
        raise ConfigError(f"an installed pytest plugin cannot be imported: {exc}") from exc
    conftest = (folder or Path.cwd()) / "conftest.py"
    if conftest.is_file():
        manager.register(_import_conftest(conftest), name=str(conftest))
    return manager


def _import_conftest(path: Path) -> object:
    # Import it the way pytest's rootdir conftest would be: its folder on sys.path, module name conftest.
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("conftest", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ConfigError(f"{path} raised {type(exc).__name__} on import: {exc}") from exc
    return module


def cli_registries(folder: Path | None = None) -> Registries:
    """The registries the command line uses: built-ins, installed plugins and the folder's conftest.py."""
    return Registries.from_hook(cli_plugin_manager(folder).hook)
