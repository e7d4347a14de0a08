"""Extractive question answering grader (SQuAD2 style): an answer span, or none.

The method's variant of answer extraction with an extractive QA model. transformers 5 no longer
ships the ``question-answering`` pipeline, so this module reproduces its span decoding with
``handle_impossible_answer=True``: per window of the passage, softmax the start and end logits over
the passage tokens and the [CLS] token, score each span start*end (at most ``max_answer_len``
tokens), and answer nothing when [CLS]-[CLS] (the smallest null score over windows) beats the best
span.

Grade: no answer -> 0; an answer -> 1, or, when the test point has gold answers (and
``answer_key`` is ``auto``), 1 only if the answer matches one under the method's answer-key rule.
Ill-formed answers and unanswerability expressions count as no answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exam_harness.config.options import choice, integer, optional, text
from exam_harness.core.models import Grade, GraderSpec, TestPoint
from exam_harness.graders.answer_key import gold_fingerprint
from exam_harness.graders.base import (
    GradeFailure,
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.graders.matching import is_answer, matching_gold_answer
from exam_harness.llm.hf import (
    DEVICE_OPTION,
    LOCAL_FILES_ONLY_OPTION,
    REVISION_OPTION,
    local_fingerprint,
    model_load_error,
    resolve_device,
)

VERSION = "1"
DEFAULT_QA_MODEL = "deepset/roberta-base-squad2"


class QAGrader(Grader):
    """Grades questions with an extractive QA model; registry name ``qa``. ``--exam-model``,
    ``--exam-device`` and ``--exam-batch-size`` win over the options ``model``, ``device`` and ``batch_size``."""

    name = "qa"
    options = (
        GraderOption("model", DEFAULT_QA_MODEL, f"hub name or local folder (default: {DEFAULT_QA_MODEL}); "
                     "--exam-model wins", optional(text)),
        REVISION_OPTION,
        DEVICE_OPTION,
        GraderOption("batch_size", 32, "passage windows per forward pass (default: 32); --exam-batch-size wins",
                     integer(1)),
        GraderOption("max_seq_len", 384, "tokens of a window of question and passage (default: 384)", integer(16)),
        GraderOption("doc_stride", 128, "tokens that consecutive windows share (default: 128)", integer(1)),
        GraderOption("max_answer_len", 15, "longest answer span in tokens (default: 15)", integer(1)),
        GraderOption("answer_key", "auto", "auto checks an answer against the gold answers when the test point has "
                     "some; off grades any answer 1 (default: auto)", choice("auto", "off")),
        LOCAL_FILES_ONLY_OPTION,
    )

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        model: str = config.model or values["model"] or DEFAULT_QA_MODEL
        revision: str | None = values["revision"]
        self.model_id = model
        self.device = resolve_device(config.device or values["device"])
        self.batch_size: int = config.batch_size or values["batch_size"]
        self.max_seq_len: int = values["max_seq_len"]
        self.doc_stride: int = values["doc_stride"]
        self.max_answer_len: int = values["max_answer_len"]
        self.answer_key: bool = values["answer_key"] == "auto"
        load = {"revision": revision, "local_files_only": values["local_files_only"]}
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, **load)
            self.model = AutoModelForQuestionAnswering.from_pretrained(model, **load)
        except (OSError, ValueError) as exc:
            raise model_load_error(model, exc) from exc
        if not getattr(self.tokenizer, "is_fast", False):
            raise model_load_error(model, ValueError("extractive QA needs a fast tokenizer (character offsets)"))
        self.model.to(self.device).eval()
        self.revision = getattr(self.model.config, "_commit_hash", None) or revision
        if Path(model).is_dir():
            self.revision = local_fingerprint(Path(model))
        self._question_first = self.tokenizer.padding_side == "right"

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.model_id,
            revision=self.revision,
            prompt_class="ExtractiveQA",
            options={
                "handle_impossible_answer": True,
                "max_seq_len": self.max_seq_len,
                "doc_stride": self.doc_stride,
                "max_answer_len": self.max_answer_len,
                "answer_key": self.answer_key,
            },
            max_grade=1,
            default_min_grade=1,
        )

    def supports(self, test_point: TestPoint) -> str | None:
        if test_point.kind != "question":
            return f"extractive QA answers questions, and {test_point.id} is a {test_point.kind}"
        return None

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        tp = request.test_point
        payload: dict[str, Any] = {"kind": tp.kind, "test_point": tp.text, "passage": request.passage.text}
        if self.answer_key:
            payload["gold_answers"] = list(tp.gold_answers)
        return payload

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        results: list[GradeResult | None] = [None] * len(requests)
        todo = []
        for i, request in enumerate(requests):
            reason = self.supports(request.test_point)
            if reason:
                results[i] = GradeFailure(reason)
            else:
                todo.append(i)
        answers = self.answer([(requests[i].test_point.text, requests[i].passage.text) for i in todo])
        for i, (answer, score, null_score) in zip(todo, answers):
            tp = requests[i].test_point
            details: dict[str, Any] = {
                "prompt_class": "ExtractiveQA",
                "model": self.model_id,
                "score": round(score, 6),
                "null_score": round(null_score, 6),
            }
            grade = 1 if answer and is_answer(answer) else 0
            if grade and self.answer_key and tp.gold_answers:
                gold = matching_gold_answer(answer, tp.gold_answers)
                # gold answers are bank secrets and grades are cached: a fingerprint stands in for one
                details["gold_fingerprint"] = gold_fingerprint(tp.text, gold) if gold is not None else None
                grade = 1 if gold is not None else 0
            results[i] = Grade(
                grade=grade, grader=self.name, raw_response=answer, extracted_answer=answer or None, details=details
            )
        return [r if r is not None else GradeFailure("not graded") for r in results]

    def answer(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, float, float]]:
        """(answer or "", best span score, null score) per (question, context) pair."""
        import numpy as np
        import torch

        if not pairs:
            return []
        tok = self.tokenizer
        questions = [q.lstrip() for q, _ in pairs]  # as the pipeline does: leading spaces break some tokenizers
        contexts = [c for _, c in pairs]
        first, second = (questions, contexts) if self._question_first else (contexts, questions)
        enc = tok(
            first,
            second,
            truncation="only_second" if self._question_first else "only_first",
            max_length=self.max_seq_len,
            stride=self.doc_stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding="longest",
        )
        context_seq = 1 if self._question_first else 0
        n_features = len(enc["input_ids"])
        start_logits: list[Any] = []
        end_logits: list[Any] = []
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in enc]
        for lo in range(0, n_features, self.batch_size):
            batch = {n: torch.tensor(enc[n][lo : lo + self.batch_size], device=self.device) for n in names}
            if "token_type_ids" in batch and getattr(self.model.config, "type_vocab_size", 2) < 2:
                del batch["token_type_ids"]
            with torch.inference_mode():
                out = self.model(**batch)
            start_logits.extend(out.start_logits.float().cpu().numpy())
            end_logits.extend(out.end_logits.float().cpu().numpy())
        best: list[tuple[float, int, int]] = [(-1.0, 0, 0)] * len(pairs)
        null: list[float] = [float("inf")] * len(pairs)
        for f in range(n_features):
            sample = enc["overflow_to_sample_mapping"][f]
            seq_ids = enc.sequence_ids(f)
            ids = enc["input_ids"][f]
            wanted = np.array([s == context_seq or t == tok.cls_token_id for s, t in zip(seq_ids, ids)])
            wanted &= np.array(enc["attention_mask"][f], dtype=bool)
            start = _softmax(np.where(wanted, start_logits[f], -10000.0))
            end = _softmax(np.where(wanted, end_logits[f], -10000.0))
            null[sample] = min(null[sample], float(start[0] * end[0]))
            start[0] = end[0] = 0.0  # [CLS] is the null answer, never part of a span
            context_tok = np.array([s == context_seq for s in seq_ids])
            scores = np.triu(np.outer(start, end))
            scores = np.tril(scores, self.max_answer_len - 1)
            scores[~context_tok, :] = 0.0
            scores[:, ~context_tok] = 0.0
            s, e = np.unravel_index(int(np.argmax(scores)), scores.shape)
            score = float(scores[s, e])
            if score > best[sample][0]:
                offsets = enc["offset_mapping"][f]
                best[sample] = (score, offsets[s][0], offsets[e][1])
        out_answers = []
        for k, (score, a, b) in enumerate(best):
            # The pipeline sorts spans and the null answer by score; a tie keeps the span.
            text = contexts[k][a:b] if score >= null[k] and b > a else ""
            out_answers.append((text.strip(), max(score, 0.0), null[k]))
        return out_answers


def _softmax(x: Any) -> Any:
    import numpy as np

    e = np.exp(x - np.max(x))
    return e / e.sum()
