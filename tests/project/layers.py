"""The package's declared layers and its import graph, read by the architecture and API tests."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

PACKAGE = REPO / "exam_harness"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph(package: Path = PACKAGE, *, type_checking: bool = False) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (a ``from a import b`` counts as importing ``a.b``
    where that is a module, else ``a``: importing any ``a.x`` runs ``a/__init__.py`` anyway, so only a name
    defined there is a dependency on it); ``type_checking`` keeps the imports under ``if TYPE_CHECKING:`` too."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        names = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(names[:-1] if names[-1] == "__init__" else names)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
                node.body = []
        package_name = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package_name.split(".")[: len(package_name.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


# The declared layers, lowest first (ARCHITECTURE.md, "## Layers"). A unit is a top-level module or a folder
# of exam_harness; a unit may import its own layer and the layers below, never one above, type-only imports
# included. The package's public names (``__init__``) stand on top: they re-export from the layers below.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("core", frozenset({"core"})),
    ("io", frozenset({"io"})),
    ("measures", frozenset({"measures"})),
    ("configuration", frozenset({"config"})),
    ("the exam", frozenset({"exam"})),
    ("llm backends", frozenset({"llm"})),
    ("graders", frozenset({"graders"})),
    ("grading", frozenset({"grading"})),
    ("results", frozenset({"results"})),
    ("analysis", frozenset({"analysis"})),
    ("report", frozenset({"report"})),
    ("sections", frozenset({"sections"})),
    ("a command's session", frozenset({"session"})),
    ("the plugin API", frozenset({"hookspecs", "api"})),
    ("features", frozenset({"features"})),
    ("front ends", frozenset({"extensions", "plugin", "pytest_plugins", "cli", "__init__"})),
]


def unit(module: str) -> str:
    """``exam_harness.io.runs`` -> ``io``; ``exam_harness.grading.cache`` -> ``grading``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"
