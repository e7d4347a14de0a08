"""The TREC RAG assignment agreement section (``evaluate --human-assignments``): the grader's nugget
assignments at the plan's first tau against human ones, with Cohen's kappa; kept under ``--brief``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from exam_harness.api import preformatted_html, preformatted_markdown
from exam_harness.features.trec_rag.agreement import HUMAN_LABELS, AssignmentAgreement

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.api import Scored


def human_agreement(scored: Scored) -> AssignmentAgreement | None:
    """The grader's TREC RAG nugget assignments against the human ones (at the plan's first tau)."""
    human = scored.input(HUMAN_LABELS)
    if human is None:
        return None
    from exam_harness.core.errors import ConfigError
    from exam_harness.core.grade_kinds import grade_kind
    from exam_harness.features.trec_rag.agreement import assignment_agreement
    from exam_harness.features.trec_rag.measures import scores_the_track
    from exam_harness.features.trec_rag.section import rag_assignments

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
    legacy_fields: tuple[str, ...] = ("trec_rag_agreement",)  # a 4.0 evaluation's own field of it

    def compute(self, scored: Scored) -> AssignmentAgreement | None:
        return human_agreement(scored)

    def from_legacy(self, raw: dict[str, Any], schema: str) -> Any:
        """A 4.0 evaluation's own field of the agreement as this section's content (results/migrate.py)."""
        return raw.pop(self.legacy_fields[0], None) if schema == "4.0" else None

    def terminal(self, content: AssignmentAgreement) -> list[Table]:
        return [assignment_agreement_table(content)]

    def markdown(self, content: AssignmentAgreement, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: AssignmentAgreement) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = TrecRagAgreementSection()
