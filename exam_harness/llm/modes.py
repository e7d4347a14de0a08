"""The LLM grader's prompt modes (:data:`MODES`): which prompt each mode sends, how its answer is read
and graded; and :func:`stored_fallback`, which reads a stored grade's fallback rule again from its
mode. Below the graders, so the grade cache can read old grades without importing a grader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from exam_harness.core.grade_parsing import (
    FALLBACK_NOT_A_GRADE,
    FALLBACK_NOT_YES_NO,
    FALLBACK_STRAY_LABEL,
    read_self_rating,
)
from exam_harness.core.models import Grade
from exam_harness.llm import prompts, track_prompts
from exam_harness.llm.fewshot import FAGGIOLI_B_FEW, SUN_FEW

Output = Literal["self_rating", "answer", "answer_key", "verify", "yes_no", "thomas", "assignment", "umbrela",
                 "support", "label"]
ASSIGNMENT_LABELS_3 = ("support", "partial_support", "not_support")
ASSIGNMENT_LABELS_2 = ("support", "not_support")


# --------------------------------------------------------------------------------------------
# Prompt modes


@dataclass(frozen=True)
class PromptMode:
    name: str
    output: Output
    question: prompts.PromptTemplate | None = None
    nugget: prompts.PromptTemplate | None = None
    direct: prompts.PromptTemplate | None = None
    max_grade: int = 5
    default_min_grade: int = 4
    max_new_tokens: int = 32
    needs_gold: bool = False
    labels: tuple[str, ...] = ()  # the labels a nugget-assignment answer may give
    # the track's own prompt (llm/track_prompts.py): its nugget list and its tool's parser
    track: bool = False
    # the track's system message, sent with its prompt where the backend's system message is not set ("": none);
    # None: the backend's own default
    system: str | None = None

    @property
    def templates(self) -> list[prompts.PromptTemplate]:
        return [t for t in (self.question, self.nugget, self.direct) if t is not None]

    @property
    def needs_bank(self) -> bool:
        return self.direct is None

    @property
    def rating_scale(self) -> int | None:
        return self.max_grade if self.output in ("self_rating", "thomas") else None


def _direct(name: str, template: prompts.PromptTemplate) -> PromptMode:
    output: Output = "thomas" if template.output == "thomas" else "yes_no"
    return PromptMode(
        name, output, direct=template, max_grade=template.max_grade, default_min_grade=1, max_new_tokens=8
    )


# Self-rating answers longer than 32 tokens are "other text" (grade 1) whatever follows, so 32 new
# tokens decide every self-rating; extraction answers get room for a sentence or two.
_EXTRACTION: dict[str, Any] = {"max_grade": 1, "default_min_grade": 1, "max_new_tokens": 128}
MODES: dict[str, PromptMode] = {
    m.name: m
    for m in (
        PromptMode(
            "self-rating", "self_rating", question=prompts.QUESTION_SELF_RATING, nugget=prompts.NUGGET_SELF_RATING
        ),
        PromptMode("question-rating", "self_rating", question=prompts.QUESTION_SELF_RATING),
        PromptMode("nugget-rating", "self_rating", nugget=prompts.NUGGET_SELF_RATING),
        PromptMode("answer-extraction", "answer", question=prompts.ANSWER_EXTRACTION, **_EXTRACTION),
        PromptMode("answer-key", "answer_key", question=prompts.ANSWER_EXTRACTION, needs_gold=True, **_EXTRACTION),
        PromptMode("llm-verify", "verify", question=prompts.ANSWER_EXTRACTION, needs_gold=True, **_EXTRACTION),
        PromptMode("nugget-extraction", "answer", nugget=prompts.NUGGET_EXTRACTION, **_EXTRACTION),
        _direct("sun", prompts.SUN),
        _direct("sun-few", SUN_FEW),
        _direct("fagb", prompts.FAGGIOLI_B),
        _direct("fagb-few", FAGGIOLI_B_FEW),
        _direct("helm", prompts.HELM),
        _direct("thomas", prompts.THOMAS),
        PromptMode("umbrela", "umbrela", direct=prompts.UMBRELA, max_grade=3, default_min_grade=2, max_new_tokens=32),
        PromptMode("support", "support", question=prompts.SUPPORT, nugget=prompts.SUPPORT, max_grade=2,
                   default_min_grade=2, max_new_tokens=16),
        PromptMode("nugget-assignment", "assignment", nugget=prompts.NUGGET_ASSIGNMENT, max_grade=2,
                   default_min_grade=2, max_new_tokens=256, labels=ASSIGNMENT_LABELS_3),
        PromptMode("nugget-assignment-2", "assignment", nugget=prompts.NUGGET_ASSIGNMENT_2, max_grade=2,
                   default_min_grade=2, max_new_tokens=256, labels=ASSIGNMENT_LABELS_2),
        PromptMode("nuggetizer-assignment", "assignment", nugget=track_prompts.NUGGETIZER_ASSIGN.template,
                   max_grade=2, default_min_grade=2, max_new_tokens=256, labels=ASSIGNMENT_LABELS_3, track=True,
                   system=track_prompts.NUGGETIZER_ASSIGN.system),
        PromptMode("nuggetizer-assignment-2", "assignment", nugget=track_prompts.NUGGETIZER_ASSIGN_2.template,
                   max_grade=2, default_min_grade=2, max_new_tokens=256, labels=ASSIGNMENT_LABELS_2, track=True,
                   system=track_prompts.NUGGETIZER_ASSIGN_2.system),
        PromptMode("umbrela-zeroshot", "umbrela", direct=track_prompts.UMBRELA_ZEROSHOT.template, max_grade=3,
                   default_min_grade=2, max_new_tokens=32, track=True, system=track_prompts.UMBRELA_ZEROSHOT.system),
    )
}


def stored_fallback(grade: Grade) -> str | None:
    """The fallback rule that read a stored LLM grade (one kept before grades carried the flag): from
    the details' markers, or, for a self-rating mode, by reading the stored answer again. A custom
    prompt's output is not stored with its grades, so only its markers count."""
    details = grade.details
    if details.get("not_a_grade"):
        return FALLBACK_NOT_A_GRADE
    if details.get("not_yes_no"):
        return FALLBACK_NOT_YES_NO
    if details.get("stray_label"):
        return FALLBACK_STRAY_LABEL
    mode = MODES.get(str(details.get("prompt")))
    if mode is None or mode.output != "self_rating" or grade.raw_response is None:
        return None
    return read_self_rating(grade.raw_response, mode.max_grade)[1]
