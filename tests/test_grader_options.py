"""Every built-in grader declares its options; the registry converts and checks them before a grader is built."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from exam_harness.errors import ConfigError
from exam_harness.graders.base import GraderConfig, GraderOption, declared_options, read_grader_options
from exam_harness.graders.llm import LLM_OPTIONS
from exam_harness.graders.registry import BUILTIN_GRADERS, default_registry
from exam_harness.llm.hf import HF_OPTIONS, HFBackend
from exam_harness.llm.openai import OPENAI_OPTIONS, OpenAIBackend


def factory(name: str) -> object:
    module, _, attr = BUILTIN_GRADERS[name][0].partition(":")
    return getattr(importlib.import_module(module), attr)


def as_text(value: object) -> str:
    """A default as a user would write it after --exam-grader-option KEY=."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@pytest.mark.parametrize("name", sorted(BUILTIN_GRADERS))
def test_every_builtin_grader_declares_its_options(name: str) -> None:
    options = declared_options(factory(name))
    names = [option.name for option in options]
    assert len(names) == len(set(names)), f"{name} declares an option twice"
    for option in options:
        assert option.help.strip() and "default" in option.help, f"{name}: option {option.name} needs a help text"
        if option.default is not None:  # None: unset, the grader or its backend decides
            assert option.convert(as_text(option.default)) == option.default, f"{name}: {option.name}"
    # The registry hands the grader one typed value per declared option.
    assert read_grader_options(name, options, {}) == {o.name: o.default for o in options}


def test_only_answer_key_declares_no_options() -> None:
    assert [name for name in BUILTIN_GRADERS if not declared_options(factory(name))] == ["answer-key"]


@pytest.mark.parametrize("name", ["hf", "openai"])
def test_llm_graders_share_one_declaration_of_the_llm_options(name: str) -> None:
    options = declared_options(factory(name))
    for shared in LLM_OPTIONS:
        assert any(option is shared for option in options)


@pytest.mark.parametrize(
    ("declared", "backend", "equivalent"),
    [(OPENAI_OPTIONS, OpenAIBackend, {}), (HF_OPTIONS, HFBackend, {"quantize": ("none", None)})],
    ids=["openai", "hf"],
)
def test_backend_option_defaults_are_the_backends_own(
    declared: tuple[GraderOption, ...], backend: Callable[..., Any], equivalent: dict[str, tuple[object, object]]
) -> None:
    """Every option is passed to the backend, so a default that drifted would change grades silently."""
    parameters = inspect.signature(backend).parameters
    for option in declared:
        if option.name == "model":
            continue
        default = parameters[option.name].default
        assert option.default == default or equivalent.get(option.name) == (option.default, default), option.name


@pytest.mark.parametrize(
    ("name", "typo", "suggestion"),
    [
        ("embedding", "cut_point", "cut_points"),
        ("openai", "concurrancy", "concurrency"),
        ("hf", "num_beam", "num_beams"),
        ("qa", "max_answer_length", "max_answer_len"),
        ("recorded", "prompt-class", "prompt_class"),
    ],
)
def test_unknown_option_suggests_the_declared_name(name: str, typo: str, suggestion: str) -> None:
    with pytest.raises(ConfigError, match=rf"grader '{name}': unknown option '{typo}'.*Did you mean '{suggestion}'"):
        default_registry().create(name, GraderConfig(model="never-loaded", options={typo: "1"}))


def test_bad_value_names_grader_option_value_and_what_is_valid() -> None:
    with pytest.raises(ConfigError, match=r"grader 'openai': option endpoint='chatt' must be one of chat, completions \(did you mean 'chat'\?\)"):
        default_registry().create("openai", GraderConfig(model="m", options={"endpoint": "chatt"}))
    with pytest.raises(ConfigError, match=r"grader 'embedding': option cut_points='1,2' must be 5 increasing numbers"):
        default_registry().create("embedding", GraderConfig(options={"cut_points": "1,2"}))


def test_reading_grader_options_imports_no_model_library() -> None:
    code = (
        "import sys\n"
        "from exam_harness.errors import ConfigError\n"
        "from exam_harness.graders.base import GraderConfig\n"
        "from exam_harness.graders.registry import default_registry\n"
        "for name in ('hf', 'openai', 'qa'):\n"
        "    try:\n"
        "        default_registry().create(name, GraderConfig(model='m', options={'typo': '1'}))\n"
        "    except ConfigError:\n"
        "        pass\n"
        "import exam_harness.llm.estimate, exam_harness.cli.generate\n"
        "assert not {'torch', 'transformers', 'openai'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
