"""Question self-rating throughput: this harness vs the reference implementation's way of grading.

    .venv/bin/python benchmarks/grading_throughput.py --pairs 300
    .venv/bin/python benchmarks/grading_throughput.py --model ./models/flan-t5-large --pairs 2000
    .venv/bin/python benchmarks/grading_throughput.py --shape large --device cuda --pairs 20000

Both ways grade the same (passage, question) pairs with the same model and report prompts/s:

(a) this harness: LLMGrader (question self-rating prompt) over HFBackend: all pairs batched, sorted
    by length, greedy, fast self-rating path (two decoding steps, full decode only for answers that
    are not one token and end-of-sequence), method's parse;
(b) the reference way: one prompt at a time (batch size 1), beam search with 5 beams,
    max_length=512, then the method's parse. The reference implementation called transformers'
    ``text2text-generation`` pipeline; transformers 5 removed that pipeline, so when it is missing
    we reproduce what it did per prompt: tokenise, ``generate(num_beams=5, max_length=512)``,
    decode with special tokens skipped. Prompts longer than the model's limit get the harness's
    truncated token ids (the reference implementation also truncated the context itself).

Pairs: real DL19 passages and questions when ../shared/data/dl19 is present (the graded paragraph
file and the dl19-genq-questions-v1 bank: every judged passage x every question of its query,
shuffled with a fixed seed); otherwise synthetic passages.

Model: ``--model`` takes a real checkpoint (hub name or local folder). Without it, a T5 with
FLAN-T5-small's shape (``--shape large``: FLAN-T5-large's) with random weights is built, with a
byte-level BPE tokenizer of 32,000 tokens trained on the passages, and saved to a temporary folder.
A random model would decode random tokens, which would make the comparison meaningless (FLAN-T5
answers one digit and stops for 99.5% of the published DL19 pairs). So its weights are biased the
way tests/tiny_models.py documents: two reserved hidden dimensions act as a two-state machine read
by the output layer (after the prompt: a digit 0..5 is likely; after a digit: end-of-sequence is
likely), the choice among digits is made to depend on the input, and one competitor token ("no")
sometimes wins the first step so that a small share of pairs needs the fast path's fallback.

The two ways run interleaved, chunk by chunk (``--chunk``, 50 pairs), so that both see the same
load on a shared machine; the harness batches within a chunk. Prints both rates, the fallback share, the agreement of the two ways' grades, optional int8
figures (``--int8``, reported separately), and ends with ``speedup: <ratio>x agreement: <pct>%``.
Timings on a shared machine vary with its load; run it on an idle one for figures you publish.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.core.grade_parsing import parse_self_rating  # noqa: E402
from exam_harness.core.models import Grade, Passage, Query, TestPoint, test_point_id  # noqa: E402
from exam_harness.graders.base import GradingRequest  # noqa: E402
from exam_harness.graders.llm import LLMGrader  # noqa: E402
from exam_harness.llm import prompts  # noqa: E402
from exam_harness.llm.backend import PromptParts  # noqa: E402
from exam_harness.llm.hf import HFBackend  # noqa: E402

DL19 = ROOT / ".." / "shared" / "data" / "dl19"


@dataclass(frozen=True)
class Pair:
    query: Query
    question: str
    passage: str


def load_pairs(n: int, seed: int) -> tuple[list[Pair], str, list[str]]:
    """``n`` shuffled pairs, where they come from, and every text of the source (tokenizer training)."""
    graded = DL19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
    bank = DL19 / "dl19-genq-questions-v1.jsonl.gz"
    if graded.is_file() and bank.is_file():
        questions: dict[str, tuple[str, list[str]]] = {}
        with gzip.open(bank, "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                questions[row["query_id"]] = (row["query_text"], [q["question_text"] for q in row["questions"]])
        pairs = []
        with gzip.open(graded, "rt", encoding="utf-8") as fh:
            for line in fh:
                query_id, paragraphs = json.loads(line)
                if query_id not in questions:
                    continue
                text, qs = questions[query_id]
                query = Query(id=query_id, text=text)
                pairs.extend(Pair(query, q, p["text"]) for p in paragraphs for q in qs)
        corpus = sorted({p.passage for p in pairs} | {q for _, qs in questions.values() for q in qs})
        random.Random(seed).shuffle(pairs)
        return pairs[:n], f"DL19 ({len(pairs)} pairs available)", corpus
    from tests.tiny_models import CORPUS_SENTENCES

    rng = random.Random(seed)
    words = " ".join(CORPUS_SENTENCES).split()
    qs = [s for s in CORPUS_SENTENCES if s.endswith("?")]
    query = Query(id="q", text="synthetic")
    pairs = [Pair(query, rng.choice(qs), " ".join(rng.choice(words) for _ in range(rng.randint(40, 90)))) for _ in range(n)]
    return pairs, "synthetic (../shared/data/dl19 is absent)", [p.passage for p in pairs] + qs


def parts_of(pair: Pair) -> PromptParts:
    before, after = prompts.QUESTION_SELF_RATING.split(question=pair.question)
    return PromptParts(before, pair.passage, after)


def build_synthetic_model(shape_name: str, pairs: list[Pair], corpus: list[str], folder: Path) -> Path:
    from tests.tiny_models import (
        FLAN_T5_LARGE,
        FLAN_T5_SMALL,
        DigitBias,
        build_t5,
        save_model,
        spread_digits,
        train_tokenizer,
    )

    tokenizer = train_tokenizer([*corpus, prompts.QUESTION_SELF_RATING.template], vocab_size=32000)
    # "no" (as the tokenizer spells it at the start of an answer) competes with the digits at step one
    # and sometimes comes close: greedy then answers "no" + digit for a few pairs (the fast path's
    # fallback), and beam search, which normalises scores by length, prefers that longer answer a
    # little more often. FLAN-T5 answers something other than a digit for 0.5% of the DL19 pairs.
    singles = [t for t in ("no", " no", "No", " No") if len(tokenizer(t, add_special_tokens=False)["input_ids"]) == 1]
    competitors = {singles[0]: 0.8} if singles else {}
    bias = DigitBias(strength=20.0, first_competitors=competitors)
    shape = FLAN_T5_LARGE if shape_name == "large" else FLAN_T5_SMALL
    model = build_t5(tokenizer, shape=shape, vocab_size=32128, bias=bias, seed=0)
    spread_digits(model, tokenizer, [parts_of(p).text for p in pairs[:32]], bias)
    return save_model(model, tokenizer, folder)


class Harness:
    """(a) This harness: LLMGrader (question self-rating) over HFBackend, whole chunks at once."""

    def __init__(self, backend: HFBackend) -> None:
        self.backend = backend
        self.grader = LLMGrader(backend, prompt="question-rating", name="hf")

    def grade(self, pairs: list[Pair]) -> list[int]:
        requests = [
            GradingRequest(
                query=p.query,
                test_point=TestPoint(id=test_point_id(p.query.id, p.question), query_id=p.query.id, kind="question", text=p.question),
                passage=Passage(id=f"p{i}", text=p.passage),
            )
            for i, p in enumerate(pairs)
        ]
        return [r.grade if isinstance(r, Grade) else -1 for r in self.grader.grade_batch(requests)]


class Reference:
    """(b) The reference way: one prompt at a time, 5 beams, max_length=512, then the method's parse."""

    def __init__(self, backend: HFBackend) -> None:
        self.model, self.tok, self.device = backend.model, backend.tokenizer, backend.device
        self.backend = backend
        self.limit = backend.input_limit(0)
        try:
            from transformers import pipeline

            self.pipe = pipeline("text2text-generation", model=self.model, tokenizer=self.tok, device=self.device)
            self.how = "transformers text2text-generation pipeline"
        except (KeyError, ValueError, ImportError):
            self.pipe = None
            self.how = "text2text-generation pipeline missing in this transformers; reproduced per prompt (tokenise, generate, decode)"

    def grade_one(self, pair: Pair) -> int:
        import torch

        text = parts_of(pair).text
        ids = self.tok(text)["input_ids"]
        if len(ids) > self.limit:  # the reference implementation truncated the context itself
            [cut] = self.backend._prepare([parts_of(pair)], self.limit)
            ids = cut if isinstance(cut, list) else ids
        elif self.pipe is not None:
            return parse_self_rating(self.pipe(text, num_beams=5, max_length=512, batch_size=1)[0]["generated_text"])
        with torch.inference_mode():
            seq = self.model.generate(input_ids=torch.tensor([ids], device=self.device), num_beams=5, max_length=512, do_sample=False)
        return parse_self_rating(self.tok.decode(seq[0], skip_special_tokens=True))

    def grade(self, pairs: list[Pair]) -> list[int]:
        return [self.grade_one(p) for p in pairs]


def timed(fn: Callable[[list[Pair]], list[int]], pairs: list[Pair], chunk: int, clock: list[float]) -> list[int]:
    """Grade ``pairs`` chunk by chunk, adding each chunk's seconds to ``clock`` (one slot per chunk)."""
    out: list[int] = []
    for lo in range(0, len(pairs), chunk):
        start = time.perf_counter()
        out.extend(fn(pairs[lo : lo + chunk]))
        clock.append(time.perf_counter() - start)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000, help="number of (passage, question) pairs (default 2000)")
    parser.add_argument("--model", help="a real checkpoint: hub name or local folder (default: synthetic FLAN-T5-shaped model)")
    parser.add_argument("--shape", choices=["small", "large"], default="small", help="shape of the synthetic model (default small)")
    parser.add_argument("--device", default="auto", help="auto (default), cpu, cuda")
    parser.add_argument("--dtype", default="auto", help="auto (default: bf16 on GPU, fp32 on CPU), float32, bfloat16")
    parser.add_argument("--batch-size", type=int, default=None, help="harness batch size (default 16 on CPU, 256 on GPU)")
    parser.add_argument("--int8", action="store_true", help="also time the int8-quantised CPU path (reported separately)")
    parser.add_argument("--skip-reference", action="store_true", help="time the harness only")
    parser.add_argument(
        "--chunk", type=int, default=50, help="pairs per interleaved chunk (default 50; 0 = all pairs in one go)"
    )
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    import torch

    pairs, source, corpus = load_pairs(args.pairs, args.seed)
    tmp = tempfile.TemporaryDirectory(prefix="exam-bench-")
    if args.model:
        model_name, model_desc = args.model, args.model
    else:
        t0 = time.perf_counter()
        model_name = str(build_synthetic_model(args.shape, pairs, corpus, Path(tmp.name) / f"flan-t5-{args.shape}-shaped"))
        model_desc = f"synthetic FLAN-T5-{args.shape}-shaped T5, random weights biased to answer a digit then stop (built in {time.perf_counter() - t0:.0f} s)"
    backend = HFBackend(model_name, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    lengths = [len(ids) for ids in backend._prepare([parts_of(p) for p in pairs], backend.input_limit(0)) if isinstance(ids, list)]
    print(f"pairs:    {len(pairs)} from {source}; mean prompt {sum(lengths) / max(len(lengths), 1):.0f} tokens")
    print(f"model:    {model_desc}")
    print(f"machine:  {platform.processor() or platform.machine()}, torch threads {torch.get_num_threads()}, device {backend.device}, dtype {backend.settings()['dtype']}")

    harness = Harness(backend)
    harness.grade(pairs[:4])  # warm-up, not timed
    reference = None if args.skip_reference else Reference(backend)
    if reference is not None:
        reference.grade(pairs[:2])
    backend.stats.update(fast_path=0, fallback=0)
    # Interleave the two ways chunk by chunk, so that both see the same load on a shared machine.
    chunk = args.chunk or len(pairs)
    grades: list[int] = []
    ref_grades: list[int] = []
    h_clock: list[float] = []
    r_clock: list[float] = []
    for lo in range(0, len(pairs), chunk):
        part = pairs[lo : lo + chunk]
        grades += timed(harness.grade, part, chunk, h_clock)
        if reference is not None:
            ref_grades += timed(reference.grade, part, chunk, r_clock)
    seconds = sum(h_clock)
    stats = backend.stats
    rate = len(pairs) / seconds
    fallback = stats["fallback"] / max(stats["fast_path"] + stats["fallback"], 1)
    print(f"harness:  {rate:8.2f} prompts/s  ({seconds:.1f} s; batch size {backend.batch_size}; fallback share {100 * fallback:.2f}%)")
    counts = {g: grades.count(g) for g in sorted(set(grades))}
    print(f"          grade counts {counts}")

    q_grades: list[int] = []
    q_seconds = 0.0
    if args.int8 and backend.device == "cpu":
        quantised = Harness(HFBackend(model_name, device="cpu", quantize="int8", batch_size=args.batch_size))
        quantised.grade(pairs[:4])
        q_clock: list[float] = []
        q_grades = timed(quantised.grade, pairs, chunk, q_clock)
        q_seconds = sum(q_clock)
        q_agree = sum(a == b for a, b in zip(q_grades, grades)) / len(pairs)
        print(f"int8:     {len(pairs) / q_seconds:8.2f} prompts/s  ({q_seconds:.1f} s; agreement with the fp32 harness {100 * q_agree:.1f}%)")

    if reference is None:
        return 0
    ref_seconds = sum(r_clock)
    ref_rate = len(pairs) / ref_seconds
    agreement = sum(a == b for a, b in zip(grades, ref_grades)) / len(pairs)
    print(f"reference:{ref_rate:8.2f} prompts/s  ({ref_seconds:.1f} s; batch size 1, 5 beams, max_length 512; {reference.how})")
    if len(h_clock) > 1:
        ratios = sorted(r / h for r, h in zip(r_clock, h_clock))
        print(f"          per-chunk speedups {ratios[0]:.2f}x .. {ratios[-1]:.2f}x over {len(ratios)} chunks of {chunk} pairs")
    if q_grades:
        q_ref = sum(a == b for a, b in zip(q_grades, ref_grades)) / len(pairs)
        print(f"int8:     speedup {len(pairs) / q_seconds / ref_rate:.2f}x, agreement with the reference {100 * q_ref:.1f}%")
    print(f"speedup: {rate / ref_rate:.2f}x agreement: {100 * agreement:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
