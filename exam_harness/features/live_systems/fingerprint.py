"""What a system's fingerprint covers, so that editing the system (not only its declaration) records it again.

For a Python system: the declared function's source, the sources of the functions and classes of its
own module that it uses, and every *project* module it reaches: a module it uses, and the modules
those import, recursively (``import``/``from ... import`` read from each file), as far as they lie
under the project root (the nearest folder above the declaration holding ``pyproject.toml``,
``setup.py``, ``setup.cfg``, ``pytest.ini``, ``tox.ini`` or ``.git``). Modules outside it are not
read: a third-party package is named by its installed version, the standard library not at all.
For a command system, every argument naming a project file is covered too (a ``.py`` one with the
modules it imports). ``files=`` adds files, folders and glob patterns (a model, a prompt folder, an
index manifest); ``version=`` a text or a callable returning one.

:func:`covers` returns a mapping ``label -> digest`` (``"module rag.py" -> sha``, ``"package numpy"
-> "1.26.4"``); the manifest keeps it, so a stale recording names the files that changed.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import marshal
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from exam_harness.core.errors import ConfigError

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", ".git")
MAX_COVERED_FILES = 10_000  # files= naming a huge folder is a mistake, not a fingerprint
_THIRD_PARTY = ("site-packages", "dist-packages")


def project_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` holding a project marker; ``start`` without one."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return start


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def file_digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()[:16]


def combined(kind: str, covered: Mapping[str, str]) -> str:
    """The fingerprint: one hash over the kind and every covered label and digest."""
    digest = hashlib.sha256(kind.encode("utf-8") + b"\0")
    for label in sorted(covered):
        digest.update(label.encode("utf-8") + b"\0" + covered[label].encode("utf-8") + b"\0")
    return digest.hexdigest()[:16]


class _Walk:
    """Collects the covered labels, reading each project module once."""

    def __init__(self, root: Path, search: Sequence[Path] = ()) -> None:
        self.root = root
        # folders a command's python finds modules in beyond the harness's own sys.path (``-m``: its working
        # folder; a script: the script's folder), looked at only for project files
        self.search = list(search)
        self.covered: dict[str, str] = {}
        self.modules_seen: set[str] = set()
        self.objects_seen: set[int] = set()

    def rel(self, path: Path) -> str | None:
        """``path`` relative to the project root when it is a project file, else None."""
        try:
            rel = path.resolve().relative_to(self.root)
        except (ValueError, OSError):
            return None
        return None if any(part in _THIRD_PARTY for part in rel.parts) else rel.as_posix()

    # -- functions -------------------------------------------------------------------------------
    def function(self, fn: Callable[..., Any]) -> None:
        fn = inspect.unwrap(fn)
        if id(fn) in self.objects_seen:
            return
        self.objects_seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        where = self.rel(Path(code.co_filename)) if code is not None else None
        self.covered[f"function {where or '?'}::{getattr(fn, '__qualname__', repr(fn))}"] = _digest(
            _source(fn).encode("utf-8"))
        if code is None:
            return
        own = getattr(fn, "__module__", None)
        namespace: dict[str, Any] = getattr(fn, "__globals__", {})
        imported = self.imported_names(Path(code.co_filename), own)
        for name in _names(code):
            if name in imported:  # ``from rag import pipeline``: pipeline's module, whatever pipeline is
                self.module(imported[name])
            if name in namespace:
                self.used(namespace[name], own)

    def imported_names(self, path: Path, module_name: str | None) -> dict[str, str]:
        """The names a module's own import statements bind, and the module each comes from."""
        try:
            tree = ast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError):
            return {}
        package = module_name.rpartition(".")[0] if module_name else ""
        bound: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else \
                        alias.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = _resolved(node, package)
                for alias in node.names:
                    if base and alias.name != "*":
                        bound[alias.asname or alias.name] = base
        return bound

    def used(self, obj: Any, own_module: str | None) -> None:
        """Something a covered function names: a module, or a function or class (of its own module:
        its source; of another module: that module)."""
        if isinstance(obj, types.ModuleType):
            self.module(obj.__name__)
            return
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            if not inspect.isbuiltin(obj) and type(obj).__module__ != "builtins":
                self.used(type(obj), own_module)  # an instance: its class
            return
        module = getattr(obj, "__module__", None)
        if module is None:
            return
        if module != own_module:
            self.module(module)
        elif inspect.isfunction(obj):
            self.function(obj)
        elif id(obj) not in self.objects_seen:
            self.objects_seen.add(id(obj))
            self.covered[f"class {module}.{obj.__qualname__}"] = _digest(_source(obj).encode("utf-8"))

    # -- modules ---------------------------------------------------------------------------------
    def module(self, name: str) -> None:
        top = name.partition(".")[0]
        if name in self.modules_seen or top in sys.stdlib_module_names or top == "exam_harness":
            return
        self.modules_seen.add(name)
        origin = self.local_origin(name) or _origin(name)  # the command's own folders first, as its python looks
        if origin is None:
            return
        rel = self.rel(origin)
        if rel is None:
            package = _installed(top)
            if package is not None:
                self.covered[f"package {package[0]}"] = package[1]
            return
        self.source_file(origin, rel, name)

    def source_file(self, path: Path, rel: str, module_name: str | None) -> None:
        try:
            data = path.read_bytes()
        except OSError:
            return
        self.covered[f"module {rel}"] = _digest(data)
        if path.suffix != ".py":
            return
        package = (module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]) if module_name else ""
        for imported in _imports(data, package, self.is_module):
            self.module(imported)

    def is_module(self, name: str) -> bool:
        """Whether ``name`` is a module: imported already, or a project file found from :attr:`search`."""
        return name in sys.modules or self.local_origin(name) is not None

    def local_origin(self, name: str) -> Path | None:
        """The project file of module ``name`` in a folder of :attr:`search` (``a/b.py``, ``a/b/__init__.py``)."""
        parts = name.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        for folder in self.search:
            for candidate in (folder.joinpath(*parts).with_suffix(".py"), folder.joinpath(*parts, "__init__.py")):
                if candidate.is_file() and self.rel(candidate) is not None:
                    return candidate
        return None

    def run_module(self, name: str, base: Path) -> None:
        """``python -m name`` run in ``base``: the module's file (a package's ``__main__.py``) and the packages
        around it, found as python finds them from there (``base`` first on its path), with their imports."""
        parts = name.split(".")
        if not all(part.isidentifier() for part in parts):
            return
        folder = base.joinpath(*parts)
        candidates = [folder.with_suffix(".py"), folder / "__main__.py"]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None or self.rel(found) is None:
            self.module(name)  # an installed module: its package version (a project module on sys.path: its file)
            return
        for depth in range(1, len(parts)):  # the packages python imports first
            init = base.joinpath(*parts[:depth], "__init__.py")
            rel = self.rel(init) if init.is_file() else None
            if rel is not None:
                self.source_file(init, rel, ".".join(parts[:depth]))
        module_name = name if found.name != "__main__.py" else f"{name}.__main__"
        rel = self.rel(found)
        if rel is not None:
            self.source_file(found, rel, module_name)

    def files(self, patterns: Iterable[str | Path], declared_at: str) -> None:
        count = 0
        for pattern in patterns:
            matched = _matches(self.root, str(pattern), declared_at)
            if not matched:
                raise ConfigError(f"system declared at {declared_at}: files={str(pattern)!r} matches no file under "
                                  f"{self.root} (paths and glob patterns are relative to the project root)")
            for path in matched:
                count += 1
                if count > MAX_COVERED_FILES:
                    raise ConfigError(f"system declared at {declared_at}: files= names more than "
                                      f"{MAX_COVERED_FILES} files; name the ones that decide the answers")
                self.covered[f"file {_label(self.root, path)}"] = file_digest(path)


def _label(root: Path, path: Path) -> str:
    """A covered file's name: relative to the root where it resolves (a file reached through a link to a
    folder of the project is named once), else the link's own path in the project."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a link loop: not a file, never matched; named as written all the same
        resolved = path
    return _under(root, resolved) or _under(root, path) or path.as_posix()


def _under(root: Path, path: Path) -> str | None:
    """``path`` relative to ``root`` as written (``..`` folded, links not followed), or None outside it."""
    folded = Path(os.path.normpath(path if path.is_absolute() else root / path))
    try:
        return folded.relative_to(root).as_posix()
    except ValueError:
        return None


def _matches(root: Path, pattern: str, declared_at: str) -> list[Path]:
    """The files ``pattern`` (a path, a folder or a glob, relative to ``root``) names, each under ``root``:
    one outside (``/etc/passwd``, ``../outside.txt``) is a ConfigError, as the docs say files= names paths
    under the project root. A folder's files are walked without following links to folders, so a link
    loop inside it ends (a link to a file counts: its content is covered under the link's name)."""
    relative = _under(root, Path(pattern))
    if relative is None:
        raise ConfigError(f"system declared at {declared_at}: files={pattern!r} names a path outside the project "
                          f"root {root}; files= covers paths under it (relative to it)")
    if any(ch in pattern for ch in "*?["):
        found = sorted(root.glob(relative))
    else:
        found = [root / relative] if (root / relative).exists() else []
    files: list[Path] = []
    for path in found:
        if path.is_dir():
            files.extend(_folder_files(path))
        elif path.is_file():
            files.append(path)
    return files


def _folder_files(folder: Path) -> list[Path]:
    """Every file in ``folder`` and its subfolders (``.git`` left out), never entering a link to a folder."""
    found: list[Path] = []
    for where, folders, names in os.walk(folder, followlinks=False):
        folders[:] = sorted(name for name in folders if name != ".git")
        found.extend(path for name in sorted(names) if (path := Path(where, name)).is_file())
    return found


def _names(code: types.CodeType) -> Iterable[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _source(obj: Any) -> str:
    """The object's source; without one (defined in a REPL) its compiled code."""
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        return marshal.dumps(code).hex() if code is not None else repr(obj)


def _origin(name: str) -> Path | None:
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except Exception:  # finding a submodule imports its package, which may fail in any way
            return None
        origin = spec.origin if spec is not None and spec.has_location else None
    return Path(origin) if origin else None


def _imports(source: bytes, package: str, is_module: Callable[[str], bool]) -> Iterable[str]:
    """The modules ``source`` imports; ``from pkg import name`` yields ``pkg.name`` too where ``is_module``
    says it names a module (imported already, or a project file)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolved(node, package)
            if base:
                yield base
                for alias in node.names:  # ``from pkg import submodule``
                    if alias.name != "*" and is_module(f"{base}.{alias.name}"):
                        yield f"{base}.{alias.name}"


def _resolved(node: ast.ImportFrom, package: str) -> str:
    """The absolute module name of a ``from ... import``, or "" when it cannot be resolved."""
    if not node.level:
        return node.module or ""
    try:
        return importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):
        return ""


@functools.cache
def _distributions() -> Mapping[str, Sequence[str]]:
    return importlib.metadata.packages_distributions()


def _installed(top: str) -> tuple[str, str] | None:
    for dist in _distributions().get(top, ()):
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def version_text(version: str | Callable[[], object] | None, declared_at: str) -> str | None:
    """``version=`` as text: a callable is called once, at the declaration."""
    if version is None or isinstance(version, str):
        return version
    if callable(version):
        try:
            return str(version())
        except Exception as exc:
            raise ConfigError(f"system declared at {declared_at}: version= raised "
                              f"{type(exc).__name__}: {exc}") from None
    raise ConfigError(f"system declared at {declared_at}: version= must be a text or a callable returning one, "
                      f"got {type(version).__name__}")


def python_covers(fn: Callable[..., Any], files: Sequence[str | Path], version: str | None,
                  declared_at: str) -> dict[str, str]:
    code = getattr(fn, "__code__", None)
    walk = _Walk(project_root(Path(code.co_filename).parent if code is not None else Path.cwd()))
    walk.function(fn)
    return _finish(walk, files, version, declared_at)


def command_covers(argv: Sequence[str], cwd: str | None, files: Sequence[str | Path], version: str | None,
                   declared_at: str) -> dict[str, str]:
    """What a command's fingerprint covers: every argument naming a project file (``--config=FILE`` too; a
    ``.py`` one with the modules it imports, found from its folder as python finds them) and, for ``python -m
    MODULE``, the module's file with the modules it imports, as the file form ``python rag/cli.py`` is covered."""
    base = Path(cwd) if cwd else Path.cwd()
    module = _run_module(argv)
    named = [base / name for arg in argv[1:] if "{" not in arg and arg and len(arg) <= 1000
             for name in dict.fromkeys((arg, arg.partition("=")[2] if arg.startswith("-") else "")) if name]
    scripts = [path.parent for path in named if path.suffix == ".py"]
    walk = _Walk(project_root(base), search=[base] if module is not None else scripts)
    if module is not None:
        walk.run_module(module, base)
    for path in named:
        try:
            if not path.is_file():
                continue
        except OSError:
            continue
        rel = walk.rel(path)
        if rel is not None:
            walk.source_file(path, rel, None)
    return _finish(walk, files, version, declared_at)


_PYTHON = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?|pypy\d*")


def _run_module(argv: Sequence[str]) -> str | None:
    """The module ``python -m MODULE ...`` (or ``-mMODULE``) runs, None for another command."""
    if not argv or not (_PYTHON.fullmatch(Path(argv[0]).name) or argv[0] == sys.executable):
        return None
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-m":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-m") and not arg.startswith("--"):
            return arg[2:]
        if arg == "-c" or not arg.startswith("-"):
            return None  # a script or -c runs: the module form is not used
    return None


def plain_covers(files: Sequence[str | Path], version: str | None, declared_at: str) -> dict[str, str]:
    return _finish(_Walk(project_root(Path.cwd())), files, version, declared_at)


def _finish(walk: _Walk, files: Sequence[str | Path], version: str | None, declared_at: str) -> dict[str, str]:
    if isinstance(files, (str, Path)):
        files = [files]
    walk.files(files, declared_at)
    if version is not None:
        walk.covered["version"] = version
    return walk.covered


def changed_files(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The covered labels whose digest differs, or that were added or removed, e.g. ``module rag.py``; a
    package or the version with its old and new value, ``package rank-bm25 0.2.1 -> 0.2.2`` (a file's
    digest says nothing to a reader, a version does)."""
    changed: list[str] = []
    for label in sorted(set(recorded) | set(now)):
        old, new = recorded.get(label), now.get(label)
        if old == new:
            continue
        if label.startswith("package ") or label == "version":
            label += f" {old if old is not None else '(none)'} -> {new if new is not None else '(none)'}"
        changed.append(label)
    return changed
