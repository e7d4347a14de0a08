"""The in-tree features: each one plugin, registered with the plugin manager by both front ends before any
third-party plugin (as pytest registers its ``default_plugins``), and adding its sections, options, scoring
inputs, gate figures, writers, formats, measures and subcommands only through the hooks ``exam_harness.api``
declares.

:data:`FEATURES` names them; feature ``NAME`` is the package ``exam_harness/features/NAME/``, whose ``plugin``
module holds its hook implementations (marked ``tryfirst``: its entries come before a third-party plugin's, after
the built-in ones) and whose ``__init__`` declares ``REQUIRES``, the other features it imports
(tests/project/test_architecture.py checks that a feature imports no other one it does not declare, and that
nothing below the features imports one). A feature is blocked like any pytest plugin: ``-p no:exam-feature-NAME``.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

FEATURES: tuple[str, ...] = (
    "judge_variance",  # first: the sections of cost and the others are placed around its section
    "agreement",  # before significance: its section is placed before this one's
    "significance",
    "external_qrels",  # before cost: its section comes after the built-in ones, where it always was
    "cost",  # before live_systems: the verdict's budget check has come before the exam-stale one
    "flips",
    "live_systems",
    "calibration",  # after live_systems: its section is placed before the live-systems section
    "trec_rag",  # after cost: its section is placed before the cost section
    "citation_support",
    "workbench",
    "autojudge",
    "generate",
    "ray_engine",
    "view",
)
PLUGIN_NAME = "exam-feature-{}"


def plugin_modules() -> list[tuple[str, ModuleType]]:
    """``(plugin name, module)`` of every in-tree feature, in :data:`FEATURES` order."""
    return [(PLUGIN_NAME.format(name), importlib.import_module(f"exam_harness.features.{name}.plugin"))
            for name in FEATURES]


def register_features(manager: Any) -> None:
    """Register every in-tree feature with ``manager`` (pytest's or the command line's), unless blocked. Registered
    last first: pluggy calls the latest registration first, so the features' hooks run in :data:`FEATURES` order."""
    for name, module in reversed(plugin_modules()):
        if not manager.is_blocked(name) and not manager.has_plugin(name):
            manager.register(module, name)


@functools.cache
def default_manager() -> Any:
    """A plugin manager with the hook specifications and the in-tree features alone: the defaults of a library
    caller that scores or reads a document with no front end (core/host.py)."""
    import pluggy

    from exam_harness import hookspecs

    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(hookspecs)
    register_features(manager)
    return manager
