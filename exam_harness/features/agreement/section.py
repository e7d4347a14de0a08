"""The agreement section: the grades against the human judgments of the run files (``evaluate``, when
the files hold judgments): the max-grade table with Cohen's kappa of each cut, the "min answers = m"
views (``--min-answers``) and each recorded direct grading run's table; kept under ``--brief``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.results.agreement import AgreementResult, DirectAgreement, MinAnswersAgreement
from exam_harness.results.sections import preformatted_html, preformatted_markdown

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.results.scored import Scored


class Agreement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tables: AgreementResult  # label = the passage's max grade, at every tau
    min_answers: list[MinAnswersAgreement] = Field(default_factory=list)  # one view per --min-answers m
    direct: list[DirectAgreement] = Field(default_factory=list)  # one per recorded direct grading run


def agreement(scored: Scored) -> Agreement | None:
    data, plan = scored.view.data, scored.plan
    if scored.min_answers is None or not data.judgments:
        return None
    from exam_harness.analysis.agreement import agreement_tables, direct_agreement, min_answers_agreement

    view = scored.view
    tps = {q: view.test_points[q] for q in view.queries}
    tables = agreement_tables(scored.grading.grades, tps, data.judgments, relevance_level=plan.relevance_level,
                              min_grades=plan.min_grades)
    views = min_answers_agreement(scored.grading.grades, tps, data.judgments, scored.min_answers,
                                  relevance_level=plan.relevance_level,
                                  min_grades=plan.min_grades) if scored.min_answers else []
    direct = direct_agreement(data.recorded, data.judgments, relevance_level=plan.relevance_level)
    return Agreement(tables=tables, min_answers=list(views), direct=list(direct))


@dataclass(frozen=True)
class AgreementSection:
    name: str = "agreement"
    title: str = "Agreement with human judgments"
    model: type[BaseModel] = Agreement
    placement: Literal["before", "after"] = "after"
    brief: bool = True

    def compute(self, scored: Scored) -> Agreement | None:
        return agreement(scored)

    def terminal(self, content: Agreement) -> list[Table]:
        from exam_harness.report.analysis_tables import agreement_renderables
        from exam_harness.report.evaluation_tables import agreement_view_tables

        return [*agreement_renderables(content.tables), *agreement_view_tables(content.min_answers, content.direct)]

    def markdown(self, content: Agreement, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: Agreement) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = AgreementSection()
