"""Every built-in grader declares its options; the registry converts and checks them before a grader is built."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError
from exam_harness.graders.base import GraderConfig, GraderOption, GradingRequest, declared_options, read_grader_options
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
        "from exam_harness.core.errors import ConfigError\n"
        "from exam_harness.graders.base import GraderConfig\n"
        "from exam_harness.graders.registry import default_registry\n"
        "for name in ('hf', 'openai', 'qa'):\n"
        "    try:\n"
        "        default_registry().create(name, GraderConfig(model='m', options={'typo': '1'}))\n"
        "    except ConfigError:\n"
        "        pass\n"
        "import exam_harness.llm.estimate, exam_harness.features.generate.command\n"
        "assert not {'torch', 'transformers', 'openai'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- every option that shapes grades is part of the grader's cache identity -----------------------------

# Options that by design do not shape grades, with the reason, and a value to show it leaves the
# cache identity alone. Every other declared option must change it (SHAPING below).
NOT_SHAPING: dict[str, dict[str, tuple[str, str]]] = {
    **{name: {"batch_size": ("3", "pairs per forward pass; padding is masked"),
              "device": ("cpu", "where the model runs")} for name in ("cross-encoder", "monot5")},
    "embedding": {
        "encode_batch_size": ("3", "texts per forward pass of the model; padding is masked (any difference is "
                              "float rounding, tests/grading/test_embedding_prepare.py)"),
    },
    "hf": {
        "revision": ("main", "for a local folder the content fingerprint is the revision; a hub revision is "
                     "resolved to the commit hash the spec holds"),
        "device": ("cpu", "where the model runs; the dtype it runs in is in the spec"),
        "batch_size": ("3", "how many prompts share a forward pass; padding is masked"),
        "local_files_only": ("true", "where the files are looked for, not which files"),
        "fast_path_tokens": ("0", "exact by construction: a greedy decode is a prefix of any longer one"),
        "trust_remote_code": ("true", "permission to run the model's code; the model itself is in the spec"),
        "price_prompt": ("0.5", "what a token costs, not what the model answers (docs/cost.md)"),
        "price_completion": ("2", "what a token costs, not what the model answers"),
        "max_cost": ("9", "when grading stops, not how a pair is graded"),
    },
    "qa": {
        "revision": ("main", "for a local folder the content fingerprint is the revision; a hub revision is "
                     "resolved to the commit hash the spec holds"),
        "device": ("cpu", "where the model runs"),
        "batch_size": ("3", "windows per forward pass; every window is padded alike"),
        "local_files_only": ("true", "where the files are looked for, not which files"),
    },
    "openai": {
        "base_url": ("http://elsewhere:9/v1", "where the server is: the same model elsewhere grades alike"),
        "api_key": ("sk-other", "a credential"),
        "max_tokens_field": ("max_completion_tokens", "the request field's name; the limit itself is in the spec"),
        "concurrency": ("2", "requests in flight"),
        "max_retries": ("1", "retries of failed requests"),
        "timeout": ("5", "how long to wait"),
        "backoff_base": ("2", "how long to wait between retries"),
        "backoff_max": ("2", "how long to wait between retries"),
        "retry_after_max": ("2", "how long to wait between retries"),
        "retry_after_limit": ("2", "when to give up waiting for a server that asks for too long"),
        "max_consecutive_failures": ("2", "when to stop asking a server that does not answer"),
        # each sample is keyed on the grader's own identity plus its index (graders/repeats.py): sample 1 is the
        # grade without repeats, and the reducer makes the pair's grade from cached samples
        "repeats": ("3", "how many samples are asked; each is cached under its index"),
        "reducer": ("min", "how cached samples make the pair's grade"),
        "price_prompt": ("0.5", "what a token costs, not what the model answers (docs/cost.md)"),
        "price_completion": ("2", "what a token costs, not what the model answers"),
        "max_cost": ("9", "when grading stops, not how a pair is graded"),
        "rpm": ("600", "how fast requests are sent"),
        "tpm": ("100000", "how fast tokens are sent"),
        "adaptive_concurrency": ("false", "requests in flight"),
        # a batch answer is the synchronous request's answer: both are cached under one key (docs/batch.md)
        "batch": ("true", "whether the requests go as batch jobs or calls"),
        "batch_target": ("vllm", "where the batch files are answered"),
        "batch_max_requests": ("10", "how many requests one batch file holds"),
        "batch_price_prompt": ("0.25", "what a token costs in a batch"),
        "batch_price_completion": ("1", "what a token costs in a batch"),
        "batch_wait": ("60", "how long a session waits for its batch jobs"),
        "batch_poll": ("5", "how often waiting batch jobs are looked at"),
    },
}

# Per grader and shaping option: another value (placeholders name the model folders and files of the
# `places` fixture) and the options it needs to matter (a custom prompt for custom_output, ...).
SHAPING: dict[str, dict[str, tuple[str, dict[str, str]]]] = {
    "embedding": {"model": ("{embedding}", {}), "cut_points": ("0.1,0.2,0.3,0.4,0.5", {}), "span": ("sentence", {}),
                  "answer_key": ("false", {}), "support_model": ("{support_model}", {})},
    "answer-key": {},
    "recorded": {"llm": ("other-llm", {}), "prompt_class": ("OtherPrompt", {})},
    **{name: {"model": ("other/model", {}), "cut_points": ("0.1,0.2,0.3,0.4,0.5", {}),
              "cut_points_file": (f"{{cuts_{name.replace('-', '_')}}}", {})}
       for name in ("cross-encoder", "monot5")},
    # the judges' own options shape grades through their specs, which the cascade's spec holds
    "cascade": {"decider": ("embedding", {}), "first": ("answer-key", {}),
                "decider_options": ("span=sentence", {"decider": "embedding"}), "first_options": ("span=sentence", {}),
                "threshold": ("0.3", {}), "target_recall": ("0.9", {}), "audit": ("0.05", {}), "seed": ("1", {}),
                "step": ("32", {}), "strata": ("2", {}), "audit_min": ("10", {})},
    "hf": {
        "model": ("{t5}", {}),
        "dtype": ("bfloat16", {}),
        "num_beams": ("2", {}),
        "max_input_tokens": ("64", {}),
        "quantize": ("int8", {}),
        "chat": ("false", {}),
        "prompt": ("answer-extraction", {}),
        "max_new_tokens": ("7", {}),
        "custom_output": ("yes-no", {"prompt": "custom:{prompt}"}),
        "nuggets_per_call": ("3", {"prompt": "nugget-assignment"}),
    },
    "qa": {
        "model": ("{qa_other}", {}),
        "max_seq_len": ("64", {}),
        "doc_stride": ("32", {}),
        "max_answer_len": ("5", {}),
        "answer_key": ("off", {}),
    },
    "openai": {
        "model": ("other-model", {}),
        "endpoint": ("completions", {}),
        "temperature": ("0.5", {}),
        "max_tokens": ("9", {}),
        "seed": ("3", {}),
        "system_prompt": ("Be terse.", {}),
        "fence_context": ("false", {}),
        "logprobs": ("true", {}),
        "top_logprobs": ("5", {"logprobs": "true"}),
        "max_context_tokens": ("2048", {}),
        "chars_per_token": ("3", {"max_context_tokens": "2048"}),
        "revision": ("v2", {}),
        "prompt": ("answer-extraction", {}),
        "max_new_tokens": ("7", {}),
        "custom_output": ("yes-no", {"prompt": "custom:{prompt}"}),
        "nuggets_per_call": ("3", {"prompt": "nugget-assignment"}),
    },
}

# The options each grader is built with before one is changed.
BASE: dict[str, dict[str, str]] = {
    "embedding": {},
    "answer-key": {},
    "recorded": {"llm": "flan-t5-large", "prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices"},
    "cascade": {"decider": "answer-key"},
    "cross-encoder": {"model": "some/cross-encoder"},
    "monot5": {"model": "some/monot5"},
    "hf": {"model": "{causal}", "device": "cpu"},
    "qa": {"model": "{qa}", "device": "cpu"},
    "openai": {"model": "gpt-test", "base_url": "http://localhost:9/v1", "temperature": "0.2"},  # repeats sample
}


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Local models (tiny, random) and a custom prompt file the option values name."""
    pytest.importorskip("transformers")
    from exam_harness.graders.embedding import EmbeddingGrader
    from tests.tiny_models import (
        build_causal_lm,
        build_extractive_qa,
        build_t5,
        save_model,
        train_qa_tokenizer,
        train_tokenizer,
    )

    root = tmp_path_factory.mktemp("models")
    t5_tok = train_tokenizer()
    causal_tok = train_tokenizer(causal=True)
    causal_tok.chat_template = "{% for m in messages %}USER: {{ m['content'] }}\n{% endfor %}ASSISTANT:"
    qa_tok = train_qa_tokenizer()
    embedding = root / "embedding"
    bundled = Path(EmbeddingGrader(GraderConfig()).model_path)
    for path in bundled.rglob("*"):
        if path.is_file():
            (embedding / path.relative_to(bundled)).parent.mkdir(parents=True, exist_ok=True)
            (embedding / path.relative_to(bundled)).symlink_to(path)
    from exam_harness.graders.support import SHIPPED_MODEL

    support_model = root / "support_model.json"  # the shipped model with another intercept: a refit one
    support_model.write_text(json.dumps({**json.loads(SHIPPED_MODEL.read_text()), "intercept": -1.0}))
    cuts = {}  # cut points fitted on labels (calibrate --fit-cut-points) for BASE's model of each reranker
    for name in ("cross-encoder", "monot5"):
        cuts[f"cuts_{name.replace('-', '_')}"] = str(root / f"{name}-cuts.json")
        (root / f"{name}-cuts.json").write_text(json.dumps({
            "grader": name, "model": f"some/{name}", "cut_points": [0.05, 0.2, 0.4, 0.6, 0.8], "min_grade": 4,
            "fitted_on": "team labels labels.jsonl"}))
    prompt = root / "rate.txt"
    prompt.write_text("Question: {question}\nPassage: {context}\nAnswer yes or no:")
    return {
        "t5": str(save_model(build_t5(t5_tok), t5_tok, root / "t5")),
        "causal": str(save_model(build_causal_lm(causal_tok), causal_tok, root / "causal")),
        "qa": str(save_model(build_extractive_qa(qa_tok, " Paris"), qa_tok, root / "qa")),
        "qa_other": str(save_model(build_extractive_qa(qa_tok, " France"), qa_tok, root / "qa-other")),
        "embedding": str(embedding),
        "prompt": str(prompt),
        "support_model": str(support_model),
        **cuts,
    }


def cache_identity(name: str, options: dict[str, str], places: dict[str, str],
                   metadata: dict[str, Any] | None = None) -> tuple[str, str]:
    """What a grader's grades are keyed on: its spec's fingerprint and its payload of a sample pair (its test point
    carrying ``metadata``)."""
    from exam_harness.core.models import Passage, Query, TestPoint

    given = {key: value.format(**places) for key, value in options.items()}
    grader = default_registry().create(name, GraderConfig(options=given))
    try:
        sample = GradingRequest(
            Query(id="q", text="eiffel tower"),
            TestPoint(id="q/1", query_id="q", kind="question", text="Where is the Eiffel Tower?", gold_answers=("Paris",),
                      metadata=metadata or {}),
            Passage(id="p", text="The Eiffel Tower is in Paris."),
        )
        return grader.spec().fingerprint(), json.dumps(grader.cache_payload(sample), sort_keys=True)
    finally:
        grader.close()


def test_every_declared_option_is_either_shaping_or_excused() -> None:
    for name in BUILTIN_GRADERS:
        declared = {option.name for option in declared_options(factory(name))}
        shaping, excused = set(SHAPING[name]), set(NOT_SHAPING.get(name, {}))
        assert not shaping & excused, name
        assert declared == shaping | excused, f"{name}: decide whether {sorted(declared ^ (shaping | excused))} shape grades"


@pytest.mark.parametrize(
    ("name", "option"), [(name, option) for name in sorted(SHAPING) for option in SHAPING[name]],
    ids=[f"{name}-{option}" for name in sorted(SHAPING) for option in SHAPING[name]],
)
def test_changing_an_option_that_shapes_grades_changes_the_cache_identity(
    name: str, option: str, places: dict[str, str]
) -> None:
    value, needs = SHAPING[name][option]
    base = {**BASE[name], **needs}
    assert cache_identity(name, base, places) != cache_identity(name, {**base, option: value}, places)


@pytest.mark.parametrize(
    ("name", "option"), [(name, option) for name in sorted(NOT_SHAPING) for option in NOT_SHAPING[name]],
    ids=[f"{name}-{option}" for name in sorted(NOT_SHAPING) for option in NOT_SHAPING[name]],
)
def test_an_option_that_does_not_shape_grades_leaves_the_cache_identity(
    name: str, option: str, places: dict[str, str]
) -> None:
    value, _reason = NOT_SHAPING[name][option]
    base = {**BASE[name], **({"price_prompt": "1"} if option == "max_cost" else {})}  # a budget needs a price
    assert cache_identity(name, base, places) == cache_identity(name, {**base, option: value}, places)


@pytest.mark.parametrize("name", sorted(BUILTIN_GRADERS))
def test_a_test_points_metadata_leaves_the_cache_identity(name: str, places: dict[str, str]) -> None:
    """Free-form metadata (a nugget's reasoning, trace) is no part of any grade's key: caches stay valid."""
    metadata = {"reasoning": "the definition", "trace": [1, {"model": "x"}], "gold_answers": ["Rome"]}
    base = BASE.get(name, {})
    assert cache_identity(name, base, places) == cache_identity(name, base, places, metadata)


def test_an_option_is_declared_once_as_a_field_for_constructor_parsing_and_checks() -> None:
    from dataclasses import dataclass

    from exam_harness.config.options import integer, optional
    from exam_harness.graders.base import check_options, option_field, options_of

    @dataclass
    class Settings:
        name: str
        width: int = option_field(8, "columns (default: 8)", integer(1))
        depth: int | None = option_field(None, "rows (default: all)", optional(integer(1)))

        def __post_init__(self) -> None:
            check_options(self, "toy")

    assert [(o.name, o.default, o.help) for o in options_of(Settings)] == [
        ("width", 8, "columns (default: 8)"), ("depth", None, "rows (default: all)")]
    assert read_grader_options("toy", options_of(Settings), {"width": "3"}) == {"width": 3, "depth": None}
    assert Settings("a", width="4").width == 4  # type: ignore[arg-type]  # a string is converted as a user's
    with pytest.raises(ConfigError, match=r"^toy option width: got 0, expected an integer >= 1$"):
        Settings("a", width=0)  # a library caller's value meets the same bounds
    with pytest.raises(ConfigError, match=r"^toy option depth: got True, expected an integer >= 1$"):
        Settings("a", depth=True)
    assert options_of(OpenAIBackend) == OPENAI_OPTIONS[1:]  # every option but the model is the backend's field
