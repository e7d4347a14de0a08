"""The offline embedding grader through the harness, against a bare encode-once loop, on DL19 pairs.

    .venv/bin/python benchmarks/embedding_speed.py                  # 9,400 pairs, best of 2
    .venv/bin/python benchmarks/embedding_speed.py --pairs 0        # every top-20 pair (31,250)
    .venv/bin/python benchmarks/embedding_speed.py --pairs 1000 --repeat 1 --json /tmp/embedding.json

Pairs: the TREC DL 2019 runs of ``dl19-graded-flan-t5-large-selfrating.jsonl.gz`` x the generated
question bank ``dl19-genq-questions-v1.jsonl.gz``, pooled as the harness pools them for grading
(:func:`exam_harness.grading.passes.pool_pairs`: every test point of a query x every passage of every run's
top-20, each (passage, test point) pair once), the first ``--pairs`` of them in pool order.

The two ways, each with the model loaded and warmed up (one small encode) before the clock starts:

(a) harness: :func:`exam_harness.grading.passes.run_grading_pass` with :class:`EmbeddingGrader` (its defaults:
    answer key on, though this bank has no gold answers) and a real :class:`GradeCache` in a fresh
    temporary folder (cold: every pair is graded and stored), grading chunks of ``--chunk`` pairs;
(b) bare, whole texts: every distinct question and passage text encoded once by the same
    SentenceTransformer in one ``encode`` call (which sorts texts by length), batch 64, normalised; then
    one dot product and cut-point lookup per pair. No cache, no grade objects, no cutting of long texts.
(c) bare, same texts: the texts the grader encodes (version 5: each test point and query, and each
    passage whole *and* its sentence windows, each cut to what the model reads), made before the clock
    starts with the grader's own :meth:`EmbeddingGrader.spans_of` and ``readable``, encoded once in one
    ``encode`` call (batch 64); then per pair the best cosine over the passage's spans and the cut-point
    lookup. The fair baseline of the harness: the same encoding work with nothing around it.

The three run alternately ``--repeat`` times (best of each kept), so all see the same load on a shared
machine. Prints the rates in pairs/s, the harness's share of each bare loop, and ends with
``embedding: <p>% of bare same-texts loop`` (the issue's target: 85% or more). Timings vary with the machine's load: run it on an idle one for
figures you publish. Nothing here is asserted; tests check results, never timings.
"""

from __future__ import annotations

import argparse
import bisect
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from exam_harness.graders.base import GradingRequest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
RUNS_FILE = "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
BANK_FILE = "dl19-genq-questions-v1.jsonl.gz"
BARE_CUT_POINTS = (0.3, 0.4, 0.5, 0.6, 0.7)  # the bare loop cuts cosines as version 3 of the grader did


@dataclass(frozen=True)
class EmbeddingSpeed:
    """One measurement: pairs, distinct texts, seconds of the best run of each way, and the rates."""

    pairs: int
    distinct_texts: int
    harness_seconds: float
    bare_seconds: float
    same_seconds: float = 0.0  # the bare loop over the grader's own texts (windows included)
    same_texts: int = 0

    @property
    def harness_rate(self) -> float:
        return self.pairs / self.harness_seconds

    @property
    def bare_rate(self) -> float:
        return self.pairs / self.bare_seconds

    @property
    def ratio(self) -> float:
        """The harness's rate as a share of the bare loop's (1.0 = as fast)."""
        return self.bare_seconds / self.harness_seconds

    @property
    def same_ratio(self) -> float:
        """The harness's rate as a share of the bare loop over the same texts."""
        return self.same_seconds / self.harness_seconds

    def line(self) -> str:
        return f"embedding: {100 * self.same_ratio:.0f}% of bare same-texts loop"


def dl19_requests(data: Path, pairs: int) -> list[GradingRequest]:
    """The first ``pairs`` (all when 0) grading requests of DL19's runs x the generated questions, top-20 pool."""
    from exam_harness.grading.passes import pool_pairs
    from exam_harness.io import load_bank, load_runs

    loaded = load_runs([data / "dl19" / RUNS_FILE])
    banks = load_bank(data / "dl19" / BANK_FILE)
    requests = pool_pairs(banks, loaded.data.runs.values(), loaded.data.passages, k=20)
    return requests[:pairs] if pairs else requests


def time_harness(requests: Sequence[GradingRequest], chunk: int, device: str | None) -> float:
    """Seconds of one cold grading pass over ``requests`` (model loaded beforehand)."""
    from exam_harness.graders.base import GraderConfig
    from exam_harness.graders.embedding import EmbeddingGrader
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.passes import run_grading_pass

    grader = EmbeddingGrader(GraderConfig(device=device))
    grader._load().encode(["warm up"], show_progress_bar=False)
    with tempfile.TemporaryDirectory() as folder:
        cache = GradeCache(Path(folder) / "grades.sqlite")
        try:
            started = time.perf_counter()
            outcome = run_grading_pass(grader, requests, cache, chunk_size=chunk)
            seconds = time.perf_counter() - started
        finally:
            cache.close()
            grader.close()
    if outcome.graded != outcome.unique or outcome.failures:
        raise RuntimeError(f"the harness graded {outcome.graded} of {outcome.unique} pairs: {outcome.failures}")
    return seconds


def time_bare(requests: Sequence[GradingRequest], device: str | None) -> tuple[float, int]:
    """Seconds of the bare encode-once loop over ``requests``, and how many distinct texts it encoded."""
    from sentence_transformers import SentenceTransformer

    from exam_harness.graders.embedding import _bundled_model_path

    model = SentenceTransformer(_bundled_model_path(), device=device, local_files_only=True)
    model.encode(["warm up"], show_progress_bar=False)
    started = time.perf_counter()
    texts = list(dict.fromkeys([*(r.test_point.text for r in requests), *(r.passage.text for r in requests)]))
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)
    row = {text: i for i, text in enumerate(texts)}
    grades = [bisect.bisect_right(BARE_CUT_POINTS, float(vectors[row[r.test_point.text]] @ vectors[row[r.passage.text]]))
              for r in requests]
    seconds = time.perf_counter() - started
    assert len(grades) == len(requests)
    return seconds, len(texts)


def grader_texts(requests: Sequence[GradingRequest], device: str | None) -> tuple[list[str], dict[str, list[str]],
                                                                              dict[str, str]]:
    """The texts the embedding grader encodes for ``requests`` (made with its own code, before any clock):
    every distinct one, each passage's spans, and each test point's and query's readable text."""
    from exam_harness.graders.base import GraderConfig
    from exam_harness.graders.embedding import EmbeddingGrader

    grader = EmbeddingGrader(GraderConfig(device=device))
    try:
        questions = {t: grader.readable(t) for t in dict.fromkeys(x for r in requests
                                                                  for x in (r.test_point.text, r.query.text))}
        spans = {text: grader.spans_of(text) for text in dict.fromkeys(r.passage.text for r in requests)}
    finally:
        grader.close()
    texts = list(dict.fromkeys([*questions.values(), *(s for group in spans.values() for s in group)]))
    return texts, spans, questions


def time_same_texts(requests: Sequence[GradingRequest], device: str | None,
                    prepared: tuple[list[str], dict[str, list[str]], dict[str, str]]) -> float:
    """Seconds of the bare loop over the grader's own texts: one encode, then the best span cosine per pair."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from exam_harness.graders.embedding import _bundled_model_path

    texts, spans, questions = prepared
    model = SentenceTransformer(_bundled_model_path(), device=device, local_files_only=True)
    model.encode(["warm up"], show_progress_bar=False)
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)
    row = {text: i for i, text in enumerate(texts)}
    grades = []
    for r in requests:
        group = vectors[[row[s] for s in spans[r.passage.text]]]
        best = float(np.max(group @ vectors[row[questions[r.test_point.text]]]))
        grades.append(bisect.bisect_right(BARE_CUT_POINTS, best))
    seconds = time.perf_counter() - started
    assert len(grades) == len(requests)
    return seconds


def measure(data: Path = DEFAULT_DATA, pairs: int = 9400, *, repeat: int = 2, chunk: int = 256,
            device: str | None = "cpu", echo: bool = False) -> EmbeddingSpeed:
    """Both ways on the same pairs, alternately ``repeat`` times; the best time of each."""
    requests = dl19_requests(data, pairs)
    prepared = grader_texts(requests, device)
    harness: list[float] = []
    bare: list[float] = []
    same: list[float] = []
    distinct = 0
    for attempt in range(repeat):
        seconds, distinct = time_bare(requests, device)
        bare.append(seconds)
        same.append(time_same_texts(requests, device, prepared))
        harness.append(time_harness(requests, chunk, device))
        if echo:
            print(f"  run {attempt + 1}: bare whole texts {len(requests) / bare[-1]:.0f} pairs/s, bare same texts "
                  f"{len(requests) / same[-1]:.0f} pairs/s, harness {len(requests) / harness[-1]:.0f} pairs/s",
                  flush=True)
    return EmbeddingSpeed(pairs=len(requests), distinct_texts=distinct, harness_seconds=min(harness),
                          bare_seconds=min(bare), same_seconds=min(same), same_texts=len(prepared[0]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding dl19/ (../shared/data)")
    parser.add_argument("--pairs", type=int, default=9400, help="first N pool pairs; 0 = all (default 9400)")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each way; best kept (default 2)")
    parser.add_argument("--chunk", type=int, default=256, help="pairs per grading chunk of the harness (default 256)")
    parser.add_argument("--device", default="cpu", help="torch device of both ways (default cpu)")
    parser.add_argument("--json", type=Path, help="also write the figures here (benchmarks/scale.py can read them)")
    args = parser.parse_args(argv)
    if not (args.data / "dl19" / RUNS_FILE).exists():
        parser.error(f"no DL19 data under {args.data}: give --data")
    import torch

    print(f"torch threads: {torch.get_num_threads()}; device {args.device}", flush=True)
    speed = measure(args.data, args.pairs, repeat=args.repeat, chunk=args.chunk, device=args.device, echo=True)
    print(f"pairs: {speed.pairs} ({speed.distinct_texts} distinct whole texts; the grader encodes "
          f"{speed.same_texts}, windows included)")
    print(f"bare encode-once loop, whole texts: {speed.bare_rate:.0f} pairs/s ({speed.bare_seconds:.2f} s)")
    print(f"bare encode-once loop, same texts:  {speed.pairs / speed.same_seconds:.0f} pairs/s "
          f"({speed.same_seconds:.2f} s)")
    print(f"harness (run_grading_pass, cold cache): {speed.harness_rate:.0f} pairs/s ({speed.harness_seconds:.2f} s)")
    print(f"harness vs bare whole-texts loop: {100 * speed.ratio:.0f}%; vs bare same-texts loop: "
          f"{100 * speed.same_ratio:.0f}%")
    if args.json is not None:
        args.json.write_text(json.dumps({**asdict(speed), "ratio": speed.ratio, "same_ratio": speed.same_ratio},
                                        indent=2) + "\n")
    print(speed.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
