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

    def __init__(self, root: Path) -> None:
        self.root = root
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
        origin = _origin(name)
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
        for imported in _imports(data, package):
            self.module(imported)

    def files(self, patterns: Iterable[str | Path], declared_at: str) -> None:
        count = 0
        for pattern in patterns:
            matched = _matches(self.root, str(pattern))
            if not matched:
                raise ConfigError(f"system declared at {declared_at}: files={str(pattern)!r} matches no file under "
                                  f"{self.root} (paths and glob patterns are relative to the project root)")
            for path in matched:
                count += 1
                if count > MAX_COVERED_FILES:
                    raise ConfigError(f"system declared at {declared_at}: files= names more than "
                                      f"{MAX_COVERED_FILES} files; name the ones that decide the answers")
                rel = self.rel(path) or path.as_posix()
                self.covered[f"file {rel}"] = file_digest(path)


def _matches(root: Path, pattern: str) -> list[Path]:
    base = Path(pattern) if Path(pattern).is_absolute() else root / pattern
    if any(ch in pattern for ch in "*?["):
        found = sorted(root.glob(pattern)) if not Path(pattern).is_absolute() else []
    else:
        found = [base] if base.exists() else []
    files: list[Path] = []
    for path in found:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.parts))
        elif path.is_file():
            files.append(path)
    return files


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


def _imports(source: bytes, package: str) -> Iterable[str]:
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
                    if alias.name != "*" and f"{base}.{alias.name}" in sys.modules:
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
    walk = _Walk(project_root(Path(cwd) if cwd else Path.cwd()))
    base = Path(cwd) if cwd else Path.cwd()
    for arg in argv[1:]:
        if "{" in arg or not arg or len(arg) > 1000:
            continue
        path = base / arg
        try:
            if not path.is_file():
                continue
        except OSError:
            continue
        rel = walk.rel(path)
        if rel is not None:
            walk.source_file(path, rel, None)
    return _finish(walk, files, version, declared_at)


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
    """The covered labels whose digest differs, or that were added or removed, e.g. ``module rag.py``."""
    return sorted(label for label in set(recorded) | set(now) if recorded.get(label) != now.get(label))
