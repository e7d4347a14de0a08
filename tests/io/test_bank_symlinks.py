"""Banks are collected by the path found: a symlinked bank is examined, a dangling link is an input
error, loops are walked once and a file reached by two paths is one bank file (pytest and the CLI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exam_harness.core.errors import InputError
from exam_harness.io.banks import iter_bank_files, walk_bank_folder

pytest_plugins = ["pytester"]
REQUIRED = """\
queries:
  - id: q2
    text: second query
    questions:
      - {id: q2/never, text: a question no passage answers, required: true}
"""


def _cases(result: pytest.RunResult) -> int:
    outcomes = result.parseoutcomes()
    return sum(outcomes.get(k, 0) for k in ("passed", "failed", "missed"))


def test_a_bank_symlinked_from_elsewhere_is_examined(project: pytest.Pytester) -> None:
    (project.path / "shared-banks").mkdir()
    (project.path / "shared-banks" / "required.yaml").write_text(REQUIRED)
    os.symlink(project.path / "shared-banks" / "required.yaml", project.path / "banks" / "required.yaml")
    result = project.runpytest("banks", "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # its required question was put to both runs and missed
    result.stdout.fnmatch_lines(["FAILED banks/required.yaml::q2::q2/never[[]good[]] - missed 'a question no*"])
    # q2 is also in banks/exam.yaml: a query spread over two files is graded for all its test points
    result.stdout.fnmatch_lines(["missed 'a question no passage answers': best grade 0 (passage p4 'answers [[]c[]]', reason '0')*"])


def test_a_dangling_bank_link_is_an_input_error(project: pytest.Pytester) -> None:
    os.symlink("gone.yaml", project.path / "banks" / "moved.yaml")
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*banks/moved.yaml: the symlink's target does not exist*value 'gone.yaml'*"])


def test_symlink_loops_are_walked_once(project: pytest.Pytester) -> None:
    plain = _cases(project.runpytest("banks", "-p", "no:cacheprovider"))
    os.symlink("..", project.path / "banks" / "up")
    (project.path / "banks" / "inner").mkdir()
    os.symlink("../../banks", project.path / "banks" / "inner" / "back")
    result = project.runpytest_subprocess("banks", "-p", "no:cacheprovider", timeout=120)
    assert _cases(result) == plain > 0


def test_one_file_by_two_paths_is_one_bank_file(project: pytest.Pytester) -> None:
    plain = _cases(project.runpytest("banks"))
    os.symlink("exam.yaml", project.path / "banks" / "alias.yaml")
    assert _cases(project.runpytest("banks")) == plain


def test_the_cli_walk_follows_the_same_rules(tmp_path: Path) -> None:
    banks = tmp_path / "banks"
    (banks / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere.yaml").write_text(REQUIRED)
    (banks / "a.yaml").write_text(REQUIRED)
    os.symlink(tmp_path / "elsewhere.yaml", banks / "linked.yaml")
    os.symlink("a.yaml", banks / "same-as-a.yaml")
    os.symlink("..", banks / "sub" / "loop")
    assert [p.name for p in walk_bank_folder(banks)] == ["a.yaml", "linked.yaml"]
    assert [p.name for p in iter_bank_files([banks, banks / "a.yaml"])] == ["a.yaml", "linked.yaml"]
    os.symlink("missing.yaml", banks / "sub" / "dead.yaml")
    with pytest.raises(InputError, match="symlink's target does not exist"):
        walk_bank_folder(banks)
    with pytest.raises(InputError, match="symlink's target does not exist"):
        iter_bank_files([banks / "sub" / "dead.yaml"])
