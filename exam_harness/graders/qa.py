"""Extractive question answering grader (SQuAD2 style): an answer span, or none.

The METHOD's variant of answer extraction with an extractive QA model. transformers 5 no longer
ships the ``question-answering`` pipeline, so this module reproduces its span decoding with
``handle_impossible_answer=True``: per window of the passage, softmax the start and end logits over
the passage tokens and the [CLS] token, score each span start*end (at most ``max_answer_len``
tokens), and answer nothing when [CLS]-[CLS] (the smallest null score over windows) beats the best
span.

Grade: no answer -> 0; an answer -> 1, or, when the test point has gold answers (and
``answer_key`` is ``auto``), 1 only if the answer matches one under the METHOD's answer-key rule.
Ill-formed answers and unanswerability expressions count as no answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exam_harness.graders.base import GradeFailure, Grader, GraderConfig, GradeResult, GradingRequest
from exam_harness.graders.hf import local_fingerprint, model_load_error, resolve_device
from exam_harness.graders.llm import OptionReader
from exam_harness.graders.matching import is_answer, matching_gold_answer
from exam_harness.models import Grade, GraderSpec, TestPoint

VERSION = "1"
DEFAULT_QA_MODEL = "deepset/roberta-base-squad2"


class QAGrader(Grader):
    """Grades questions with an extractive QA model; registry name ``qa``."""

    name = "qa"

    def __init__(
        self,
        model: str = DEFAULT_QA_MODEL,
        *,
        revision: str | None = None,
        device: str | None = "auto",
        batch_size: int = 32,
        max_seq_len: int = 384,
        doc_stride: int = 128,
        max_answer_len: int = 15,
        answer_key: bool = True,
        local_files_only: bool = False,
    ) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        self.model_id = model
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.max_seq_len = max_seq_len
        self.doc_stride = doc_stride
        self.max_answer_len = max_answer_len
        self.answer_key = answer_key
        load = {"revision": revision, "local_files_only": local_files_only}
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
        for i, (text, score, null_score) in zip(todo, answers):
            tp = requests[i].test_point
            details: dict[str, Any] = {
                "prompt_class": "ExtractiveQA",
                "model": self.model_id,
                "score": round(score, 6),
                "null_score": round(null_score, 6),
            }
            grade = 1 if text and is_answer(text) else 0
            if grade and self.answer_key and tp.gold_answers:
                gold = matching_gold_answer(text, tp.gold_answers)
                details["matched_gold_answer"] = gold
                grade = 1 if gold is not None else 0
            results[i] = Grade(grade=grade, grader=self.name, raw_response=text, extracted_answer=text or None, details=details)
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


def create_qa_grader(config: GraderConfig) -> QAGrader:
    """Registry factory ``qa``."""
    reader = OptionReader(config.options, "qa")
    model = config.model or reader.get_str("model") or DEFAULT_QA_MODEL
    kwargs: dict[str, Any] = {
        "revision": reader.get_str("revision"),
        "device": config.device or reader.get_str("device", "auto"),
        "batch_size": config.batch_size or reader.get_int("batch_size", 32, minimum=1),
        "max_seq_len": reader.get_int("max_seq_len", 384, minimum=16),
        "doc_stride": reader.get_int("doc_stride", 128, minimum=1),
        "max_answer_len": reader.get_int("max_answer_len", 15, minimum=1),
        "answer_key": reader.get_choice("answer_key", "auto", ["auto", "off"]) == "auto",
        "local_files_only": reader.get_bool("local_files_only", False),
    }
    reader.finish()
    return QAGrader(model, **kwargs)
