"""The package's import graph has no cycle, lazy imports (inside functions) included.

Every ``import`` statement of ``exam_harness/`` counts wherever it stands; only those under
``if TYPE_CHECKING:`` are left out (annotations, never run). A cycle means two modules each need the
other: the code that both need belongs in a lower module.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

PACKAGE = REPO / "exam_harness"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (a ``from a import b`` counts as importing
    ``a`` and, where ``a.b`` is a module, ``a.b``)."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        names = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(names[:-1] if names[-1] == "__init__" else names)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
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
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _shown(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return f"{len(component)} modules: " + "; ".join(edges)


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (move what both sides need to a lower module):\n" + "\n".join(
        _shown(graph, c) for c in found)


def test_the_cycle_finder_finds_a_lazy_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import x\n")
    (package / "b.py").write_text("def x():\n    from . import a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (package / "d.py").write_text("import pkg.a\n")
    graph = import_graph(package)
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert graph["pkg.c"] == set()  # a type-only import is no dependency
    assert graph["pkg.d"] == {"pkg.a"}


def test_the_result_document_package_is_low() -> None:
    """``exam_harness.results`` (the document, its schema, migrations, reading, history, the JSON writer and
    the section protocol) imports nothing from the front ends or the views: report/, pytest_plugins/, cli/."""
    graph = import_graph()
    upward = sorted(f"{module} -> {target}" for module, targets in graph.items()
                    if module.startswith("exam_harness.results") for target in targets
                    if target.startswith(("exam_harness.report", "exam_harness.pytest_plugins", "exam_harness.cli")))
    assert not upward, "results/ reaches up:\n" + "\n".join(upward)
