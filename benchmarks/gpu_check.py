"""The transformers grading path measured on one accelerator, with nothing downloaded.

    benchmarks/gpu_check.sh                         # on a GPU machine: FLAN-T5-large and monoT5-base shapes
    benchmarks/gpu_check.sh --shapes tiny --device cpu --dtype float32 --pairs 16 --batch-sizes 4,8 \\
        --peak-tflops 0.1 --synthetic               # what tests/project/test_gpu_check.py runs

For each model shape (``--shapes``: ``flan-t5-large`` with FLAN-T5-large's dimensions, ``monot5-base``
with monoT5-base's (T5-base's) dimensions, ``tiny`` for a test) a T5 with random weights is built the
way benchmarks/grading_throughput.py builds its synthetic models (tests/tiny_models.py: biased to answer
one digit and stop, so decoding takes the path FLAN-T5 takes on 99.5% of DL19 pairs), with a byte-level
BPE tokenizer trained on the prompts. Note: the builder makes every shape FLAN-T5 style (gated-GELU
feed-forward); monoT5-base is T5 1.0 with a ReLU feed-forward, two thirds of this one's compute.

Prompts are the question self-rating prompt over DL19 pairs when ../shared/data/dl19 is present, else
synthetic passages (as grading_throughput.py). For each batch size of ``--batch-sizes`` the harness's
grader (LLMGrader over HFBackend, ``--dtype``, default bfloat16) grades ``--pairs`` pairs in one call
(sorted by length, batched) after a warm-up, and the script prints

* prompts/s,
* peak accelerator memory (``torch.cuda.max_memory_allocated``; ``n/a`` on CPU),
* the padding share: padded positions / all positions of the encoder's batches,
* the share of the compute limit: prompts/s against ``peak FLOP/s / FLOPs per prompt``, where a prompt
  costs 2 x the encoder's weights (embeddings excluded) x its tokens, plus the encoder's attention
  (4 x tokens^2 x inner width a layer), plus two decoder steps (2 x the decoder's weights and the output
  layer, and the cross-attention over the prompt). The peak is bf16 dense from the device's name (H100
  and H200: 989 TFLOP/s, the SXM cards'; A100: 312; L4: 121) or ``--peak-tflops``.

The last line is ``gpu: <prompts/s> prompts/s <shape> <dtype> (<pct>% of compute limit)`` for the first
shape's best batch size. ``--budget`` seconds (default 420) bounds the sweep: batch sizes left when it
is spent are skipped and said.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SHAPES: dict[str, dict[str, Any]] = {
    "flan-t5-large": {"d_model": 1024, "d_ff": 2816, "d_kv": 64, "num_layers": 24, "num_heads": 16},
    "monot5-base": {"d_model": 768, "d_ff": 3072, "d_kv": 64, "num_layers": 12, "num_heads": 12},
    "tiny": {"d_model": 32, "d_ff": 64, "d_kv": 16, "num_layers": 2, "num_heads": 2},
}
NAMES = {"flan-t5-large": "FLAN-T5-large", "monot5-base": "monoT5-base", "tiny": "tiny-T5"}
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L4": 121.0}


def build(shape: str, texts: list[str], folder: Path) -> Path:
    from exam_harness.llm import prompts
    from tests.tiny_models import DigitBias, build_t5, save_model, spread_digits, train_tokenizer

    tokenizer = train_tokenizer([*texts, prompts.QUESTION_SELF_RATING.template], vocab_size=32000 if shape != "tiny"
                                else 600)
    bias = DigitBias(strength=20.0)
    model = build_t5(tokenizer, shape=SHAPES[shape], vocab_size=32128 if shape != "tiny" else None, bias=bias, seed=0)
    spread_digits(model, tokenizer, texts[:32], bias)
    return save_model(model, tokenizer, folder)


def flops_per_prompt(model: Any, tokens: float) -> float:
    """The FLOPs of encoding ``tokens`` and decoding two steps (the module docstring's count)."""
    config = model.config
    inner = config.num_heads * config.d_kv
    encoder = sum(p.numel() for n, p in model.encoder.named_parameters() if "embed" not in n)
    decoder = sum(p.numel() for n, p in model.decoder.named_parameters() if "embed" not in n)
    head = config.d_model * config.vocab_size
    attention = 4 * tokens * tokens * inner * config.num_layers
    steps = 2
    cross = 4 * tokens * inner * config.num_decoder_layers * steps
    return 2 * encoder * tokens + attention + steps * 2 * (decoder + head) + cross


def padding_share(lengths: list[int], batch_size: int) -> float:
    """Padded positions / all positions when prompts are batched longest first (as HFBackend does)."""
    order = sorted(lengths, reverse=True)
    padded = sum(max(order[i:i + batch_size]) * len(order[i:i + batch_size]) for i in range(0, len(order), batch_size))
    return 1 - sum(order) / padded if padded else 0.0


def peak_flops(device: str, given: float | None) -> tuple[float | None, str]:
    if given is not None:
        return given * 1e12, f"{given:g} TFLOP/s (given)"
    if device.startswith("cuda"):
        import torch

        name = torch.cuda.get_device_name()
        for key, tflops in PEAK_TFLOPS.items():
            if key in name:
                return tflops * 1e12, f"{tflops:g} TFLOP/s bf16 dense ({name})"
        return None, f"unknown for {name}: give --peak-tflops"
    return None, "unknown on CPU: give --peak-tflops"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="flan-t5-large,monot5-base", help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--device", default="auto", help="auto (default), cuda, cpu")
    parser.add_argument("--dtype", default="bfloat16", help="bfloat16 (default), float16, float32")
    parser.add_argument("--batch-sizes", default="64,128,256,512", help="the sweep (default 64,128,256,512)")
    parser.add_argument("--pairs", type=int, default=4096, help="pairs graded per batch size (default 4096)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak (default: from its name)")
    parser.add_argument("--synthetic", action="store_true", help="synthetic passages even when DL19 is present")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds the whole sweep may take (default 420)")
    args = parser.parse_args(argv)

    import grading_throughput
    import torch
    from grading_throughput import Harness, load_pairs, parts_of

    from exam_harness.llm.hf import HFBackend

    started = time.monotonic()
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape {unknown[0]!r}; choose among {', '.join(SHAPES)}")
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.synthetic:
        grading_throughput.DL19 = Path("/nonexistent")
    pairs, source, corpus = load_pairs(args.pairs, 13)
    texts = [parts_of(p).text for p in pairs]
    first_line: str | None = None
    for shape in shapes:
        tmp = tempfile.TemporaryDirectory(prefix="exam-gpu-check-")
        t0 = time.monotonic()
        folder = build(shape, [*corpus[:2000], *texts[:200]], Path(tmp.name) / shape)
        backend = HFBackend(str(folder), device=args.device, dtype=args.dtype, batch_size=sizes[0])
        harness = Harness(backend)
        harness.grade(pairs[:8])  # warm-up (kernels, allocator), not timed
        prepared = backend._prepare([parts_of(p) for p in pairs], backend.input_limit(0))
        lengths = [len(ids) for ids in prepared if isinstance(ids, list)]
        mean_tokens = sum(lengths) / max(len(lengths), 1)
        peak, peak_said = peak_flops(backend.device, args.peak_tflops)
        per_prompt = flops_per_prompt(backend.model, mean_tokens)
        limit = peak / per_prompt if peak else None
        print(f"{NAMES[shape]}: built in {time.monotonic() - t0:.0f} s; {len(pairs)} pairs from {source}, mean prompt "
              f"{mean_tokens:.0f} tokens; device {backend.device} ({platform.machine()}), dtype "
              f"{backend.settings()['dtype']}; compute limit "
              + (f"{limit:,.0f} prompts/s ({per_prompt / 1e9:.1f} GFLOP a prompt at {peak_said})" if limit else
                 peak_said))
        best: tuple[float, int] | None = None
        for size in sizes:
            if time.monotonic() - started > args.budget:
                print(f"  batch {size:4d}: skipped (the --budget of {args.budget:g} s is spent)")
                continue
            backend.batch_size = size
            if backend.device.startswith("cuda"):
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t1 = time.perf_counter()
            grades = harness.grade(pairs)
            if backend.device.startswith("cuda"):
                torch.cuda.synchronize()
            rate = len(pairs) / (time.perf_counter() - t1)
            memory = f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if backend.device.startswith("cuda") \
                else "n/a"
            share = f"{100 * rate / limit:.1f}%" if limit else "n/a"
            halved = f" (halved to {backend.batch_size} by out-of-memory)" if backend.batch_size != size else ""
            failed = sum(g < 0 for g in grades)
            print(f"  batch {size:4d}{halved}: {rate:9.1f} prompts/s, peak memory {memory}, padding "
                  f"{100 * padding_share(lengths, backend.batch_size):.1f}%, {share} of compute limit"
                  + (f", {failed} pairs failed" if failed else ""))
            if best is None or rate > best[0]:
                best = (rate, size)
        backend.close()
        del harness, backend
        if backend_is_cuda(args.device):
            torch.cuda.empty_cache()
        tmp.cleanup()
        if first_line is None and best is not None:
            pct = f"{100 * best[0] / limit:.1f}" if limit else "n/a"
            first_line = f"gpu: {best[0]:.1f} prompts/s {NAMES[shape]} {args.dtype.replace('bfloat16', 'bf16')} " \
                         f"({pct}% of compute limit)"
    print(f"total {time.monotonic() - started:.0f} s")
    if first_line is None:
        print("gpu: nothing measured (the --budget was spent)")
        return 1
    print(first_line)
    return 0


def backend_is_cuda(device: str) -> bool:
    import torch

    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


if __name__ == "__main__":
    raise SystemExit(main())
