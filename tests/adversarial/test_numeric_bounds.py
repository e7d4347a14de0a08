"""Issue 31, finding 13: every numeric option and declaration is bounded and finite, so a value such as
``evaluate --k 10**30``, ``--bootstrap 1e9`` or the grader option ``repeats=1000000`` is one usage error
before any work, not an OOM kill, a 30 GiB MemoryError or minutes of a dry run."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.config.options import Integer, Number, Optional, specs
from exam_harness.core.errors import ConfigError
from exam_harness.graders.base import GraderConfig, GraderOption, declared_options
from exam_harness.graders.registry import default_registry
from tests.helpers import write_exam

HUGE_INTEGER = "1" + "0" * 30
HUGE_NUMBER = "1e400"


def _numeric_converters() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = [(f"--{spec.name}", spec.convert) for _name, spec in specs()]
    registry = default_registry()
    for grader in registry.names():
        for option in declared_options(registry.get(grader)):
            assert isinstance(option, GraderOption)
            found.append((f"{grader}:{option.name}", option.convert))
    unwrapped = [(where, convert.convert if isinstance(convert, Optional) else convert) for where, convert in found]
    return [(where, convert) for where, convert in unwrapped if isinstance(convert, (Integer, Number))]


def test_every_numeric_option_refuses_absurd_values() -> None:
    converters = _numeric_converters()
    assert len(converters) > 20  # the schema's and every grader's numeric options
    for where, convert in converters:
        absurd = (HUGE_INTEGER, "-" + HUGE_INTEGER, "9" * 5000) if isinstance(convert, Integer) else ()
        for raw in (*absurd, HUGE_NUMBER, "-" + HUGE_NUMBER, "inf", "nan"):
            try:
                value = convert(raw)  # type: ignore[operator]
            except ValueError:
                continue
            raise AssertionError(f"{where} accepted {raw[:12]}…: {value!r}")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", HUGE_INTEGER], "--k must be an integer in 1..100000"),
        (["--bootstrap", "1000000000"], "--bootstrap must be an integer in 0..1000000"),
        (["--resamples", "1000000000"], "--resamples must be an integer in 1..1000000"),
        (["--seed", HUGE_INTEGER], "--seed must be an integer of at most"),
    ],
)
def test_evaluate_refuses_absurd_sizes_before_any_work(
    tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, _official = write_exam(tmp_path / "data")
    assert main(["evaluate", str(runs), "--bootstrap", "0", *extra]) == 4
    assert message in capsys.readouterr().err


def test_grader_repeats_is_bounded() -> None:
    registry = default_registry()
    with pytest.raises(ConfigError, match=r"option repeats='1000000' must be an integer in 1\.\.100"):
        registry.create("openai", GraderConfig(model="m", dry_run=True, options={
            "repeats": "1000000", "temperature": "1", "base_url": "http://127.0.0.1:9/v1"}))
