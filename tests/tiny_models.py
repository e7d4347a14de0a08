"""Tiny transformers models with random weights for tests and the throughput benchmark.

Nothing here downloads anything: the tokenizer is a byte-level BPE trained in milliseconds with the
``tokenizers`` package on the method's prompt texts plus a few sentences, and the models are built
from configs with random weights, then saved to a folder so callers load them through the real
``from_pretrained`` path.

A random model answers random tokens, which exercises nothing of the self-rating fast path. So we
bias it to answer the way FLAN-T5 does (one digit, then end-of-sequence) with a two-state machine
written into ordinary weights (no extra parameters, so ``from_pretrained`` loads it unchanged):

* Two hidden dimensions are reserved as *control* dimensions c0 and c1. In the token embedding
  every non-digit token (including the decoder start token and every prompt token) gets a large
  component on c0, every digit token a large one on c1, and nothing else on either.
* The final norm (RMSNorm) makes the last hidden state point mostly along the embedding of the
  current input token (the residual stream dominates a small random network), so the output layer
  reads "the last token was a digit" from c1 and "it was not" from c0.
* Output-layer column c0 gives the digits 0..5 a high logit (``strength``): after the prompt (or the
  decoder start) the model writes a digit. Column c1 gives end-of-sequence a high logit: after a
  digit it stops. The remaining columns are small random weights (``noise``) that make the choice
  among digits depend on the input, and optional *competitor* tokens get a logit ``margin`` below
  the favourite so that a share of the answers is something else (a non-digit first token, or a
  second token that is not end-of-sequence): those pairs need the fast path's fallback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

PAD, EOS, UNK = "<pad>", "</s>", "<unk>"

# Sentences that give the tokenizer a vocabulary for the test passages and questions.
CORPUS_SENTENCES: tuple[str, ...] = (
    "The Eiffel Tower is in Paris, the capital of France, and was finished in 1889.",
    "Where is the Eiffel Tower? When was it built? Who designed the tower?",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in green plants.",
    "What do plants need for photosynthesis? Which gas do plants release?",
    "The heart pumps blood through the arteries and veins of the body about 70 times a minute.",
    "How many times does the heart beat per minute? What carries blood away from the heart?",
    "An AML surveillance analyst monitors financial transactions for signs of money laundering.",
    "What does an analyst monitor? Which activities are red flags for money laundering?",
    "Jamaica has a tropical climate with warm weather all year and a rainy season from May to October.",
    "How is the weather in Jamaica? When is the rainy season?",
    "It is not possible to tell; the passage does not say. No answer, unknown, unanswerable.",
    "The quick brown fox jumps over the lazy dog 12 times before 3 o'clock.",
)


def corpus_texts() -> list[str]:
    from exam_harness.llm import prompts

    templates = [p.template for p in prompts.GRADING_PROMPTS.values()]
    templates.append(prompts.ANSWER_VERIFICATION)
    return templates * 3 + list(CORPUS_SENTENCES) * 3


def train_tokenizer(
    texts: list[str] | None = None, *, vocab_size: int = 600, causal: bool = False
) -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer (no unknown characters), digits always single tokens.

    ``causal=False`` appends ``</s>`` to every encoded text, as T5's tokenizer does; ``causal=True``
    adds nothing and pads on the left, as decoder-only models need for batched generation.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, EOS, UNK],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts if texts is not None else corpus_texts(), trainer)
    if not causal:
        tok.post_processor = processors.TemplateProcessing(single=f"$A {EOS}", special_tokens=[(EOS, tok.token_to_id(EOS))])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left" if causal else "right",
    )


# Shapes: the FLAN-T5 family's published configs (d_ff, layers, heads; gated-gelu, untied head).
TINY_T5: dict[str, Any] = {"d_model": 32, "d_ff": 64, "d_kv": 16, "num_layers": 2, "num_heads": 2}
FLAN_T5_SMALL: dict[str, Any] = {"d_model": 512, "d_ff": 1024, "d_kv": 64, "num_layers": 8, "num_heads": 6}
FLAN_T5_LARGE: dict[str, Any] = {"d_model": 1024, "d_ff": 2816, "d_kv": 64, "num_layers": 24, "num_heads": 16}


@dataclass
class DigitBias:
    """How strongly a random model is pushed to answer one digit (0..max_digit) then end-of-sequence.

    ``first_competitors`` / ``after_digit_competitors``: token text -> margin (logits below the
    favourite) for tokens that compete with the digit at step one / with end-of-sequence after it.
    """

    strength: float = 12.0
    noise: float = 1.0
    amplitude: float = 4.0
    max_digit: int = 5
    first_competitors: dict[str, float] = field(default_factory=dict)
    after_digit_competitors: dict[str, float] = field(default_factory=dict)


def _single_token_id(tokenizer: PreTrainedTokenizerBase, text: str) -> int:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ValueError(f"{text!r} is not a single token for this tokenizer: {ids}")
    return int(ids[0])


def apply_digit_bias(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, bias: DigitBias, *, seed: int = 0
) -> None:
    """Write the two-state digit machine of the module docstring into ``model``'s weights, in place."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    embed = model.get_input_embeddings().weight
    out = model.get_output_embeddings()
    assert isinstance(embed, torch.Tensor) and isinstance(out, torch.nn.Linear)
    if out.weight.data_ptr() == embed.data_ptr():
        # transformers 5 ties T5's output layer to the embedding in memory; FLAN-T5 checkpoints carry
        # both tensors and load untied, so we untie here and save both, as they do.
        out.weight = torch.nn.Parameter(embed.detach().clone())
    head = out.weight
    _, d = head.shape
    digit_ids = [_single_token_id(tokenizer, str(i)) for i in range(10)]
    eos_id = int(tokenizer.eos_token_id)
    c0, c1 = 0, 1
    with torch.no_grad():
        amp = bias.amplitude * float(embed.norm(dim=1).median())
        embed[:, c0] = amp
        embed[:, c1] = 0.0
        embed[digit_ids, c0] = 0.0
        embed[digit_ids, c1] = amp
        scale = d**-0.5
        head.copy_(torch.randn(head.shape, generator=gen) * bias.noise * scale)
        head[len(tokenizer) :, :] = 0.0  # ids the tokenizer cannot decode
        head[:, c0] = 0.0
        head[:, c1] = 0.0
        for digit in range(bias.max_digit + 1):
            head[digit_ids[digit], c0] = bias.strength * scale
        for text, margin in bias.first_competitors.items():
            head[_single_token_id(tokenizer, text), c0] = (bias.strength - margin) * scale
        head[eos_id, c1] = bias.strength * scale
        for text, margin in bias.after_digit_competitors.items():
            head[_single_token_id(tokenizer, text), c1] = (bias.strength - margin) * scale


def _head_inputs(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: list[str], answers: list[list[int]]
) -> list[Any]:
    """The output layer's input at the step after the prompt followed by each of ``answers``."""
    import torch

    head_module = model.get_output_embeddings()
    captured: list[torch.Tensor] = []
    hook = head_module.register_forward_hook(lambda _m, args, _out: captured.append(args[0][:, -1, :].detach()))
    try:
        with torch.inference_mode():
            if model.config.is_encoder_decoder:
                enc = tokenizer(texts, return_tensors="pt", padding=True)
                encoded = model.get_encoder()(**enc)
                for answer in answers:
                    prefix = torch.tensor([[model.config.decoder_start_token_id, *answer]] * len(texts))
                    model(encoder_outputs=encoded, attention_mask=enc["attention_mask"], decoder_input_ids=prefix)
            else:
                ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
                for answer in answers:
                    model(**tokenizer.pad({"input_ids": [i + answer for i in ids]}, return_tensors="pt"))
    finally:
        hook.remove()
    return [c.float() for c in captured]


def spread_digits(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    bias: DigitBias,
    *,
    spread: float = 1.5,
    seed: int = 0,
) -> None:
    """Make the favourite digit depend on the input, in place (call after :func:`apply_digit_bias`).

    The first step's hidden state barely varies between prompts that share a long instruction, so
    random output weights pick the same digit for nearly every prompt. We measure the output
    layer's input on ``texts`` at the first step (S1) and after each digit (S2), find directions
    that vary much across S1 but are small on S2 (generalised eigenvectors of their covariances, so
    that end-of-sequence after the digit stays certain), and give each digit (and first-step
    competitor) output row a random combination of them, scaled so its logit varies across ``texts``
    with standard deviation ``spread``.
    """
    import numpy as np
    import scipy.linalg
    import torch

    digit_ids = [_single_token_id(tokenizer, str(i)) for i in range(10)]
    answers: list[list[int]] = [[]] + [[digit_ids[d]] for d in range(bias.max_digit + 1)]
    s1, *s2 = (x.double().numpy() for x in _head_inputs(model, tokenizer, texts, answers))
    for states in (s1, *s2):
        states[:, :2] = 0.0  # keep the control dimensions clean
    # Directions orthogonal to every mean state, so that adding them moves no logit on average ...
    means = np.stack([s1.mean(0)] + [x.mean(0) for x in s2], axis=1)
    q, _ = np.linalg.qr(means)
    dim = s1.shape[1]
    proj = np.eye(dim) - q @ q.T
    proj[:2, :] = 0.0
    proj[:, :2] = 0.0
    # ... that vary much across first steps (c1) and little after a digit (c2, within each digit).
    centred = s1 - s1.mean(0, keepdims=True)
    c1 = proj @ (centred.T @ centred / len(s1)) @ proj
    within = np.concatenate([x - x.mean(0, keepdims=True) for x in s2])
    c2 = proj @ (within.T @ within / len(within)) @ proj
    c2 += np.eye(dim) * (1e-6 * max(np.trace(c2), 1e-12))
    c1 += np.eye(dim) * (1e-6 * max(np.trace(c1), 1e-12))
    rng = np.random.default_rng(seed + 1)
    head = model.get_output_embeddings().weight
    groups = [
        # (rows, states whose variation should move them, covariances: wanted, unwanted)
        ([digit_ids[i] for i in range(bias.max_digit + 1)] + [_single_token_id(tokenizer, t) for t in bias.first_competitors], centred, c1, c2),
        ([_single_token_id(tokenizer, t) for t in bias.after_digit_competitors], within, c2, c1),
    ]
    with torch.no_grad():
        for rows, states, wanted, unwanted in groups:
            _, vecs = scipy.linalg.eigh(wanted, unwanted)
            basis = (proj @ vecs[:, ::-1][:, : min(4, len(texts) - 1)]).T  # best directions first
            for row in rows:
                w = head[row].double().numpy()
                # Equal mean logits: only the bias columns and the spread tell the rows apart.
                w_rest = w.copy()
                w_rest[:2] = 0.0
                w = w - q @ (q.T @ w_rest)
                direction = rng.standard_normal(basis.shape[0]) @ basis
                direction *= spread / max(float((states @ direction).std()), 1e-12)
                head[row] = torch.from_numpy(w + direction).to(head.dtype)


def build_t5(
    tokenizer: PreTrainedTokenizerBase,
    *,
    shape: dict[str, Any] | None = None,
    vocab_size: int | None = None,
    bias: DigitBias | None = None,
    seed: int = 0,
) -> PreTrainedModel:
    """A T5 (FLAN-T5 style: gated-gelu, untied output layer) with random weights."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    # attributes T5Config keeps from keywords its typed signature does not list
    untyped: dict[str, Any] = {"tie_word_embeddings": False, "decoder_start_token_id": tokenizer.pad_token_id}
    config = T5Config(
        vocab_size=vocab_size or len(tokenizer),
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **untyped,
        **(shape or TINY_T5),
    )
    model = T5ForConditionalGeneration(config)
    model.eval()
    if bias is not None:
        apply_digit_bias(model, tokenizer, bias, seed=seed)
    return model


def build_causal_lm(
    tokenizer: PreTrainedTokenizerBase,
    *,
    bias: DigitBias | None = None,
    seed: int = 0,
    max_positions: int = 1024,
    hidden: int = 32,
) -> PreTrainedModel:
    """A tiny Llama-style decoder-only LM with random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.eval()
    if bias is not None:
        apply_digit_bias(model, tokenizer, bias, seed=seed)
    return model


def save_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path) -> Path:
    """Save model and tokenizer side by side, as a hub snapshot looks, and return the folder."""
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def train_qa_tokenizer(texts: list[str] | None = None, *, vocab_size: int = 600) -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer with BERT's ``[CLS] question [SEP] passage [SEP]`` layout and offsets."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(texts if texts is not None else list(CORPUS_SENTENCES) * 5, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=True),
            processors.TemplateProcessing(
                single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
            ),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]"
    )


def build_extractive_qa(tokenizer: PreTrainedTokenizerBase, answer_token: str, *, answer: float = 8.0, null: float = 4.0) -> PreTrainedModel:
    """A transparent BERT QA model: it answers ``answer_token`` wherever the passage has it, else nothing.

    No encoder layers, so a token's output is the LayerNorm of its embedding. Every embedding is
    zero except [CLS] (direction e0 - e1) and the answer token (direction e2 - e3); the QA head reads
    the start and end logits from those directions, ``answer`` for the answer token and ``null``
    for [CLS]. With the answer token in the passage its one-token span beats the null answer;
    without it the null answer ([CLS]) wins.
    """
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=0,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=512,
        hidden_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = BertForQuestionAnswering(config)
    model.eval()
    answer_id = _single_token_id(tokenizer, answer_token)
    emb = model.bert.embeddings
    with torch.no_grad():
        emb.word_embeddings.weight.zero_()
        emb.position_embeddings.weight.zero_()
        emb.token_type_embeddings.weight.zero_()
        emb.LayerNorm.weight.fill_(1.0)
        emb.LayerNorm.bias.zero_()
        emb.word_embeddings.weight[tokenizer.cls_token_id, 0:2] = torch.tensor([10.0, -10.0])
        emb.word_embeddings.weight[answer_id, 2:4] = torch.tensor([10.0, -10.0])
        head = model.qa_outputs
        head.weight.zero_()
        head.bias.zero_()
        scale = (config.hidden_size / 2) ** -0.5  # LayerNorm turns 10*(e_i - e_j) into sqrt(d/2)*(e_i - e_j)
        head.weight[:, 0] = null * scale
        head.weight[:, 2] = answer * scale
    return model
