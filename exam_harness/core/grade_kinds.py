"""What kind of grades a grader gives, read from its identity: the grader's prompt's output, else (recorded grades)
the prompt class they were recorded under. A measure that means something over one kind only says so
(:class:`GradesNeeded`, ``Measure.grades_needed``): it is planned and gated over that kind alone.

A nugget *assignment* label (support / partial support / not support of a nugget by an answer), a *relevance*
grade (UMBRELA, the direct baselines: the passage against the query alone) and a *self-rating* (the method's 0..5
answerability) are different things: a score computed from assignments names a value no other kind can give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from exam_harness.core.models import GraderSpec

# the prompt classes recorded grades of nugget assignments carry (the track's assignment files, nuggetizer's prompts)
ASSIGNMENT_PROMPT_CLASSES = ("TrecRagNuggetAssignment", "TrecRagNuggetAssignment2", "NuggetizerAssignment",
                             "NuggetizerAssignment2")
_KIND_OF_OUTPUT = {"assignment": "assignment", "label": "assignment", "umbrela": "relevance", "yes_no": "relevance",
                   "thomas": "relevance",
                   "self_rating": "self-rating"}
KIND_NAMES = {"assignment": "nugget assignments", "relevance": "relevance grades", "self-rating": "self-ratings"}


def grade_kind(spec: GraderSpec) -> str:
    """``assignment``, ``relevance``, ``self-rating`` or ``other``: what the grades of ``spec`` are (its
    prompt's output; recorded grades by their prompt class)."""
    output = spec.options.get("output")
    if isinstance(output, str) and output in _KIND_OF_OUTPUT:
        return _KIND_OF_OUTPUT[output]
    if spec.prompt_class in ASSIGNMENT_PROMPT_CLASSES:
        return "assignment"
    return "other"


def recorded_scale(prompt_class: str | None) -> tuple[int, int]:
    """(max grade, default tau) of recorded grades by their prompt class: an assignment prompt's labels are
    2 / 1 / 0, read back at tau 2; anything else is the published self-ratings' 0..5 at tau 4."""
    return (2, 2) if prompt_class in ASSIGNMENT_PROMPT_CLASSES else (5, 4)


@dataclass(frozen=True)
class GradesNeeded:
    """A measure computed from one kind of grades only: ``kind`` (as :func:`grade_kind` names it), what the measure
    is (``"a TREC RAG track score"``) and how to grade for it, which a gate's message says where a report's grades
    are of another kind."""

    kind: str
    what: str
    advice: str

    def unmet_by(self, spec: GraderSpec) -> str | None:
        """The kind ``spec``'s grades are where it is not :attr:`kind`, else None."""
        given = grade_kind(spec)
        return None if given == self.kind else given
