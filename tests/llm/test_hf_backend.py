"""HFBackend and the hf grader on tiny random models loaded through the real from_pretrained path.

The models (tests/tiny_models.py) are biased to answer like FLAN-T5 (one digit, then end of
sequence) for most prompts; competitor tokens make a share of the answers longer, so that the fast
self-rating path and its fallback are both exercised.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_parsing import parse_self_rating
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.core.models import test_point_id as make_id
from exam_harness.graders.base import GradeFailure, GraderConfig, GradingRequest
from exam_harness.graders.hf import HFGrader
from exam_harness.graders.registry import default_registry
from exam_harness.llm import prompts
from exam_harness.llm.backend import PromptParts, TextBackend
from exam_harness.llm.cost import grade_tokens
from exam_harness.llm.hf import DetailedGeneration, HFBackend, local_fingerprint
from tests.llm.support import BIAS, QUESTIONS, WORDS, rating_prompts
from tests.tiny_models import (
    build_causal_lm,
    build_t5,
    save_model,
    spread_digits,
    train_tokenizer,
)


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = train_tokenizer()
    model = build_t5(tok, bias=BIAS)
    spread_digits(model, tok, [p.text for p in rating_prompts(48, seed=99)], BIAS)
    return save_model(model, tok, tmp_path_factory.mktemp("tiny-t5"))


@pytest.fixture(scope="session")
def causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = train_tokenizer(causal=True)
    model = build_causal_lm(tok, bias=BIAS, max_positions=512)
    spread_digits(model, tok, [p.text for p in rating_prompts(48, seed=99)], BIAS)
    return save_model(model, tok, tmp_path_factory.mktemp("tiny-causal"))


@pytest.fixture(scope="session")
def t5(t5_dir: Path) -> HFBackend:
    return HFBackend(str(t5_dir), batch_size=50)


@pytest.fixture(scope="session")
def causal(causal_dir: Path) -> HFBackend:
    return HFBackend(str(causal_dir), batch_size=50)


def plain_greedy(folder: Path, texts: Sequence[str], max_new_tokens: int, *, batch: int, **kwargs: Any) -> list[str]:
    """The reference: transformers' own generate, greedy, decoded with special tokens skipped."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    config = AutoConfig.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    seq2seq = config.is_encoder_decoder
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_pretrained(folder).eval()
    if not seq2seq:
        tok.padding_side = "left"
    out: list[str] = []
    for lo in range(0, len(texts), batch):
        enc = tok(list(texts[lo : lo + batch]), return_tensors="pt", padding=True)
        with torch.inference_mode():
            seqs = model.generate(**enc, do_sample=False, max_new_tokens=max_new_tokens, **kwargs)
        if not seq2seq:
            seqs = seqs[:, enc["input_ids"].shape[1] :]
        out.extend(tok.batch_decode(seqs, skip_special_tokens=True, clean_up_tokenization_spaces=False))
    return out


# -- loading ------------------------------------------------------------------------------


def test_weights_load_on_first_generation_only(t5_dir: Path) -> None:
    backend = HFBackend(str(t5_dir), batch_size=8)
    spec_settings = backend.settings()  # what the cache key needs: no weights
    loaded_before = backend._model is not None
    assert not loaded_before and spec_settings["architecture"] == "seq2seq"
    [result] = backend.generate([PromptParts("Rate: ", "some passage")], max_new_tokens=4, rating_scale=5)
    assert backend._model is not None and not isinstance(result, GradeFailure)


def test_t5_loads_as_seq2seq_with_fp32_greedy_settings(t5: HFBackend, t5_dir: Path) -> None:
    assert isinstance(t5, TextBackend)
    assert t5.is_encoder_decoder and t5.device == "cpu"
    assert t5.model_id == str(t5_dir)
    assert t5.revision is not None and t5.revision.startswith("local-")
    settings = t5.settings()
    assert settings == {
        "backend": "transformers",
        "architecture": "seq2seq",
        "decoding": "greedy",
        "num_beams": 1,
        "dtype": "float32",
        "quantize": None,
        "max_input_tokens": 512,
        "chat": False,
    }
    assert t5.count_tokens("hello world") == len(t5.tokenizer("hello world")["input_ids"])


def test_causal_limit_is_context_minus_answer(causal: HFBackend) -> None:
    assert not causal.is_encoder_decoder
    assert causal.input_limit(32) == 512 - 32
    assert causal.settings()["architecture"] == "causal"


def test_local_fingerprint_changes_with_the_weights(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\x00" * 200_000)
    before = local_fingerprint(folder)
    assert local_fingerprint(folder) == before
    (folder / "model.safetensors").write_bytes(b"\x00" * 199_999 + b"\x01")
    assert local_fingerprint(folder) != before


def test_missing_model_says_how_to_point_at_a_local_copy(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot load model .*local folder") as info:
        HFBackend(str(tmp_path / "no-such-model"))
    assert "no-such-model" in str(info.value)
    # A hub name with downloads forbidden: no network is attempted, the message says what to do.
    with pytest.raises(ConfigError, match=r"huggingface-cli download google/flan-t5-large"):
        HFBackend("google/flan-t5-large", local_files_only=True)


@pytest.mark.parametrize("create", [HFGrader, lambda config: default_registry().create("hf", config)],
                         ids=["class", "registry"])
def test_grader_rejects_bad_options_before_loading(tmp_path: Path, create: Any) -> None:
    missing = str(tmp_path / "never-loaded")
    with pytest.raises(ConfigError, match=r"grader 'hf': unknown option 'num_beam'.*Did you mean 'num_beams'"):
        create(GraderConfig(model=missing, options={"num_beam": "5"}))
    with pytest.raises(ConfigError, match=r"grader 'hf': option quantize='int4'.*none, int8"):
        create(GraderConfig(model=missing, options={"quantize": "int4"}))
    with pytest.raises(ConfigError, match=r"grader 'hf': option num_beams='0' must be an integer >= 1"):
        create(GraderConfig(model=missing, options={"num_beams": "0"}))
    with pytest.raises(ConfigError, match=r"grader 'hf': option chat='maybe' must be true or false"):
        create(GraderConfig(model=missing, options={"chat": "maybe"}))
    with pytest.raises(ConfigError, match=r"unknown prompt 'sunny'"):
        create(GraderConfig(model=missing, options={"prompt": "sunny"}))
    with pytest.raises(ConfigError, match=r"device 'tpu' is invalid"):
        create(GraderConfig(model=missing, device="tpu"))


# -- the fast self-rating path ------------------------------------------------------------


@pytest.mark.slow
def test_fast_path_equals_greedy_generate_and_parse_t5(t5: HFBackend, t5_dir: Path) -> None:
    parts = rating_prompts(200, seed=1, max_words=30)
    before = dict(t5.stats)
    fast = t5.generate(parts, max_new_tokens=6, rating_scale=5)
    reference = plain_greedy(t5_dir, [p.text for p in parts], 6, batch=100)
    assert [g.text for g in fast] == reference  # type: ignore[union-attr]
    assert [parse_self_rating(g.text) for g in fast] == [parse_self_rating(r) for r in reference]  # type: ignore[union-attr]
    used = t5.stats["fast_path"] - before["fast_path"]
    fell_back = t5.stats["fallback"] - before["fallback"]
    assert used + fell_back == 200
    assert fell_back >= 10 and used >= 100  # both paths really ran
    assert len({parse_self_rating(r) for r in reference}) >= 4  # the grades vary with the input
    for g in fast:
        assert isinstance(g, DetailedGeneration) and g.grade_probabilities is not None
        assert sum(g.grade_probabilities) == pytest.approx(1.0)
        assert 0.0 < g.details["digit_mass"] <= 1.0
        if g.details["fast_path"] and g.text.strip().isdigit():
            # the greedy digit is the most probable grade
            assert max(range(6), key=lambda k: g.grade_probabilities[k]) == int(g.text)  # type: ignore[index]


def test_fast_path_matches_unbatched_generate(t5: HFBackend, t5_dir: Path) -> None:
    parts = rating_prompts(5, seed=2, max_words=30)
    fast = t5.generate(parts, max_new_tokens=6, rating_scale=5)
    reference = plain_greedy(t5_dir, [p.text for p in parts], 6, batch=1)
    assert [g.text for g in fast] == reference  # type: ignore[union-attr]


def test_fast_path_equals_greedy_generate_causal(causal: HFBackend, causal_dir: Path) -> None:
    parts = rating_prompts(100, seed=3, max_words=30)
    before = dict(causal.stats)
    fast = causal.generate(parts, max_new_tokens=6, rating_scale=5)
    reference = plain_greedy(causal_dir, [p.text for p in parts], 6, batch=50)
    assert [g.text for g in fast] == reference  # type: ignore[union-attr]
    assert causal.stats["fast_path"] > before["fast_path"]
    assert causal.stats["fallback"] > before["fallback"]


def test_beam_search_option(t5_dir: Path) -> None:
    beam = HFBackend(str(t5_dir), num_beams=3)
    assert beam.settings()["decoding"] == "beam" and beam.settings()["num_beams"] == 3
    parts = rating_prompts(16, seed=4)
    got = beam.generate(parts, max_new_tokens=8, rating_scale=5)
    reference = plain_greedy(t5_dir, [p.text for p in parts], 8, batch=16, num_beams=3)
    assert [g.text for g in got] == reference  # type: ignore[union-attr]
    assert beam.stats["fast_path"] == 0
    assert all(isinstance(g, DetailedGeneration) and g.grade_probabilities is not None for g in got)


def test_fast_path_can_be_switched_off(t5: HFBackend, t5_dir: Path) -> None:
    plain = HFBackend(str(t5_dir), fast_path_tokens=0)
    parts = rating_prompts(6, seed=9, max_words=20)
    got = plain.generate(parts, max_new_tokens=6, rating_scale=5)
    assert plain.stats["fast_path"] == plain.stats["fallback"] == 0
    fast = t5.generate(parts, max_new_tokens=6, rating_scale=5)
    assert [g.text for g in got] == [g.text for g in fast]  # type: ignore[union-attr]
    for a, b in zip(got, fast):
        assert isinstance(a, DetailedGeneration) and isinstance(b, DetailedGeneration)
        assert a.grade_probabilities == pytest.approx(b.grade_probabilities, abs=1e-5)
        assert "fast_path" not in a.details


def test_batch_size_halves_when_memory_runs_out(t5: HFBackend, t5_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = HFBackend(str(t5_dir), batch_size=16)
    real = backend._generate_batch

    def small_only(batch: list[list[int]], max_new_tokens: int, rating_scale: int | None) -> Any:
        if len(batch) > 4:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(batch, max_new_tokens, rating_scale)

    monkeypatch.setattr(backend, "_generate_batch", small_only)
    parts = rating_prompts(12, seed=5, max_words=20)
    got = backend.generate(parts, max_new_tokens=6, rating_scale=5)
    assert backend.batch_size == 4 and backend.stats["batch_halvings"] == 2
    expected = t5.generate(parts, max_new_tokens=6, rating_scale=5)
    assert [g.text for g in got] == [g.text for g in expected]  # type: ignore[union-attr]


def test_other_runtime_errors_are_not_swallowed(t5_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = HFBackend(str(t5_dir))

    def broken(*_args: Any) -> Any:
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(backend, "_generate_batch", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        backend.generate(rating_prompts(2), max_new_tokens=4)


def test_int8_quantised_cpu_path(t5_dir: Path) -> None:
    quantised = HFBackend(str(t5_dir), quantize="int8")
    assert quantised.settings()["quantize"] == "int8"
    got = quantised.generate(rating_prompts(8, seed=6), max_new_tokens=8, rating_scale=5)
    assert all(isinstance(g, DetailedGeneration) for g in got)


# -- truncation ---------------------------------------------------------------------------


def _decoded(backend: HFBackend, parts: PromptParts, max_new_tokens: int = 32) -> tuple[list[int], str]:
    [ids] = backend._prepare([parts], backend.input_limit(max_new_tokens))
    assert isinstance(ids, list)
    text = backend.tokenizer.decode(ids, skip_special_tokens=True)
    assert isinstance(text, str)
    return ids, text


@pytest.mark.parametrize("backend_name", ["t5", "causal"])
def test_truncation_keeps_instruction_and_question_whole(backend_name: str, request: pytest.FixtureRequest) -> None:
    backend: HFBackend = request.getfixturevalue(backend_name)
    rng = random.Random(7)
    context = " ".join(rng.choice(WORDS) for _ in range(4000))[:20_000]
    assert len(context) == 20_000
    question = "Where is the Eiffel Tower and who designed it, in 1889?"
    before, after = prompts.QUESTION_SELF_RATING.split(question=question)
    ids, text = _decoded(backend, PromptParts(before, context, after))
    limit = backend.input_limit(32)
    assert limit - 12 <= len(ids) <= limit  # filled up to the limit, not beyond
    assert text.startswith(before) and f"Question: {question}\nContext: " in text
    kept = text[len(before) :]
    assert context.startswith(kept) and len(kept) > 100  # a prefix of the passage survives ...
    assert context[len(kept)] == " "  # ... cut at a word end


def test_truncation_inside_a_word_when_no_word_fits(t5: HFBackend) -> None:
    before, after = prompts.NUGGET_SELF_RATING.split(nugget="tower")
    ids, text = _decoded(t5, PromptParts(before, "x" * 5000, after))
    assert len(ids) <= 512 and text.startswith(before) and "xxxx" in text


def test_prompt_too_long_without_passage_is_a_failure_not_a_grade(t5_dir: Path) -> None:
    small = HFBackend(str(t5_dir), max_input_tokens=40)
    [result] = small.generate(rating_prompts(1), max_new_tokens=8, rating_scale=5)
    assert isinstance(result, GradeFailure) and "input limit of 40" in result.message


# -- grading end to end -------------------------------------------------------------------


def _requests(n: int) -> list[GradingRequest]:
    rng = random.Random(8)
    query = Query(id="q1", text="eiffel tower")
    out = []
    for i in range(n):
        kind: Literal["question", "nugget"] = "question" if i % 3 else "nugget"
        text = rng.choice(QUESTIONS) if kind == "question" else "Eiffel Tower in Paris"
        tp = TestPoint(id=make_id("q1", text), query_id="q1", kind=kind, text=text, gold_answers=("Paris",))
        passage = Passage(id=f"p{i}", text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))))
        out.append(GradingRequest(query=query, test_point=tp, passage=passage))
    return out


def test_hf_grader_self_rating_end_to_end(t5_dir: Path) -> None:
    grader = HFGrader(GraderConfig(model=str(t5_dir), options={"batch_size": "20", "max_new_tokens": "6"}))
    spec = grader.spec()
    assert spec.name == "hf" and spec.model == str(t5_dir) and spec.revision and spec.revision.startswith("local-")
    assert spec.options["backend"]["decoding"] == "greedy"
    requests = _requests(30)
    results = grader.grade_batch(requests)
    assert all(isinstance(r, Grade) for r in results)
    grades = [r for r in results if isinstance(r, Grade)]
    assert len({g.grade for g in grades}) >= 3
    for g, r in zip(grades, requests):
        assert g.grade == parse_self_rating(g.raw_response or "")
        assert g.probabilities is not None and len(g.probabilities) == 6
        expected_class = "QuestionSelfRatedUnanswerablePromptWithChoices" if r.test_point.kind == "question" else "NuggetSelfRatedPrompt"
        assert g.details["prompt_class"] == expected_class
        assert g.details["model"] == str(t5_dir) and g.details["prompt_tokens"] > 50
        assert isinstance(g.details["fast_path"], bool) and "digit_mass" in g.details
        assert 0 <= g.details["completion_tokens"] <= 6  # the answer's tokens before the end token
    # the backend's counters (the session's figures, docs/cost.md) are the tokenizer's counts the grades keep
    shares = [grade_tokens(g.details) or (0.0, 0.0) for g in grades]
    used = grader.meter.used()
    assert used.prompt_tokens == pytest.approx(sum(p for p, _ in shares)) and used.prompt_tokens > 50 * len(grades)
    assert used.completion_tokens == pytest.approx(sum(c for _, c in shares)) and used.completion_tokens > 0
    grader.close()


@pytest.mark.parametrize(("mode", "max_grade"), [("answer-key", 1), ("thomas", 2), ("helm", 1)])
def test_hf_grader_other_modes_end_to_end(causal_dir: Path, mode: str, max_grade: int) -> None:
    grader = HFGrader(GraderConfig(model=str(causal_dir), options={"prompt": mode, "max_new_tokens": "6"}))
    requests = [r for r in _requests(9) if grader.supports(r.test_point) is None]
    results = grader.grade_batch(requests)
    assert results and all(isinstance(r, Grade) and 0 <= r.grade <= max_grade for r in results)
    if mode == "answer-key":
        assert all(r.extracted_answer is not None for r in results if isinstance(r, Grade))


def test_chat_template_wraps_the_prompt(causal_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    folder = tmp_path / "chat"
    shutil.copytree(causal_dir, folder)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.chat_template = "{% for m in messages %}USER: {{ m['content'] }}\n{% endfor %}ASSISTANT:"
    tok.save_pretrained(folder)
    backend = HFBackend(str(folder))
    assert backend.chat and backend.settings()["chat"] is True
    parts = PromptParts("Rate: ", "some context", " Grade:")
    _, text = _decoded(backend, parts, 8)
    assert text == "USER: Rate: some context Grade:\nASSISTANT:"
    assert backend.count_tokens("x") > len(backend.tokenizer("x", add_special_tokens=False)["input_ids"])
    plain = HFBackend(str(folder), chat=False)
    assert _decoded(plain, parts, 8)[1] == "Rate: some context Grade:"
