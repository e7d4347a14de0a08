"""The judge-notes section: what a reader must know of the judge behind the verdicts (issue 30) — a
cascade's calls and the filter's estimated miss rate (graders/cascade.py), what the embedding grader's
per-test-point verdicts are worth and the warning for ``required`` points it alone judged
(graders/verdict_worth.py), and the guards: circular judging, a leaked bank (graders/judge_guards.py).
A session with nothing to say has no such section."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from exam_harness.results.scored import Scored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CascadeEstimate(_Model):
    """A cascade's calls and the audit sample's estimate of the passes its filter missed, at one tau."""

    min_grade: int
    calls: int  # pairs the decider graded (kept and audited)
    kept: int
    audited: int
    audit_passes: int
    filtered: int  # pairs graded 0 without a call
    miss_rate: float | None  # share of the decider's passes the filter missed; None without an audit sample
    interval: tuple[float, float] | None = None  # its 95% interval
    statement: str  # the line every output states


class JudgeNotes(_Model):
    cascade: list[CascadeEstimate] = Field(default_factory=list)  # per tau scored
    verdict_worth: list[str] = Field(default_factory=list)  # the embedding grader's worth, the required warning
    guards: list[str] = Field(default_factory=list)  # circular judging, a leaked bank

    def lines(self) -> list[str]:
        return [*(c.statement for c in self.cascade), *self.verdict_worth, *self.guards]


def judge_notes(scored: Scored) -> JudgeNotes | None:
    from exam_harness.graders.cascade import estimate_of, statement
    from exam_harness.graders.judge_guards import guard_notes
    from exam_harness.graders.support import shipped_model
    from exam_harness.graders.verdict_worth import required_warning, worth_line, worth_of

    grading, spec = scored.grading, scored.plan.grader
    cascade = []
    for tau in scored.taus:
        said = statement(grading.answers, grading.grades, tau, spec)
        estimate = estimate_of(grading.answers, grading.grades, tau) if said is not None else None
        if said is not None and estimate is not None:
            rate = estimate.miss_rate
            cascade.append(CascadeEstimate(
                min_grade=tau, calls=estimate.calls, kept=estimate.kept, audited=estimate.audited,
                audit_passes=estimate.audit_passes, filtered=estimate.filtered, miss_rate=rate,
                interval=estimate.interval if rate is not None else None, statement=said))
    worth: list[str] = []
    if spec.name == "embedding":
        measured = worth_of(spec, shipped_model().fingerprint())
        worth = [line for tau in scored.taus if (line := worth_line(spec, tau, measured)) is not None]
        if scored.outcomes:  # the pytest session: required where it applies to a run
            required = [o.test_point_id for o in scored.outcomes if o.required]
        else:
            required = [scored.shown_id(b, tp.id) for b in scored.banks for tp in b.test_points if tp.required]
        warning = required_warning(spec, required, measured)
        worth += [warning] if warning is not None else []
    guards = guard_notes(scored.view.data, scored.banks, scored.plan.k, spec.model or scored.judge_model,
                         scored.run_folders)
    notes = JudgeNotes(cascade=cascade, verdict_worth=list(dict.fromkeys(worth)), guards=guards)
    return notes if notes.lines() else None


@dataclass(frozen=True)
class JudgeNotesSection:
    name: str = "judge-notes"
    title: str = "The judge"
    model: type[BaseModel] = JudgeNotes

    def compute(self, scored: Scored) -> JudgeNotes | None:
        return judge_notes(scored)

    def terminal(self, content: JudgeNotes) -> list[str]:
        return content.lines()

    def markdown(self, content: JudgeNotes, escape: Callable[[str], str]) -> str:
        return "\n\n".join(escape(line) for line in content.lines())

    def html(self, content: JudgeNotes) -> str:
        notes = "".join(f'<p class="note">{html.escape(line)}</p>' for line in content.lines())
        return f'<section id="judge-notes"><h2>The judge</h2>{notes}</section>'


SECTION = JudgeNotesSection()
