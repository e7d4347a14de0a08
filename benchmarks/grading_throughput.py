"""Question self-rating throughput: this harness vs the reference implementation's way of grading, and the
OpenAI-compatible grader's own CPU per grade beside an openai-SDK loop and a raw asyncio client (``--openai``).

    .venv/bin/python benchmarks/grading_throughput.py --pairs 300
    .venv/bin/python benchmarks/grading_throughput.py --openai              # about a minute
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

``--openai``: the ``openai`` grader (LLMGrader, question self-rating, over OpenAIBackend: prompts, pacing,
retries, token counts, the method's parse; chunks of 256 pairs as the grading pass sends them) against a
local OpenAI-compatible server that answers at once (an asyncio HTTP/1.1 keep-alive server in a child
process, so its CPU is not this process's), beside (b) a plain openai-SDK loop (``AsyncOpenAI``, the same
requests, a semaphore for the concurrency) and (c) a raw asyncio client (one hand-written keep-alive
connection per slot, ``json.loads`` and the method's parse of each answer: the floor of a Python client).
Each of ``--concurrency`` (8 32 128) runs the three in turn, ``--repeat`` times alternating; the figure is
this process's CPU per grade (``time.process_time``: user + system), its inverse (grades/s per core) and
grades/s of wall clock, medians over the repetitions. Ends with ``openai grader: <ms> ms CPU per grade
(<n> grades/s per core) at concurrency <c> ...``.
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


# -- --openai: the OpenAI-compatible grader's own CPU per grade -------------------------------------------
ANSWER = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": "3"}, "finish_reason": "stop",
                                  "logprobs": None}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}}).encode()


def serve(port: int) -> None:
    """An OpenAI-compatible server that answers every POST at once with grade 3 (HTTP/1.1 keep-alive)."""
    import asyncio

    response = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(ANSWER), ANSWER)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                writer.write(response)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        print("ready", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def openai_clients(base_url: str, pairs: list[Pair]) -> dict[str, Callable[[int], list[int]]]:
    """The three clients, each grading every pair at a concurrency and returning the grades (-1: failed)."""
    import asyncio

    import openai

    from exam_harness.grading.passes import DEFAULT_CHUNK_SIZE
    from exam_harness.llm.openai import OpenAIBackend

    def requests_of(chunk: list[Pair]) -> list[GradingRequest]:
        return [GradingRequest(query=p.query, test_point=TestPoint(id=test_point_id(p.query.id, p.question),
                                                                    query_id=p.query.id, kind="question",
                                                                    text=p.question),
                               passage=Passage(id=f"p{i}", text=p.passage)) for i, p in enumerate(chunk)]

    def harness(concurrency: int) -> list[int]:
        backend = OpenAIBackend("m", base_url=base_url, api_key="k", concurrency=concurrency)
        grader = LLMGrader(backend, prompt="question-rating", name="openai")
        out: list[int] = []
        for lo in range(0, len(pairs), DEFAULT_CHUNK_SIZE):
            results = grader.grade_batch(requests_of(pairs[lo:lo + DEFAULT_CHUNK_SIZE]))
            out += [r.grade if isinstance(r, Grade) else -1 for r in results]
        return out

    # the request the grader sends for each pair (system message, fenced passage), for the other two clients
    shaper = OpenAIBackend("m", base_url=base_url, api_key="k")
    payloads = [shaper.batch_request(parts_of(p), max_new_tokens=1)[1] for p in pairs]  # type: ignore[index]

    def sdk(concurrency: int) -> list[int]:
        async def run() -> list[int]:
            gate = asyncio.Semaphore(concurrency)
            async with openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0) as client:
                async def one(payload: dict[str, object]) -> int:
                    async with gate:
                        answer = await client.chat.completions.create(**payload)  # type: ignore[call-overload]
                    return parse_self_rating(answer.choices[0].message.content or "")
                return list(await asyncio.gather(*(one(p) for p in payloads)))
        return asyncio.run(run())

    host, port = base_url.split("//")[1].split("/")[0].split(":")
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\nauthorization: Bearer k\r\n"
            "content-type: application/json\r\ncontent-length: %d\r\n\r\n")

    def raw(concurrency: int) -> list[int]:
        async def run() -> list[int]:
            grades = [-1] * len(payloads)
            todo = list(range(len(payloads)))[::-1]

            async def slot() -> None:
                reader, writer = await asyncio.open_connection(host, int(port))
                while todo:
                    i = todo.pop()
                    body = json.dumps(payloads[i]).encode()
                    writer.write((head % len(body)).encode() + body)
                    lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
                    length = next(int(v) for k, _, v in (x.partition(b":") for x in lines[1:])
                                  if k.strip().lower() == b"content-length")
                    answer = json.loads(await reader.readexactly(length))
                    grades[i] = parse_self_rating(answer["choices"][0]["message"]["content"])
                writer.close()

            await asyncio.gather(*(slot() for _ in range(concurrency)))
            return grades
        return asyncio.run(run())

    return {"exam-harness openai grader": harness, "openai SDK loop": sdk, "raw asyncio client": raw}


def openai_main(args: argparse.Namespace) -> int:
    import os
    import socket
    import statistics
    import subprocess

    pairs, source, _ = load_pairs(args.pairs, args.seed)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == b"ready"
        clients = openai_clients(f"http://127.0.0.1:{port}/v1", pairs)
        print(f"pairs:    {len(pairs)} from {source}; server: asyncio HTTP/1.1 keep-alive, answers at once "
              f"(a child process); {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        for client in clients.values():
            client(8)  # warm-up: imports, first connections
        headline: list[str] = []
        for concurrency in args.concurrency:
            cpu: dict[str, list[float]] = {name: [] for name in clients}
            wall: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(args.repeat):
                for name, client in clients.items():
                    c0, w0 = time.process_time(), time.perf_counter()
                    grades = client(concurrency)
                    cpu[name].append(time.process_time() - c0)
                    wall[name].append(time.perf_counter() - w0)
                    if grades.count(3) != len(pairs):
                        raise SystemExit(f"{name}: {len(pairs) - grades.count(3)} of {len(pairs)} pairs not graded 3")
            print(f"concurrency {concurrency}:")
            for name in clients:
                ms = 1000 * statistics.median(cpu[name]) / len(pairs)
                rate = len(pairs) / statistics.median(wall[name])
                print(f"  {name:28s} {ms:7.3f} ms CPU per grade  {1000 / ms:8.0f} grades/s per core  "
                      f"{rate:7.0f} grades/s wall")
            ours = 1000 * statistics.median(cpu["exam-harness openai grader"]) / len(pairs)
            floor = 1000 * statistics.median(cpu["raw asyncio client"]) / len(pairs)
            headline.append(f"{ours:.3f} ms CPU per grade ({1000 / ours:.0f} grades/s per core; raw client "
                            f"{floor:.3f} ms) at concurrency {concurrency}")
        print("openai grader: " + "; ".join(headline))
    finally:
        server.kill()
        server.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--openai", action="store_true",
                        help="time the OpenAI-compatible grader against a local server (see the docstring)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128],
                        help="--openai: requests in flight (default 8 32 128)")
    parser.add_argument("--repeat", type=int, default=3, help="--openai: alternating repetitions (default 3)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the --openai server's child process
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
    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.openai:
        return openai_main(args)

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
