"""The README's option table and extension-point table stay in step with the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness import hookspecs
from exam_harness.options import OptionSpec, default_of, readme_table, specs
from exam_harness.plugin import PYTEST_GROUPS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


@pytest.mark.parametrize(("name", "option"), specs(PYTEST_GROUPS, "pytest"),
                         ids=[name for name, _ in specs(PYTEST_GROUPS, "pytest")])
def test_every_pytest_option_is_in_the_readme_table(name: str, option: OptionSpec) -> None:
    flag = f"--exam-{option.name}"
    rows = [line for line in README.splitlines() if line.startswith(f"| `{flag}")]
    assert rows, f"README's option table lacks {flag}"
    assert f"`{option.ini_name}`" in rows[0]
    default = default_of(name)
    if isinstance(default, (int, float, str)) and not isinstance(default, bool) and default != "":
        assert str(default) in rows[0], f"README shows another default for {flag}"


def test_readme_option_table_is_the_schema_s() -> None:
    """The whole table, row for row (regenerate with ``python -m exam_harness.options``)."""
    assert readme_table(PYTEST_GROUPS) in README, "README's option table differs: python -m exam_harness.options"


def test_every_hook_is_documented() -> None:
    hooks = [name for name in dir(hookspecs) if name.startswith("pytest_exam_")]
    assert len(hooks) == 7
    for hook in hooks:
        assert f"`{hook}(" in README, hook


def test_readme_limit_table_is_the_code_s() -> None:
    """Every limit of exam_harness/io/limits.py is in the README's table with its value."""
    from exam_harness.io import limits

    declared = {name: getattr(limits, name) for name in dir(limits)
                if name.startswith(("MAX_", "YAML_")) and name != "MAX_QUOTED_CHARS"}
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in README.splitlines()
            if line.startswith(("| `MAX_", "| `YAML_"))}
    assert set(rows) == set(declared)
    for name, value in declared.items():
        bytes_limit = name.endswith("_BYTES")
        shown = limits.size_text(value) if bytes_limit else str(value) if isinstance(value, bool) else f"{value:,}"
        assert rows[name] == shown, name
