"""The command line's plugin host: how it fills the extension registries (session/registries.py) through the
hooks pytest's plugins fill them with.

Under pytest the hooks are pytest's (the in-tree features plugin.py registers, installed plugins, ``-p``
plugins and every conftest.py pytest loaded). The ``exam-harness`` command line builds a small pluggy manager
with the same hook specifications, registers the in-tree features (exam_harness/features) first, loads the
installed ``pytest11`` plugins of packages that require exam-harness and the current folder's ``conftest.py``,
and calls the same registration hooks. Like pytest, it accepts hook functions without a decorator.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

import pluggy

from exam_harness import hookspecs
from exam_harness.config.options import FeatureOptions
from exam_harness.core.errors import ConfigError
from exam_harness.features import register_features
from exam_harness.session.registries import Registries as Registries  # re-exported: the front ends' registries

HOOK_PREFIX = "pytest_exam_"
PROJECT = "exam-harness"
_REQUIREMENT_NAME = re.compile(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*")


class _Manager(pluggy.PluginManager):
    """Recognises undecorated ``pytest_exam_*`` functions as hook implementations, as pytest does."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX) and callable(getattr(plugin, name, None)):
            return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                    "trylast": False, "specname": None}
        return opts


# The manager the running command was parsed with (kept by keep_for_command, ended by end_command), by the
# folder and its conftest.py's state: the command's later registries come from it, so a user's conftest.py is
# imported once per command as pytest imports it once per session, not once per registry asked for.
_command_manager: tuple[tuple[Path, tuple[int, int] | None], pluggy.PluginManager] | None = None


def _folder_state(folder: Path | None) -> tuple[Path, tuple[int, int] | None]:
    where = (folder or Path.cwd()).resolve()
    try:
        stat = (where / "conftest.py").stat()
    except OSError:
        return where, None
    return where, (stat.st_mtime_ns, stat.st_size)


def keep_for_command(manager: pluggy.PluginManager, folder: Path | None = None) -> None:
    """``manager`` serves the rest of the running command (its folder and conftest.py unchanged)."""
    global _command_manager
    _command_manager = (_folder_state(folder), manager)


def end_command() -> None:
    global _command_manager
    _command_manager = None


def cli_plugin_manager(folder: Path | None = None) -> pluggy.PluginManager:
    """The installed ``pytest11`` plugins of packages that require exam-harness, and ``folder``'s
    conftest.py (the current folder by default); the running command's own where it has one."""
    if _command_manager is not None and _command_manager[0] == _folder_state(folder):
        return _command_manager[1]
    manager = _Manager("pytest")
    manager.add_hookspecs(hookspecs)
    register_features(manager)  # before any third-party plugin, as plugin.py registers them in pytest
    for entry_point in exam_plugin_entry_points():
        if manager.has_plugin(entry_point.name) or manager.is_blocked(entry_point.name):
            continue
        try:
            plugin = entry_point.load()
        except ImportError as exc:
            raise ConfigError(f"an installed pytest plugin cannot be imported: {exc}") from exc
        manager.register(plugin, name=entry_point.name)
    conftest = (folder or Path.cwd()) / "conftest.py"
    if conftest.is_file():
        module = _import_conftest(conftest)
        manager.register(module, name=str(conftest))
        _register_named_plugins(manager, module, conftest)
    return manager


def _register_named_plugins(manager: pluggy.PluginManager, conftest: object, path: Path) -> None:
    """The plugins the conftest.py names in ``pytest_plugins`` (a module name or a list of them), registered as
    pytest registers a root conftest's: one line makes a plugin module serve both front ends."""
    named = getattr(conftest, "pytest_plugins", ())
    for name in [named] if isinstance(named, str) else list(named):
        if manager.has_plugin(name) or manager.is_blocked(name):
            continue
        try:
            plugin = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"{path}: pytest_plugins names {name!r}, which cannot be imported: {exc}") from exc
        manager.register(plugin, name=name)


def exam_plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The ``pytest11`` entry points of installed packages that declare exam-harness as a requirement,
    exam-harness's own excepted (its pytest plugin registers no extension).

    A plugin's registration hooks are handed exam-harness's registries and fill them with its classes,
    so its package requires exam-harness; other pytest plugins (xdist, hypothesis, anyio, ...) have
    nothing to register and are not imported, which keeps a command's start fast.
    """
    found: list[importlib.metadata.EntryPoint] = []
    for entry_point in importlib.metadata.entry_points(group="pytest11"):
        dist = entry_point.dist
        if dist is None or _project(dist.name) == PROJECT:
            continue
        if any(_project(requirement) == PROJECT for requirement in dist.requires or ()):
            found.append(entry_point)
    return found


def _project(requirement: str) -> str:
    """The normalised project name a requirement (``Exam_Harness[hf]>=0.1; extra == "x"``) starts with."""
    name = _REQUIREMENT_NAME.match(requirement)
    return re.sub(r"[-_.]+", "-", name.group()).lower() if name else ""


def _import_conftest(path: Path) -> object:
    # Import it the way pytest's rootdir conftest would be: its folder on sys.path, module name conftest,
    # and the module in sys.modules before its body runs. Code that looks its own module up by name
    # needs the entry: dataclasses resolves a string annotation ("ClassVar[str]" under
    # ``from __future__ import annotations``) in sys.modules[cls.__module__], and typing.get_type_hints
    # does the same later on.
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("conftest", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get("conftest")
    sys.modules["conftest"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        if previous is None:
            del sys.modules["conftest"]
        else:
            sys.modules["conftest"] = previous
        raise ConfigError(f"{path} raised {type(exc).__name__} on import: {exc}") from exc
    return module


def cli_registries(folder: Path | None = None) -> Registries:
    """The registries the command line uses: built-ins, installed plugins and the folder's conftest.py."""
    return Registries.from_hook(cli_plugin_manager(folder).hook)


def cli_feature_options(manager: pluggy.PluginManager) -> FeatureOptions:
    """The options ``manager``'s features and plugins declare (``pytest_exam_add_options``), made the features'
    part of the schema the subcommands' parsers and readers use (config/options.py)."""
    declared = FeatureOptions()
    manager.hook.pytest_exam_add_options.call_historic(kwargs={"options": declared})
    return declared
