"""Rungs of the judge ladder between the bundled embedding model and an LLM (docs/graders.md, "Judge ladder"):
rerankers that read a test point and a passage together and give the probability that the passage is relevant
to it, cut into 0..5 at the option ``cut_points`` (or at the cut points fitted on a team's labels that the option
``cut_points_file`` names: graders/reranker_cuts.py).

- ``cross-encoder``: a sentence-transformers ``CrossEncoder`` (e.g. ``cross-encoder/ms-marco-MiniLM-L6-v2``);
  its one logit through a sigmoid;
- ``monot5``: a monoT5 model (e.g. ``castorini/monot5-base-msmarco``) over transformers; the prompt
  ``Query: … Document: … Relevant:`` and the softmax of the first decoded token's ``true`` and ``false`` logits.

The model is the option ``model`` (or ``--exam-model``): a hub name, loaded from the Hugging Face cache
(``exam-harness models pull NAME`` fetches it; with ``HF_HUB_OFFLINE=1`` nothing is downloaded), or a local
folder, whose content fingerprint then stands in the spec, as for the embedding grader.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exam_harness.config.options import integer, optional, text
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, GraderSpec
from exam_harness.graders.base import (
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.graders.embedding import parse_cut_points
from exam_harness.graders.reranker_cuts import read_fitted_cut_points
from exam_harness.llm.hf import local_fingerprint

VERSION = "1"
DEFAULT_CUT_POINTS = (0.1, 0.3, 0.5, 0.7, 0.9)
MONOT5_PROMPT = "Query: {query} Document: {document} Relevant:"


def _options(default_model: str) -> tuple[GraderOption, ...]:
    return (
        GraderOption("model", None, f"hub name or local folder of the model (default: --exam-model, else "
                     f"{default_model})", optional(text)),
        GraderOption("cut_points", DEFAULT_CUT_POINTS, "5 increasing probabilities (0..1) where grades 1..5 begin "
                     "(default: 0.1,0.3,0.5,0.7,0.9)", parse_cut_points),
        GraderOption("cut_points_file", None, "cut points fitted on a team's labels (exam-harness calibrate "
                     "--team-labels FILE --fit-cut-points OUT); they replace cut_points, and the spec names what "
                     "they were fitted on (default: none)", optional(text)),
        GraderOption("batch_size", 16, "pairs per forward pass (default: 16)", integer(1)),
        GraderOption("device", None, "torch device (default: --exam-device, else the library's choice)",
                     optional(text)),
    )


class _Reranker(Grader):
    default_model = ""

    def __init__(self, config: GraderConfig) -> None:
        values = read_grader_options(self.name, self.options, config.options)
        self.model_path: str = config.model or values["model"] or self.default_model
        location = Path(self.model_path)
        self.revision = local_fingerprint(location) if location.exists() else None
        self.cut_points: tuple[float, ...] = tuple(float(c) for c in values["cut_points"])
        self.fitted_on: str | None = None
        if values["cut_points_file"]:
            fitted = read_fitted_cut_points(Path(values["cut_points_file"]))
            if fitted.grader != self.name:
                raise ConfigError(f"{values['cut_points_file']}: its cut points were fitted for the {fitted.grader!r} "
                                  f"grader, not {self.name!r}")
            if fitted.model != self.model_path:
                raise ConfigError(f"{values['cut_points_file']}: its cut points cut the probabilities of "
                                  f"{fitted.model!r}, not of {self.model_path!r}")
            self.cut_points, self.fitted_on = fitted.cut_points, fitted.fitted_on
        self.batch_size: int = values["batch_size"]
        self.device: str | None = config.device or values["device"]
        self._model: Any = None

    def spec(self) -> GraderSpec:
        options: dict[str, Any] = {"cut_points": list(self.cut_points)}
        if self.fitted_on is not None:  # named in every output that shows the spec
            options["cut_points_fitted_on"] = self.fitted_on
        return GraderSpec(name=self.name, version=VERSION, model=self.model_path, revision=self.revision,
                          options=options, default_min_grade=4)

    def grade_of(self, probability: float) -> int:
        return bisect.bisect_right(self.cut_points, probability)

    def probabilities(self, requests: Sequence[GradingRequest]) -> list[float]:
        raise NotImplementedError

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        if not requests:
            return []
        return [Grade(grade=self.grade_of(p), grader=self.name, raw_response=f"relevant with probability {p:.4f}",
                      details={"probability": round(p, 6)}) for p in self.probabilities(requests)]

    def close(self) -> None:
        self._model = None


def _load_error(path: str, exc: Exception) -> ConfigError:
    return ConfigError(f"cannot load the model {path!r} ({type(exc).__name__}: {exc}); fetch a hub model first with "
                       f"exam-harness models pull {path}")


class CrossEncoderGrader(_Reranker):
    name = "cross-encoder"
    default_model = "cross-encoder/ms-marco-MiniLM-L6-v2"
    options = _options(default_model)

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise ConfigError("the cross-encoder grader needs sentence-transformers: pip install "
                                  "'exam-harness[embedding]'") from exc
            try:
                self._model = CrossEncoder(self.model_path, device=self.device, num_labels=1)
            except OSError as exc:
                raise _load_error(self.model_path, exc) from exc
        return self._model

    def probabilities(self, requests: Sequence[GradingRequest]) -> list[float]:
        import torch

        logits = self._load().predict([(r.test_point.text, r.passage.text) for r in requests],
                                      batch_size=self.batch_size, activation_fn=torch.nn.Identity(),
                                      show_progress_bar=False)
        return [1.0 / (1.0 + math.exp(-float(x))) for x in logits]


class MonoT5Grader(_Reranker):
    name = "monot5"
    default_model = "castorini/monot5-base-msmarco"
    options = _options(default_model)

    def _load(self) -> tuple[Any, Any, int, int]:
        if self._model is None:
            from transformers import AutoTokenizer, T5ForConditionalGeneration

            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_path)
                model = T5ForConditionalGeneration.from_pretrained(self.model_path)
            except OSError as exc:
                raise _load_error(self.model_path, exc) from exc
            if self.device:
                model = model.to(self.device)
            model.eval()
            ids = [tokenizer(word, add_special_tokens=False)["input_ids"] for word in ("true", "false")]
            if any(len(i) < 1 for i in ids):
                raise ConfigError(f"{self.model_path}: its tokenizer has no token for 'true' or 'false'")
            self._model = (tokenizer, model, ids[0][0], ids[1][0])
        loaded: tuple[Any, Any, int, int] = self._model
        return loaded

    def probabilities(self, requests: Sequence[GradingRequest]) -> list[float]:
        import torch

        tokenizer, model, true_id, false_id = self._load()
        out: list[float] = []
        for start in range(0, len(requests), self.batch_size):
            part = requests[start : start + self.batch_size]
            prompts = [MONOT5_PROMPT.format(query=r.test_point.text, document=r.passage.text) for r in part]
            encoded = tokenizer(prompts, return_tensors="pt", padding=True, truncation=True, max_length=512)
            encoded = {k: v.to(model.device) for k, v in encoded.items()}
            start_ids = torch.full((len(part), 1), model.config.decoder_start_token_id, dtype=torch.long,
                                   device=model.device)
            with torch.no_grad():
                logits = model(**encoded, decoder_input_ids=start_ids).logits[:, 0, :]
            pair = torch.stack([logits[:, true_id], logits[:, false_id]], dim=1).float()
            out += torch.softmax(pair, dim=1)[:, 0].tolist()
        return out
