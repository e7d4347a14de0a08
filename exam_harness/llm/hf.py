"""Transformers backend: FLAN-T5 and other seq2seq models, and causal LMs, on CPU or GPU.

:class:`HFBackend` loads a model by hub name or local folder through ``from_pretrained`` (honouring
``HF_HUB_OFFLINE`` and the ``local_files_only`` option), batches all pending prompts of a grading
pass together, sorted by length so batches carry little padding, halves its batch size when memory
runs out, and truncates only the passage of a prompt that exceeds the model's input limit.

Fast self-rating. For rating prompts (``rating_scale`` given) with greedy decoding, every prompt is
first decoded greedily for at most ``fast_path_tokens`` (2) tokens. A greedy decode is a prefix of
any longer greedy decode, so a prompt whose answer ended (end-of-sequence) within those tokens has
exactly the text that plain greedy ``generate`` gives; only the others (the model did not answer one
digit and stop) are decoded again in full. FLAN-T5 answers one digit and stops for about 99.5% of
the published DL19 pairs, so nearly all pairs cost one encoder pass and two decoder steps. The
first step's logits also give the probability of each grade 0..scale (summed over the tokens that
read as that digit, renormalised over the digits; the digits' total mass is kept in the details).

The ``hf`` grader (:class:`~exam_harness.graders.hf.HFGrader`) and ``exam-harness generate --backend hf``
build the backend with :func:`backend_from_options` from the options declared in :data:`HF_OPTIONS`.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from exam_harness.config.options import (
    GraderOption,
    boolean,
    check_options,
    choice,
    integer,
    option_field,
    optional,
    options_of,
    read_grader_options,
    shared_option,
    text,
)
from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_parsing import single_digit_grade
from exam_harness.core.models import GradeFailure
from exam_harness.llm.backend import Generation, GenerationResult, PromptParts

if TYPE_CHECKING:
    import torch

DEFAULT_MODEL = "google/flan-t5-large"
DEFAULT_BATCH_SIZE = {"cpu": 16, "cuda": 256}
SEQ2SEQ_DEFAULT_LIMIT = 512  # FLAN-T5's input limit
FAST_PATH_TOKENS = 2
DTYPES = ("auto", "float32", "bfloat16", "float16")


# Step one's probability of each grade 0..scale (renormalised over the digits) and the digits' mass.
Probabilities = tuple[tuple[float, ...], float]


@dataclass(frozen=True)
class DetailedGeneration(Generation):
    """A generation with backend details for the grade record (fast path, digit mass, truncation)."""

    details: dict[str, Any] = field(default_factory=dict)


def resolve_device(device: str | None) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; explicit devices are checked."""
    import torch

    wanted = (device or "auto").strip().lower()
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} was asked for, but torch sees no CUDA GPU; use device=cpu or auto")
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", wanted):
        raise ConfigError(f"device {device!r} is invalid; expected auto, cpu, cuda, cuda:N or mps")
    return wanted


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    """``auto`` -> bfloat16 on a GPU that supports it, float32 elsewhere."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if dtype not in DTYPES:
        raise ConfigError(f"dtype {dtype!r} is invalid; expected one of {', '.join(DTYPES)}")
    chosen: torch.dtype = getattr(torch, dtype)
    return chosen


def model_load_error(name: str, exc: BaseException) -> ConfigError:
    """The error for a model that cannot be loaded, saying how to point at a local copy."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hint = (
        "Point the grader's model at a local folder holding the model's config.json, weights and tokenizer "
        f"files (for example one made with `huggingface-cli download {name} --local-dir ./models/{Path(name).name}`)"
    )
    if not Path(name).exists():
        hint += "; or allow downloads" + (" (HF_HUB_OFFLINE is set)" if offline else "") + " and drop local_files_only"
    return ConfigError(f"cannot load model {name!r}: {reason}. {hint}.")


def local_fingerprint(location: Path) -> str:
    """A cheap content fingerprint of a local model folder or file (names, sizes, first and last 64 KiB
    of each file, files of subfolders included, hidden ones left out), standing in for a hub revision
    so that a retrained model in the same place is not mistaken for the old one by the grade cache.
    A flat folder keeps the fingerprint it had when subfolders were not read."""
    digest = hashlib.sha256()
    for name, path in _model_files(location):
        size = path.stat().st_size
        digest.update(f"{name}\0{size}\0".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(65536))
            if size > 65536:
                fh.seek(max(65536, size - 65536))
                digest.update(fh.read(65536))
    return "local-" + digest.hexdigest()[:16]


def _model_files(location: Path) -> list[tuple[str, Path]]:
    """(name relative to ``location``, path) of the files a model at ``location`` consists of, in name order."""
    if location.is_file():
        return [(location.name, location)]
    files = []
    for path in location.rglob("*"):
        name = path.relative_to(location).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in name.split("/")):
            files.append((name, path))
    return sorted(files)


def _is_out_of_memory(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


_WORD_END = re.compile(r"\s+")


# Shared with the extractive QA grader, which loads its model the same way.
REVISION_OPTION = GraderOption("revision", None, "hub revision: a branch, tag or commit (default: the newest)",
                               optional(text))
DEVICE_OPTION = GraderOption("device", "auto", "auto, cpu, cuda, cuda:N or mps (default: auto, cuda when present); "
                             "--exam-device wins", str.strip)
LOCAL_FILES_ONLY_OPTION = GraderOption("local_files_only", False, "true to never contact the hub, as HF_HUB_OFFLINE=1 "
                                       "does (default: false)", boolean)


@dataclass(eq=False, repr=False)
class HFBackend:
    """A transformers model behind the :class:`~exam_harness.llm.backend.TextBackend` protocol.

    Each field after ``model_id`` is an option, declared once here: the constructor's keyword, the ``hf``
    grader's option (:data:`HF_OPTIONS`) and the check of a library caller's value (by the same converter).
    ``device``, ``batch_size`` and ``chat`` are resolved on construction (auto -> what this machine and
    model give); the tokenizer and configuration load then, the weights on first use."""

    model_id: str = DEFAULT_MODEL
    _: KW_ONLY
    revision: str | None = shared_option(REVISION_OPTION)
    device: str = shared_option(DEVICE_OPTION)
    dtype: str = option_field("auto", "auto, float32, bfloat16 or float16 (default: auto, bfloat16 on a GPU that "
                              "supports it, else float32)", choice(*DTYPES))
    num_beams: int = option_field(1, "beams of the search (default: 1, greedy); 5 decodes as the reference "
                                  "implementation does", integer(1))
    batch_size: int | None = option_field(None, "prompts per batch, halved when memory runs out (default: 16 on "
                                          "CPU, 256 on GPU); --exam-batch-size wins", optional(integer(1)))
    max_input_tokens: int | None = option_field(None, "prompt tokens at most (default: 512 for seq2seq models, the "
                                                "context length for causal LMs)", optional(integer(1)))
    local_files_only: bool = shared_option(LOCAL_FILES_ONLY_OPTION)
    quantize: str = option_field("none", "none or int8, dynamic int8 quantisation on CPU (default: none)",
                                 choice("none", "int8"))
    chat: bool | None = option_field(None, "wrap prompts in the tokenizer's chat template: true, false or auto "
                                     "(default: auto, true for causal LMs that have one)",
                                     optional(boolean, unset=("", "auto")))
    fast_path_tokens: int = option_field(FAST_PATH_TOKENS, "tokens decoded for every rating before the full-decode "
                                         f"fallback; 0 turns it off (default: {FAST_PATH_TOKENS})", integer(0))
    trust_remote_code: bool = option_field(False, "true to run model code from the hub (default: false)", boolean)

    def __post_init__(self) -> None:
        check_options(self, "hf")
        self.device = resolve_device(self.device)
        if self.quantize == "int8" and self.device != "cpu":
            raise ConfigError("quantize=int8 is a CPU option (dynamic int8 quantisation); use device=cpu")
        self.torch_dtype = resolve_dtype(self.dtype, self.device)
        self._load_kwargs: dict[str, Any] = {"revision": self.revision, "local_files_only": self.local_files_only,
                                             "trust_remote_code": self.trust_remote_code}
        gen = self._load_configuration()
        self._model: Any = None  # the weights load on first use: a session whose grades are all cached never pays
        if Path(self.model_id).is_dir():
            self.revision = local_fingerprint(Path(self.model_id))
        self.generation_config = self._greedy(gen)
        self._generation_configs: dict[tuple[int, bool], Any] = {}
        eos = self.generation_config.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos])
        # A minimum answer length would make a capped greedy decode differ from the full one.
        self._fast_ok = not (gen.min_length or gen.min_new_tokens)
        self._wrap = self._chat_wrap()
        self.batch_size = self.batch_size or DEFAULT_BATCH_SIZE["cuda" if self.device.startswith("cuda") else "cpu"]
        self._digit_tables: dict[int, list[list[int]]] = {}
        self.stats = {"prompts": 0, "fast_path": 0, "fallback": 0, "truncated": 0, "batch_halvings": 0,
                      "prompt_tokens": 0, "completion_tokens": 0}  # tokens as the tokenizer counts them

    def _load_configuration(self) -> Any:
        """Load the model's configuration and tokenizer (not its weights); return its generation configuration."""
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
            GenerationConfig,
        )

        try:
            config = AutoConfig.from_pretrained(self.model_id, **self._load_kwargs)
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, **self._load_kwargs)
            self.is_encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
            self._auto: Any = AutoModelForSeq2SeqLM if self.is_encoder_decoder else AutoModelForCausalLM
            try:
                gen = GenerationConfig.from_pretrained(self.model_id, **self._load_kwargs)
            except OSError:  # no generation_config.json: what from_pretrained would derive
                gen = GenerationConfig.from_model_config(config)
        except (OSError, ValueError) as exc:
            raise model_load_error(self.model_id, exc) from exc
        self.revision = getattr(config, "_commit_hash", None) or self.revision
        self._config = config
        tok = self.tokenizer
        if not self.is_encoder_decoder:
            tok.padding_side = "left"  # decoder-only models continue from the right end
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return gen

    def _greedy(self, gen: Any) -> Any:
        """A copy of the model's generation configuration that decodes deterministically with our beams."""
        gen = copy.deepcopy(gen)
        gen.do_sample = False
        gen.num_beams = self.num_beams
        gen.num_return_sequences = 1
        gen.temperature = gen.top_p = gen.top_k = None  # sampling knobs of chat models: unused, unwarned
        gen.max_length = None
        if gen.pad_token_id is None:
            gen.pad_token_id = self.tokenizer.pad_token_id
        if gen.eos_token_id is None:
            gen.eos_token_id = self.tokenizer.eos_token_id
        return gen

    def _chat_wrap(self) -> tuple[str, str]:
        """What the chat template puts before and after a prompt ("", "" without chat); resolves ``chat``."""
        tok = self.tokenizer
        has_template = bool(getattr(tok, "chat_template", None))
        self.chat = self.chat if self.chat is not None else (not self.is_encoder_decoder and has_template)
        if not self.chat:
            return ("", "")
        if self.is_encoder_decoder or not has_template:
            raise ConfigError(
                f"chat=true needs a causal model whose tokenizer has a chat template; {self.model_id!r} has none"
            )
        marker = "\x00PROMPT\x00"
        rendered = tok.apply_chat_template(
            [{"role": "user", "content": marker}], tokenize=False, add_generation_prompt=True
        )
        before, _, after = str(rendered).partition(marker)
        return (before, after)

    @property
    def model(self) -> Any:
        if self._model is None:
            import torch

            try:
                model = self._auto.from_pretrained(
                    self.model_id, config=self._config, dtype=self.torch_dtype, **self._load_kwargs
                )
            except (OSError, ValueError) as exc:
                raise model_load_error(self.model_id, exc) from exc
            model.to(self.device).eval()
            if self.quantize == "int8":
                with warnings.catch_warnings():
                    # torch.ao.quantization and quantized tensors are deprecated in favour of torchao, but
                    # still ship and work; the option is reported separately as experimental.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    warnings.filterwarnings("ignore", message=r".*quantiz", category=UserWarning)
                    from torch.ao.quantization import quantize_dynamic

                    model = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)  # type: ignore[no-untyped-call]
            self._model = model
        return self._model

    # -- protocol -------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        return {
            "backend": "transformers",
            "architecture": "seq2seq" if self.is_encoder_decoder else "causal",
            "decoding": "greedy" if self.num_beams == 1 else "beam",
            "num_beams": self.num_beams,
            "dtype": str(self.torch_dtype).removeprefix("torch."),
            "quantize": None if self.quantize == "none" else self.quantize,
            "max_input_tokens": self.input_limit(0),
            "chat": self.chat,
        }

    def count_tokens(self, text: str) -> int:
        return len(self._encode([self._wrap[0] + text + self._wrap[1]])[0])

    def close(self) -> None:
        import torch

        self._model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def input_limit(self, max_new_tokens: int) -> int:
        """Most prompt tokens: 512 for FLAN-T5; a causal LM's context minus the answer's tokens."""
        if self.max_input_tokens:
            return self.max_input_tokens
        tok_limit = getattr(self.tokenizer, "model_max_length", None)
        tok_limit = tok_limit if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000 else None
        if self.is_encoder_decoder:
            return tok_limit or SEQ2SEQ_DEFAULT_LIMIT
        positions = getattr(self._config, "max_position_embeddings", None) or getattr(self._config, "n_positions", None)
        limits = [x for x in (tok_limit, positions) if x]
        if not limits:
            return 2048 - max_new_tokens
        return min(limits) - max_new_tokens

    def generate(
        self, prompts: Sequence[PromptParts], *, max_new_tokens: int, rating_scale: int | None = None
    ) -> list[GenerationResult]:
        results: list[GenerationResult | None] = [None] * len(prompts)
        prepared = self._prepare(prompts, self.input_limit(max_new_tokens))
        todo: list[int] = []
        for i, item in enumerate(prepared):
            if isinstance(item, GradeFailure):
                results[i] = item
            else:
                todo.append(i)
        self.stats["prompts"] += len(todo)
        probabilities: dict[int, Probabilities] = {}
        fast = (
            rating_scale is not None
            and self.num_beams == 1
            and self._fast_ok
            and 0 < self.fast_path_tokens < max_new_tokens
        )
        if fast:
            first = self._run(todo, prepared, self.fast_path_tokens, rating_scale=rating_scale, results=results)
            rest: list[int] = []
            for i, (tokens, probs) in first.items():
                if probs is not None:
                    probabilities[i] = probs
                if self._finished(tokens):
                    results[i] = self._generation(tokens, prepared[i], probabilities.get(i), fast_path=True)
                else:
                    rest.append(i)
            self.stats["fast_path"] += len(first) - len(rest)
            self.stats["fallback"] += len(rest)
            todo = rest
        full = self._run(todo, prepared, max_new_tokens, rating_scale=None if fast else rating_scale, results=results)
        for i, (tokens, probs) in full.items():
            if probs is not None:
                probabilities[i] = probs
            fast_flag = False if fast else None
            results[i] = self._generation(tokens, prepared[i], probabilities.get(i), fast_path=fast_flag)
        return [r if r is not None else GradeFailure("not generated") for r in results]

    # -- prompts and truncation -----------------------------------------------------------

    def _encode(self, texts: list[str]) -> list[list[int]]:
        # With a chat template the rendered text carries its own special tokens.
        return list(self.tokenizer(texts, add_special_tokens=not self.chat)["input_ids"])

    def _prepare(self, prompts: Sequence[PromptParts], limit: int) -> list[list[int] | GradeFailure]:
        wrapped = [PromptParts(self._wrap[0] + p.before, p.context, p.after + self._wrap[1]) for p in prompts]
        encoded: list[list[int] | GradeFailure] = list(self._encode([w.text for w in wrapped]))
        for i, ids in enumerate(encoded):
            if isinstance(ids, list) and len(ids) > limit:
                encoded[i] = self._truncate(wrapped[i], limit)
                self.stats["truncated"] += 1
        return encoded

    def _truncate(self, parts: PromptParts, limit: int) -> list[int] | GradeFailure:
        """Token ids of the prompt with its context cut (at a word end where possible) to fit ``limit``."""
        fixed = self._encode([parts.before + parts.after])[0]
        if len(fixed) > limit:
            return GradeFailure(
                f"the prompt without its passage has {len(fixed)} tokens, more than the model's input limit of "
                f"{limit}; shorten the question or raise max_input_tokens"
            )
        context = parts.context
        best = fixed

        def largest_fitting(cuts: Sequence[int]) -> int:
            """Binary search for the last cut that fits (token counts grow with the cut); -1 if none."""
            nonlocal best
            lo, hi = -1, len(cuts)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                ids = self._encode([parts.before + context[: cuts[mid]] + parts.after])[0]
                if len(ids) <= limit:
                    lo, best = mid, ids
                else:
                    hi = mid
            return lo

        # Cut at a word end; only when not even the first word fits, cut inside it.
        word_ends = [m.start() for m in _WORD_END.finditer(context) if m.start() > 0]
        if largest_fitting(word_ends) < 0:
            first_end = word_ends[0] if word_ends else len(context)
            largest_fitting(range(1, first_end))
        return best

    # -- decoding -------------------------------------------------------------------------

    def _run(
        self,
        indices: list[int],
        prepared: list[list[int] | GradeFailure],
        max_new_tokens: int,
        *,
        rating_scale: int | None,
        results: list[GenerationResult | None],
    ) -> dict[int, tuple[list[int], Probabilities | None]]:
        """Decode ``indices`` longest first in batches, halving the batch size when memory runs out.
        Returns the new tokens of each and, with ``rating_scale``, step one's grade probabilities."""
        out: dict[int, tuple[list[int], Probabilities | None]] = {}
        order = sorted(indices, key=lambda i: len(prepared[i]), reverse=True)  # type: ignore[arg-type]
        pos = 0
        while pos < len(order):
            size = self.batch_size or 1  # set on construction
            chunk = order[pos : pos + size]
            try:
                decoded = self._generate_batch([prepared[i] for i in chunk], max_new_tokens, rating_scale)  # type: ignore[misc]
            except RuntimeError as exc:
                if not _is_out_of_memory(exc):
                    raise
                self._free_memory()
                if size == 1:
                    for i in chunk:
                        tokens = len(prepared[i])  # type: ignore[arg-type]
                        results[i] = GradeFailure(f"out of memory even at batch size 1 ({tokens} prompt tokens)")
                    pos += len(chunk)
                else:
                    self.batch_size = max(1, size // 2)
                    self.stats["batch_halvings"] += 1
                continue
            out.update(zip(chunk, decoded))
            pos += len(chunk)
        return out

    def _free_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _generate_batch(
        self, batch: list[list[int]], max_new_tokens: int, rating_scale: int | None
    ) -> list[tuple[list[int], Probabilities | None]]:
        import torch

        want_logits = rating_scale is not None
        width = max(len(ids) for ids in batch)
        input_ids = torch.full((len(batch), width), int(self.tokenizer.pad_token_id), dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        left = self.tokenizer.padding_side == "left"
        for row, ids in enumerate(batch):
            span = slice(width - len(ids), width) if left else slice(0, len(ids))
            input_ids[row, span] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, span] = 1
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                generation_config=self._generation_config(max_new_tokens, want_logits),
            )
        # Seq2seq outputs start with the decoder start token; causal outputs with the (padded) prompt.
        skip = 1 if self.is_encoder_decoder else width
        sequences = out.sequences[:, skip:].tolist()
        if rating_scale is None:
            return [(seq, None) for seq in sequences]
        # Step one's raw logits; with beams, every beam of a prompt has the same first step.
        first = out.logits[0].view(len(batch), -1, out.logits[0].shape[-1])[:, 0]
        return list(zip(sequences, self._grade_probabilities(first, rating_scale)))

    def _generation_config(self, max_new_tokens: int, want_logits: bool) -> Any:
        key = (max_new_tokens, want_logits)
        if key not in self._generation_configs:
            gen = copy.deepcopy(self.generation_config)
            gen.max_new_tokens = max_new_tokens
            gen.return_dict_in_generate = True
            gen.output_logits = want_logits
            self._generation_configs[key] = gen
        return self._generation_configs[key]

    def _finished(self, tokens: list[int]) -> bool:
        return any(t in self._eos_ids for t in tokens)

    def _generation(
        self,
        tokens: list[int],
        prompt: list[int] | GradeFailure,
        probabilities: Probabilities | None,
        *,
        fast_path: bool | None,
    ) -> DetailedGeneration:
        end = next((k for k, t in enumerate(tokens) if t in self._eos_ids), len(tokens))
        # One flat list of ids decodes to one string.
        decoded = self.tokenizer.decode(tokens[:end], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        text = cast(str, decoded)
        details: dict[str, Any] = {}
        if fast_path is not None:
            details["fast_path"] = fast_path
        grade_probs = None
        if probabilities is not None:
            grade_probs, mass = probabilities
            details["digit_mass"] = round(mass, 6)
        n_prompt = len(prompt) if isinstance(prompt, list) else None
        self.stats["prompt_tokens"] += n_prompt or 0
        self.stats["completion_tokens"] += end
        return DetailedGeneration(text, grade_probs, n_prompt, completion_tokens=end, details=details)

    def _digit_table(self, scale: int) -> list[list[int]]:
        """Per grade 0..scale, the token ids that read as that single digit (e.g. '5', '▁5', '5.')."""
        if scale not in self._digit_tables:
            table: list[list[int]] = [[] for _ in range(scale + 1)]
            tok = self.tokenizer
            pieces = tok.convert_ids_to_tokens(list(range(len(tok))))
            for token_id, piece in enumerate(pieces):
                if piece and any(ch.isdigit() for ch in piece):
                    decoded = tok.decode([token_id], skip_special_tokens=True, clean_up_tokenization_spaces=False)
                    text = cast(str, decoded)
                    grade = single_digit_grade(text, scale)
                    if grade is not None:
                        table[grade].append(token_id)
            self._digit_tables[scale] = table
        return self._digit_tables[scale]

    def _grade_probabilities(self, logits: Any, scale: int) -> list[Probabilities]:
        """Per row of step-one logits: each grade's probability (summed over the tokens that read as
        that digit, renormalised over the digits) and the digits' total probability mass."""
        import torch

        table = self._digit_table(scale)
        ids = torch.tensor([t for ids in table for t in ids], dtype=torch.long, device=logits.device)
        owner = torch.tensor([g for g, ids in enumerate(table) for _ in ids], dtype=torch.long, device=logits.device)
        probs = torch.softmax(logits.float(), dim=-1)
        masses = torch.zeros(probs.shape[0], scale + 1, device=logits.device).index_add_(1, owner, probs[:, ids])
        total = masses.sum(dim=1, keepdim=True)
        normed = torch.where(total > 0, masses / total.clamp_min(1e-30), torch.zeros_like(masses))
        return [(tuple(row), mass) for row, mass in zip(normed.double().tolist(), total.squeeze(1).tolist())]


# --------------------------------------------------------------------------------------------
# Options

MODEL_OPTION = GraderOption("model", DEFAULT_MODEL, f"hub name or local folder (default: {DEFAULT_MODEL}); "
                            "--exam-model wins", optional(text))
HF_OPTIONS: tuple[GraderOption, ...] = (MODEL_OPTION, *options_of(HFBackend))


def backend_from_options(
    model: str | None, options: Mapping[str, Any], *, device: str | None = None, batch_size: int | None = None
) -> HFBackend:
    """An :class:`HFBackend` from options named as in :data:`HF_OPTIONS` (strings are converted, unknown
    names refused, defaults filled in). ``model``, ``device`` and ``batch_size``, the grader's
    ``--exam-model``, ``--exam-device`` and ``--exam-batch-size``, win over the same-named options."""
    values = read_grader_options("hf", HF_OPTIONS, options)
    name = values.pop("model")
    return HFBackend(model or name or DEFAULT_MODEL, **{**values, "device": device or values["device"],
                                                         "batch_size": batch_size or values["batch_size"]})
