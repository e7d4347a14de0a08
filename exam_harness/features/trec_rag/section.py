"""The TREC RAG section: each run's answer to each query with every nugget's assignment (support,
partial_support, not_support) and the grade behind it, where a bank's nuggets carry a TREC RAG importance
(docs/trec-rag.md); per tau scored. ``trec-rag-assignments.jsonl`` is written from it (writers.py)."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from exam_harness.core.answers import word_count
from exam_harness.features.trec_rag.document import NuggetAssignment, RagAssignments
from exam_harness.features.trec_rag.measures import assignments, default_partial

if TYPE_CHECKING:
    from exam_harness.api import Scored
    from exam_harness.core.models import TestPoint
    from exam_harness.measures.context import ScoringContext


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RagAssignmentSet(_Model):
    min_grade: int  # the tau the assignments were made at (support: a grade >= tau)
    assignments: list[RagAssignments]


class TrecRagAssignments(_Model):
    """The section: the assignments at each tau scored (one in a pytest report)."""

    per_tau: list[RagAssignmentSet]

    def at(self, min_grade: int) -> list[RagAssignments]:
        return next((s.assignments for s in self.per_tau if s.min_grade == min_grade), [])


def rag_assignments(ctx: ScoringContext, k: int, tau: int, points: Mapping[str, TestPoint],
                    query_texts: Mapping[str, str], secret: Mapping[str, bool]) -> list[RagAssignments]:
    """Every (run, query) of the track's queries with each nugget's label and the grade behind it."""
    partial = default_partial(tau)
    found = assignments(ctx, k, tau, partial)
    top = ctx.top_k(k)
    rows: list[RagAssignments] = []
    for run, by_query in found.items():
        for q, labels in by_query.items():
            kinds = ctx.exam.importance[q]
            ids = [t for t in ctx.bank(q) if t in kinds]
            grades = ctx.grade_rows(q, top[run][q])
            best = {t: max((grades[p][i] for p in top[run][q]), default=None)
                    for i, t in enumerate(ctx.bank(q)) if t in kinds}
            text = ctx.response_text(run, q, k)
            nuggets = [NuggetAssignment(text=None if secret.get(t) else points[t].text if t in points else None,
                                        importance=imp, assignment=label, grade=best[t])
                       for t, (imp, label) in zip(ids, labels)]
            rows.append(RagAssignments(run_id=run, qid=q, query=query_texts.get(q, ""), answer_text=text,
                                       response_length=word_count(text), nuggets=nuggets))
    return rows


def _summary(content: TrecRagAssignments) -> list[str]:
    several = len(content.per_tau) > 1
    lines = []
    for entry in content.per_tau:
        nuggets = sum(len(a.nuggets) for a in entry.assignments)
        supported = sum(n.assignment == "support" for a in entry.assignments for n in a.nuggets)
        at = f" at tau={entry.min_grade}" if several else ""
        lines.append(f"TREC RAG nugget assignments{at}: {len(entry.assignments)} answers, {nuggets} nuggets "
                     f"assigned, {supported} supported")
    return lines


@dataclass(frozen=True)
class TrecRagSection:
    name: str = "trec-rag"
    title: str = "TREC RAG assignments"
    model: type[BaseModel] = TrecRagAssignments

    def compute(self, scored: Scored) -> TrecRagAssignments | None:
        if not scored.ctx.exam.importance:
            return None
        view = scored.view
        secret = {tp.id: scored.secret(bank) for bank in scored.banks for tp in bank.test_points}
        return TrecRagAssignments(per_tau=[
            RagAssignmentSet(min_grade=tau, assignments=rag_assignments(scored.ctx, scored.plan.k, tau, view.points,
                                                                         view.query_texts, secret))
            for tau in scored.taus])

    def from_legacy(self, raw: dict[str, Any], schema: str) -> dict[str, Any] | None:
        """A 3.x report's own field of the assignments (made at the report's tau) as this section's content
        (results/migrate.py)."""
        if schema != "3":
            return None
        rag = raw.pop("trec_rag", None)
        settings = raw.get("settings")
        if rag and isinstance(settings, dict):
            return {"per_tau": [{"min_grade": settings.get("min_grade"), "assignments": rag}]}
        return None

    def terminal(self, content: TrecRagAssignments) -> list[str]:
        return _summary(content)

    def markdown(self, content: TrecRagAssignments, escape: Callable[[str], str]) -> str:
        return "\n\n".join(escape(line) for line in _summary(content))

    def html(self, content: TrecRagAssignments) -> str:
        notes = "".join(f'<p class="note">{html.escape(line)}</p>' for line in _summary(content))
        return f'<section id="trec-rag"><h2>TREC RAG assignments</h2>{notes}</section>'


SECTION = TrecRagSection()
