"""The package's import graph: no module cycle, and the units stand in the declared layers (tests/project/layers.py).

Every ``import`` statement of ``exam_harness/`` counts wherever it stands, lazy ones (inside functions)
included. The module-level cycle test leaves out those under ``if TYPE_CHECKING:`` (two modules may annotate
with each other's types); the layer order and the package-level graph count them too: a type-only import up
the layers is a dependency all the same, which mypy, the docs and the next reader follow. A cycle means two
modules each need the other: the code that both need belongs in a lower module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.project.layers import LAYERS, PACKAGE, import_graph, unit


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
    (package / "e.py").write_text("from pkg import a, VERSION\n")
    graph = import_graph(package)
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert graph["pkg.c"] == set()  # a type-only import is no run-time dependency
    assert import_graph(package, type_checking=True)["pkg.c"] == {"pkg.a"}
    assert graph["pkg.d"] == {"pkg.a"}
    assert graph["pkg.e"] == {"pkg.a", "pkg"}  # a submodule; a name pkg/__init__.py defines


def test_the_result_document_package_is_low() -> None:
    """``exam_harness.results`` (the document, its schema, migrations, reading, history, the JSON writer and
    the section protocol) imports nothing from the front ends or the views: report/, pytest_plugins/, cli/."""
    graph = import_graph()
    upward = sorted(f"{module} -> {target}" for module, targets in graph.items()
                    if module.startswith("exam_harness.results") for target in targets
                    if target.startswith(("exam_harness.report", "exam_harness.pytest_plugins", "exam_harness.cli")))
    assert not upward, "results/ reaches up:\n" + "\n".join(upward)


def test_the_document_builders_never_reach_into_the_scoring_context() -> None:
    """Issue 26, item 3: scoring returns what the document needs (measures/result.py: ExamResult with what
    Needs asked for; results/scoring.py), so nothing under report/ imports the scoring context, not even
    for a type."""
    graph = import_graph(type_checking=True)
    reaching = sorted(m for m, targets in graph.items()
                      if m.startswith("exam_harness.report.") and "exam_harness.measures.context" in targets)
    assert not reaching, f"report/ modules importing measures/context.py: {reaching}"


def layer_of(units: set[str]) -> dict[str, int]:
    placed = {name: rank for rank, (_, members) in enumerate(LAYERS) for name in members}
    missing = sorted(units - placed.keys())
    assert not missing, f"units in no declared layer (add them to LAYERS and ARCHITECTURE.md): {missing}"
    return placed


def upward_edges(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """``"low -> high"`` -> the module imports behind it, for each package-level import that points up."""
    rank = layer_of({unit(module) for module in graph})
    found: dict[str, list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            source, sink = unit(module), unit(target)
            if rank[sink] > rank[source]:
                found.setdefault(f"{source} -> {sink}", []).append(f"{module} -> {target}")
    return found


def test_the_layers_are_declared_once() -> None:
    seen = [name for _, members in LAYERS for name in members]
    assert len(seen) == len(set(seen)), "a unit in two layers"


def test_imports_point_down_the_declared_layers() -> None:
    """No import points up the declared order: run-time, lazy and type-only (``if TYPE_CHECKING:``) alike."""
    found = upward_edges(import_graph(type_checking=True))
    shown = {edge: sorted(found[edge]) for edge in sorted(found)}
    assert not found, f"imports up the declared layers (ARCHITECTURE.md, Layers; move what both need lower): {shown}"


@pytest.mark.parametrize("imported", ["none", "at run time", "lazily", "for types only"])
def test_an_upward_import_is_found(tmp_path: Path, imported: str) -> None:
    package = tmp_path / "exam_harness"
    (package / "io").mkdir(parents=True)
    (package / "core").mkdir()
    (package / "__init__.py").write_text("")
    (package / "io" / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "models.py").write_text({
        "none": "", "at run time": "from exam_harness.io import x\n",
        "lazily": "def f():\n    from exam_harness.io import x\n",
        "for types only": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from exam_harness.io import x\n",
    }[imported])
    (package / "io" / "runs.py").write_text("def f():\n    from exam_harness.core import models\n")
    assert upward_edges(import_graph(package, type_checking=True)) == (
        {} if imported == "none" else {"core -> io": ["exam_harness.core.models -> exam_harness.io"]})


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The unit-level graph (top-level modules and folders of exam_harness) of a module graph."""
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        units.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    for targets in list(units.values()):
        for target in targets:
            units.setdefault(target, set())
    return units


def test_the_package_graph_has_no_cycle() -> None:
    """No two units need each other, even within one layer, type-only imports included."""
    units = package_graph(import_graph(type_checking=True))
    found = cycles(units)
    assert not found, "package-level import cycles:\n" + "\n".join(_shown(units, c) for c in found)


def test_a_type_only_package_cycle_is_found(tmp_path: Path) -> None:
    package = tmp_path / "exam_harness"
    (package / "results").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "results" / "__init__.py").write_text("")
    (package / "results" / "schema.py").write_text("from exam_harness.config.gates import GateResult\n")
    (package / "config").mkdir()
    (package / "config" / "__init__.py").write_text("")
    (package / "config" / "gates.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from exam_harness.results.schema import ExamReport\n")
    assert cycles(package_graph(import_graph(package))) == []
    assert cycles(package_graph(import_graph(package, type_checking=True))) == [["config", "results"]]


# --- features (exam_harness/features/<name>/): in-tree plugins, named by nothing below them -------------------


def feature_of(module: str) -> str | None:
    """``exam_harness.features.significance.section`` -> ``significance``; None outside a feature's folder (the
    features package itself, which lists them, is no feature)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "features" else None


def declared_requirements(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each feature's ``REQUIRES = (...)`` (the other features it may import), read from its ``__init__.py``."""
    found: dict[str, set[str]] = {}
    for init in sorted((package / "features").glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
        names: set[str] = set()
        for node in tree.body:
            target: ast.expr
            if isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id == "REQUIRES" and value is not None:
                names = {str(v) for v in ast.literal_eval(value)}
        found[init.parent.name] = names
    return found


# The package's public names (exam_harness/__init__.py, above every layer) re-export a feature's declarations
# (the live systems' ``exam_harness.system``, ...): typed, by a type-only import; at run time by module name.
PUBLIC_NAMES = "exam_harness"


def feature_violations(graph: dict[str, set[str]], requires: dict[str, set[str]],
                       typed_only: dict[str, set[str]] | None = None) -> list[str]:
    """Imports of a feature from outside it: by a module that is no feature's (the core, the front ends: they
    reach a feature only through the hooks, the features package's list registering it; the package's public
    names only for types, where ``typed_only`` holds ``graph`` less the type-only imports), or by another feature
    that does not declare it in ``REQUIRES``."""
    found = []
    for module, targets in sorted(graph.items()):
        source = feature_of(module)
        for target in sorted(targets):
            sink = feature_of(target)
            if sink is None or sink == source:
                continue
            if module == PUBLIC_NAMES and typed_only is not None and target not in typed_only.get(module, set()):
                continue  # a re-export of the package's public names, typed
            if source is None:
                found.append(f"{module} -> {target} (nothing outside a feature names one)")
            elif sink not in requires.get(source, set()):
                found.append(f"{module} -> {target} (feature {source!r} does not declare {sink!r} in REQUIRES)")
    return found


def test_no_feature_is_imported_but_by_a_feature_that_declares_it() -> None:
    """The core knows no feature by name; a feature imports another only where it declares it (``REQUIRES``),
    type-only imports included."""
    found = feature_violations(import_graph(type_checking=True), declared_requirements(), import_graph())
    assert not found, "imports of a feature (features/<name>/__init__.py: REQUIRES):\n" + "\n".join(found)


def test_every_feature_is_listed_and_declares_its_requirements() -> None:
    """Each folder of exam_harness/features is in FEATURES (both front ends register it), has a plugin module and
    declares REQUIRES (an empty tuple when it imports no other feature), naming only listed features."""
    from exam_harness.features import FEATURES

    requires = declared_requirements()
    assert sorted(requires) == sorted(FEATURES)
    for name, needed in requires.items():
        assert (PACKAGE / "features" / name / "plugin.py").is_file(), name
        assert needed <= set(FEATURES) - {name}, f"{name} requires {sorted(needed)}"
        assert "REQUIRES" in (PACKAGE / "features" / name / "__init__.py").read_text(), name


def _features_package(tmp_path: Path, modules: dict[str, str]) -> Path:
    package = tmp_path / "exam_harness"
    for relative, source in {"__init__.py": "", "results/__init__.py": "", "features/__init__.py": "",
                             **modules}.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return package


@pytest.mark.parametrize("imported", ["at run time", "lazily", "for types only"])
def test_a_core_module_importing_a_feature_is_found(tmp_path: Path, imported: str) -> None:
    statement = {"at run time": "from exam_harness.features.b.plugin import x\n",
                 "lazily": "def f():\n    from exam_harness.features.b import plugin\n",
                 "for types only": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from exam_harness.features.b.plugin import x\n"}[imported]
    package = _features_package(tmp_path, {"results/scored.py": statement, "features/b/__init__.py": "REQUIRES = ()\n",
                                           "features/b/plugin.py": "x = 1\n"})
    found = feature_violations(import_graph(package, type_checking=True), declared_requirements(package))
    assert found == ["exam_harness.results.scored -> exam_harness.features.b.plugin (nothing outside a feature names one)"]


@pytest.mark.parametrize("declared", [False, True])
def test_an_undeclared_feature_import_is_found(tmp_path: Path, declared: bool) -> None:
    package = _features_package(tmp_path, {
        "features/a/__init__.py": "REQUIRES: tuple[str, ...] = ('b',)\n" if declared else "REQUIRES = ()\n",
        "features/a/plugin.py": "def f():\n    from exam_harness.features.b.plugin import x\n",
        "features/b/__init__.py": "REQUIRES = ()\n", "features/b/plugin.py": "x = 1\n",
        "features/__init__.py": "def listed():\n    import importlib\n"})
    found = feature_violations(import_graph(package, type_checking=True), declared_requirements(package))
    assert found == ([] if declared else [
        "exam_harness.features.a.plugin -> exam_harness.features.b.plugin (feature 'a' does not declare 'b' in REQUIRES)"])


@pytest.mark.parametrize("typed", [True, False])
def test_the_public_names_re_export_a_feature_for_types_only(tmp_path: Path, typed: bool) -> None:
    statement = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from exam_harness.features.b.declare import x\n"
                 if typed else "from exam_harness.features.b.declare import x\n")
    package = _features_package(tmp_path, {"__init__.py": statement, "features/b/__init__.py": "REQUIRES = ()\n",
                                           "features/b/declare.py": "x = 1\n"})
    found = feature_violations(import_graph(package, type_checking=True), declared_requirements(package),
                               import_graph(package))
    assert found == ([] if typed else
                     ["exam_harness -> exam_harness.features.b.declare (nothing outside a feature names one)"])
