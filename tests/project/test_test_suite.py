"""The test suite's own shape: no module of tests/ imports a test module (``tests/**/test_*.py``).

What several test modules share lives in a module beside them that collects no tests (``support.py``,
``conftest.py``): importing a test module runs its module-level code and, under ``from x import *`` or a
fixture import, can collect its tests twice; and a helper kept private to one test module is edited as if
nothing else read it. Code written into a pytester project (a conftest held in a string) counts too: it is
imported inside the in-process session.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from tests.paths import REPO

pytest_plugins = ["pytester"]

TESTS = REPO / "tests"
DATA = ("bad_inputs", "golden", "data")  # folders of inputs, not of the suite's code
# an import of a test module written inside a string (a conftest a test writes into its pytester project)
IMPORT_IN_TEXT = re.compile(
    r"^[ \t]*(?:from[ \t]+(tests(?:\.\w+)*)[ \t]+import[ \t]+([\w, \t]+)|import[ \t]+(tests(?:\.\w+)+))", re.MULTILINE)


def is_test_module(module: str, root: Path) -> bool:
    """Whether the dotted name ``tests.a.test_b`` names a file ``tests/a/test_b.py`` under ``root``."""
    parts = module.split(".")
    return parts[0] == root.name and parts[-1].startswith("test_") and \
        root.parent.joinpath(*parts).with_suffix(".py").is_file()


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module) for every module of the package ``root`` that ``path`` imports, in code or in text."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(root.parent).with_suffix("").parts[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in IMPORT_IN_TEXT.finditer(node.value):
                line = node.lineno + node.value.count("\n", 0, match.start())
                if match.group(3):
                    found.append((line, match.group(3)))
                else:
                    names = [name.strip() for name in match.group(2).split(",") if name.strip()]
                    found += [(line, match.group(1))] + [(line, f"{match.group(1)}.{name}") for name in names]
    return found


def imports_of_test_modules(root: Path) -> list[str]:
    """``file:line imports module`` for each import of a test module by a module under ``root``."""
    found: set[tuple[str, int, str]] = set()
    for path in root.rglob("*.py"):
        if any(part in DATA for part in path.relative_to(root).parts[:-1]):
            continue
        found |= {(str(path.relative_to(root.parent)), line, module) for line, module in imported_modules(path, root)
                  if is_test_module(module, root)}
    return [f"{path}:{line} imports {module}" for path, line, module in sorted(found)]


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    found = imports_of_test_modules(TESTS)
    assert not found, ("move what they share into a module beside them (support.py) or a conftest.py fixture:\n"
                       + "\n".join(found))


@pytest.mark.parametrize(("statement", "line"), [
    ("from tests.a.test_b import helper", 1),
    ("from tests.a import test_b", 1),
    ("import tests.a.test_b", 1),
    ("from .test_b import helper", 1),
    ("def f() -> None:\n    from tests.a.test_b import helper", 2),
    ('CONFTEST = """\nimport os\nfrom tests.a.test_b import helper\n"""', 3),
])
def test_an_import_of_a_test_module_is_found(tmp_path: Path, statement: str, line: int) -> None:
    root = tmp_path / "tests"
    (root / "a").mkdir(parents=True)
    for name in ("__init__.py", "a/__init__.py", "a/test_b.py", "a/support.py"):
        (root / name).write_text("helper = 1\n")
    (root / "a" / "test_c.py").write_text(statement + "\n")
    (root / "a" / "test_d.py").write_text("from tests.a.support import helper\nfrom tests.a import support\n")
    assert imports_of_test_modules(root) == [f"tests/a/test_c.py:{line} imports tests.a.test_b"]


LEAKY = '''
import os
import exam_harness

def test_declares_a_system_and_leaves_it():
    exam_harness.system("leaky")(lambda query: "an answer")

def test_sets_a_variable_and_leaves_it():
    os.environ["EXAM_TEST_LEAKED"] = "1"

def test_changes_the_folder_and_stays(tmp_path):
    os.chdir(tmp_path)

def test_cleans_up_after_itself(monkeypatch, tmp_path):
    exam_harness.system("tidy")(lambda query: "an answer")
    from exam_harness.features.live_systems import declare
    declare.clear()
    monkeypatch.setenv("EXAM_TEST_TIDY", "1")
    monkeypatch.chdir(tmp_path)
'''


def test_a_test_leaving_state_behind_errs_and_the_state_is_put_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaky=LEAKY)
    result = pytester.runpytest("-p", "tests.isolation", "-p", "no:cacheprovider",
                                "-W", "ignore::pytest.PytestAssertRewriteWarning")  # imported by this process
    result.assert_outcomes(passed=4, errors=3)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_declares_a_system_and_leaves_it*",
        "*the test left state behind for later tests (put back now): live systems still declared: ?'leaky'?",  # ? for [ and ], which fnmatch reads as a class
        "*ERROR at teardown of test_sets_a_variable_and_leaves_it*",
        "*environment variables changed: EXAM_TEST_LEAKED",
        "*ERROR at teardown of test_changes_the_folder_and_stays*",
        "*the working folder changed from * to *"], consecutive=False)
    assert "EXAM_TEST_LEAKED" not in os.environ
