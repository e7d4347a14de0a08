"""The plugin host's hooks as the layers below the front ends call them (the scoring inputs, the sections).

A front end makes its hook relay the active one (:func:`use_hook`: pytest's ``config.hook``, the command line's
manager) and resets it when its session or command ends. A library caller that scores or reads a document with no
front end gets the in-tree defaults: the built-in features (exam_harness/features) registered with the hook
specifications, as both front ends register them. That default is bound late, by name, as the registries name
their entries (``"module:attr"``): this module, at the bottom, imports nothing above it.

A caller that runs an exam as a subcommand would, with no front end of its own (a feature's judge class that
another tool's runner makes), asks for the command line's plugins (:func:`command_line_hook`: the installed
plugins and the current folder's conftest.py, with the in-tree features), bound late by name the same way.
"""

from __future__ import annotations

import importlib
from typing import Any

_active: list[Any] = []
DEFAULTS = "exam_harness.features:default_manager"  # the in-tree features' plugin manager (see the docstring)
COMMAND_LINE = "exam_harness.extensions:cli_plugin_manager"  # the command line's plugin manager (see the docstring)


def use_hook(hook: Any) -> None:
    """Make ``hook`` (a pluggy hook relay) the one the layers below the front ends call."""
    _active[:] = [hook]


def reset_hook() -> None:
    """Back to the in-tree defaults (a session's or command's plugins end with it)."""
    _active.clear()


def active_hook() -> Any:
    """The front end's hook relay, else that of the in-tree features alone."""
    if not _active:
        _active.append(in_tree_hook())
    return _active[0]


def in_tree_hook() -> Any:
    """The hook relay of the in-tree features alone, whatever the front end (what the docs list they declare)."""
    module, _, factory = DEFAULTS.partition(":")
    return getattr(importlib.import_module(module), factory)().hook


def command_line_hook() -> Any:
    """The hook relay of the command line's plugin manager for the current folder (see the module docstring)."""
    module, _, factory = COMMAND_LINE.partition(":")
    return getattr(importlib.import_module(module), factory)().hook
