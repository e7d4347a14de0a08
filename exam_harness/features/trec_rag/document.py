"""The TREC RAG assignment rows of the document's trec-rag section (sections/trec_rag.py computes them), which
the trec-rag writers write (report/writers.py, report/trec_rag.py): declared with the document, below both."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NuggetAssignment(_Model):
    """One nugget's assignment to one answer (nuggetizer's assignment shape, plus the grade behind it)."""

    text: str | None  # None for secret banks
    importance: str
    assignment: str  # support, partial_support, not_support
    grade: int | None = None  # the best grade of the run's top-k on the nugget (None: not graded)


class RagAssignments(_Model):
    """A run's answer to one query with every nugget's assignment (TREC RAG nuggets only)."""

    run_id: str
    qid: str
    query: str
    answer_text: str
    response_length: int  # words (NFKC, split on whitespace)
    nuggets: list[NuggetAssignment]
