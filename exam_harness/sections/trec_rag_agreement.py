"""The TREC RAG assignment agreement section (``evaluate --human-assignments``): the grader's nugget
assignments at the plan's first tau against human ones, with Cohen's kappa; kept under ``--brief``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from exam_harness.results.agreement import AssignmentAgreement
from exam_harness.results.sections import preformatted_html, preformatted_markdown

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.results.scored import Scored


def human_agreement(scored: Scored) -> AssignmentAgreement | None:
    """The grader's TREC RAG nugget assignments against the human ones (at the plan's first tau)."""
    human = scored.human_assignments
    if human is None:
        return None
    from exam_harness.analysis.trec_rag_agreement import assignment_agreement
    from exam_harness.core.errors import ConfigError
    from exam_harness.measures.trec_rag import grade_kind, scores_the_track
    from exam_harness.sections.trec_rag import rag_assignments

    if not scored.ctx.exam.importance:
        raise ConfigError("--human-assignments needs nuggets that carry an importance (a nuggetizer nugget file "
                          "among the banks)")
    plan, view = scored.plan, scored.view
    if not scores_the_track(plan.grader):
        raise ConfigError(f"--human-assignments compares nugget assignments, and grader {plan.grader.name!r} gives "
                          f"{grade_kind(plan.grader)} grades (grade with --grader-option prompt=nugget-assignment, "
                          "or compare two assignment files: --assignments FILE --human-assignments FILE)")
    rows = rag_assignments(scored.ctx, plan.k, plan.min_grade, view.points, view.query_texts, {})
    machine = ((row.run_id, row.qid, n.text or "", n.assignment) for row in rows for n in row.nuggets)
    return assignment_agreement(machine, human)


def assignment_agreement_table(agreement: AssignmentAgreement) -> Table:
    """The grader's nugget assignments (rows) against the human ones (columns), with each label's kappa."""
    from rich.table import Table

    from exam_harness.report.tables import fmt

    table = Table(title=f"TREC RAG nugget assignments against human labels ({agreement.pairs:,} pairs, "
                  f"{agreement.unmatched:,} human labels unmatched; agreement {fmt(agreement.agreement)}, "
                  f"Cohen's κ {fmt(agreement.kappa)})", title_justify="left", header_style="bold")
    table.add_column("grader \\ human")
    labels = list(agreement.confusion)
    for label in labels:
        table.add_column(label, justify="right")
    table.add_column("κ (label vs rest)", justify="right")
    for label in labels:
        table.add_row(label, *(f"{agreement.confusion[label][other]:,}" for other in labels),
                      fmt(agreement.label_kappa.get(label)))
    return table


@dataclass(frozen=True)
class TrecRagAgreementSection:
    name: str = "trec-rag-agreement"
    title: str = "TREC RAG nugget assignments against human labels"
    model: type[BaseModel] = AssignmentAgreement
    placement: Literal["before", "after"] = "after"
    brief: bool = True

    def compute(self, scored: Scored) -> AssignmentAgreement | None:
        return human_agreement(scored)

    def terminal(self, content: AssignmentAgreement) -> list[Table]:
        return [assignment_agreement_table(content)]

    def markdown(self, content: AssignmentAgreement, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: AssignmentAgreement) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = TrecRagAgreementSection()
