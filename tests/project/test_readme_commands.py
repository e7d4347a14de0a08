"""Every command the README shows is run by a test: the pytest commands here, in order, on a copy of
the example project; ``make exam`` / ``make test`` / ``make test-fast`` are Makefile targets (CI runs ``make test`` itself);
the install line from a checkout is tests/project/test_own_project.py's."""

from __future__ import annotations

import re
import shlex
import shutil

import pytest

from tests.paths import REPO

pytest_plugins = ["pytester"]

ROOT = REPO
README = (ROOT / "README.md").read_text()


def _commands(prefix: str) -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(prefix)]


def test_the_readme_shows_its_commands() -> None:
    assert [c[:2] for c in _commands("make ")] == [["make", "exam"], ["make", "test"], ["make", "test-fast"]]
    assert len(_commands("pytest ")) >= 3
    assert _commands("pip install")  # run by tests/project/test_own_project.py


def test_make_targets_exist() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for command in _commands("make "):
        assert re.search(rf"^{command[1]}:", makefile, re.M), command
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_pytest_commands_run_on_the_example(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for folder in ("banks", "runs"):
        shutil.copytree(ROOT / folder, pytester.path / folder)
    for name in ("pyproject.toml", "conftest.py"):
        shutil.copy(ROOT / name, pytester.path / name)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for command in _commands("pytest "):
        # the example's cheap lexical grader (conftest.py) stands in for the default model grader; the
        # already-imported note about the installed plugin is not the command's concern
        result = pytester.runpytest(*command[1:], "--exam-grader=lexical", "-p", "no:cacheprovider",
                                    "-W", "ignore::pytest.PytestAssertRewriteWarning")
        text = result.stdout.str() + result.stderr.str()
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), (command, text[-2000:])
        assert "exam leaderboard" in text, command
        if result.ret == pytest.ExitCode.TESTS_FAILED:
            assert "gate failed" in result.stdout.lines[-1], command  # a failed gate says so last
    assert (pytester.path / ".exam-history" / "0001_main.json").exists()
    assert (pytester.path / "reports" / "junit.xml").exists()
    assert (pytester.path / "reports" / "html" / "index.html").exists()
