"""The declared plugin surface (exam_harness/api.py): every name imports, importing it stays light, the in-tree
features import only it and the layers below them, and the module paths that moved still import, with a
DeprecationWarning that names the new path."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import warnings

import pytest

import exam_harness
from exam_harness import api
from tests.paths import REPO
from tests.project.layers import LAYERS, import_graph, unit


@pytest.mark.parametrize("name", api.__all__)
def test_every_api_name_imports(name: str) -> None:
    assert getattr(api, name) is getattr(importlib.import_module(api._MODULE_OF[name]), name)


def test_the_api_lists_each_name_once_and_documents_it() -> None:
    assert sorted(api.__all__) == sorted(api._MODULE_OF) and len(api.__all__) == len(set(api.__all__))
    extending = (REPO / "docs" / "extending.md").read_text()
    missing = [name for name in api.__all__ if f"`{name}`" not in extending]
    assert not missing, f"docs/extending.md's API table lacks {missing}"


def test_importing_the_api_imports_no_heavy_library() -> None:
    code = ("import sys, exam_harness.api\n"
            "heavy = [m for m in ('torch', 'transformers', 'openai', 'ray', 'textual', 'pydantic', 'rich', 'numpy')"
            " if m in sys.modules]\nprint(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.strip() == "[]"


def test_in_tree_features_import_only_the_api_and_the_layers_below() -> None:
    """A feature reaches the front ends never (they register it) and the core only below the features' layer;
    within exam_harness/features, the API and its own modules (another feature's where REQUIRES declares it:
    test_architecture.py)."""
    rank = {name: i for i, (_, members) in enumerate(LAYERS) for name in members}
    graph = import_graph(type_checking=True)
    above = sorted(f"{module} -> {target}" for module, targets in graph.items() if unit(module) == "features"
                   for target in targets if unit(target) != "features" and rank[unit(target)] > rank["api"])
    assert not above, above


# the moved modules that import an optional extra's package (AutoJudge's: autojudge-base)
NEEDS_EXTRA = {"exam_harness.autojudge.judge": "autojudge_base", "exam_harness.autojudge.convert": "autojudge_base"}


@pytest.mark.parametrize(("old", "new"), sorted(exam_harness.MOVED.items()))
def test_a_moved_module_still_imports_with_a_deprecation_warning(old: str, new: str) -> None:
    if old in NEEDS_EXTRA and importlib.util.find_spec(NEEDS_EXTRA[old]) is None:  # found, not imported: the
        pytest.skip("the optional extra is not installed")  # moved module prepares its import (NLTK data)
    parent = old.rpartition(".")[0]
    moved_parent = parent in exam_harness.MOVED  # exam_harness.systems.declare: its package moved too
    sys.modules.pop(old, None)
    try:
        if moved_parent:
            with pytest.warns(DeprecationWarning, match=f"{parent} moved to {exam_harness.MOVED[parent]}"):
                importlib.import_module(parent)
        with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
    finally:
        sys.modules.pop(old, None)
        if moved_parent:
            sys.modules.pop(parent, None)


def test_the_old_writer_interface_path_works() -> None:
    """Issue 36: the writer interface moved from results/writers.py to report/writers.py with no alias."""
    sys.modules.pop("exam_harness.results.writers", None)
    try:
        with pytest.warns(DeprecationWarning, match="exam_harness.report.writers"):
            old = importlib.import_module("exam_harness.results.writers")
        from exam_harness.report.writers import Writer

        assert old.Writer is Writer and old.WriterInput is api.WriterInput
    finally:
        sys.modules.pop("exam_harness.results.writers", None)


def test_the_grading_module_s_names_read_from_the_package_warn() -> None:
    with pytest.warns(DeprecationWarning, match="exam_harness.grading.passes.run_grading_pass"):
        from exam_harness.grading import run_grading_pass
    from exam_harness.grading.passes import run_grading_pass as now

    assert run_grading_pass is now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from exam_harness.grading import cache  # a submodule: no warning

        assert cache.__name__ == "exam_harness.grading.cache"
    with pytest.raises(ImportError):
        from exam_harness.grading import no_such_name  # noqa: F401


def test_a_moved_module_runs_as_python_m_under_its_old_name() -> None:
    """``python -m exam_harness.autojudge.offline`` (docs/autojudge.md before issue 36) runs the moved module."""
    from exam_harness.features.autojudge.offline import NLTK_DATA

    done = subprocess.run([sys.executable, "-m", "exam_harness.autojudge.offline"], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.strip() == str(NLTK_DATA)
    done = subprocess.run([sys.executable, "-m", "exam_harness.autojudge", "--help"], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert "reports" in done.stdout and "--kind" in done.stdout
