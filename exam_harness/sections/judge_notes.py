"""The judge-notes section: what a reader must know of the judge behind the verdicts (issues 30, 35) — a
cascade's calls, the lower bound of the share of its decider's passes it kept and its warnings (a target not
reached, a filter that cost more than it spared: graders/cascade.py), what the embedding grader's
per-test-point verdicts are worth and the warning for ``required`` points it alone judged
(graders/verdict_worth.py), and the guards: circular judging, a leaked bank (graders/judge_guards.py).
A session with nothing to say has no such section."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from exam_harness.graders.cascade_filter import KeptBound
    from exam_harness.results.scored import Scored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MissEstimateBefore42(_Model):
    """What a cascade entry of schema 4.0 or 4.1 held in place of a bound: the audit's estimate of the share of the
    decider's passes the filter missed (an unstratified audit's Wilson interval carried through; neither a lower
    bound of the kept share nor checked against a target). Kept as it was written, read by nothing that gates."""

    kept: int  # pairs at or above the threshold (the decider graded them)
    audited: int  # filtered pairs the decider graded all the same
    audit_passes: int
    miss_rate: float | None  # None: no audit sample
    interval: tuple[float, float] | None = None  # its 95% interval


class CascadeEstimate(_Model):
    """A cascade's calls and the audit sample's lower bound of the share of the decider's passes it kept, at one
    tau; whether that reached the target; what the filter cost beside what it saved, in seconds, in the session
    that graded (None where every grade came from the cache).

    An entry of a document written as schema 4.0 or 4.1 (results/migrate.py) holds its figures under
    ``miss_estimate`` and the statement it made; the figures it did not record (``found``, ``lost_at_most``,
    ``kept_lower_bound``, ``reached``, the seconds) are None: not recorded, never estimated on read."""

    min_grade: int
    pairs: int
    calls: int  # pairs the decider graded (kept and audited)
    filtered: int  # pairs graded 0 without a call
    found: int | None  # the decider's passes among the pairs it graded (None: not recorded, before 4.2)
    lost_at_most: int | None  # the decider's passes among the filtered pairs, at most (95%; None: before 4.2)
    kept_lower_bound: float | None  # found / (found + lost_at_most): the kept share, at least (95%; None: before 4.2)
    target: float | None  # target_recall; None for a given threshold
    reached: bool | None  # the lower bound reached the target (None without one, or not checked: before 4.2)
    filter_seconds: float | None = None
    decider_seconds: float | None = None  # the decider's time over its calls of the pass
    saved_seconds: float | None = None  # the calls not made, at the decider's time a call
    statement: str  # the line every output states (before 4.2: the line that version stated)
    warnings: list[str] = Field(default_factory=list)  # the target not reached; a filter that cost more than it saved
    miss_estimate: MissEstimateBefore42 | None = None  # the figures of an entry written before 4.2; None since

    @model_validator(mode="after")
    def _bound_or_old_estimate(self) -> CascadeEstimate:
        bound = (self.found, self.lost_at_most, self.kept_lower_bound)
        if self.miss_estimate is None and None in bound:
            raise ValueError("a cascade entry states found, lost_at_most and kept_lower_bound (only an entry of "
                             "schema 4.0 or 4.1, with its miss_estimate, has none)")
        if self.miss_estimate is not None and (bound != (None, None, None) or self.reached is not None):
            raise ValueError("an entry of schema 4.0 or 4.1 (miss_estimate) recorded no bound: found, lost_at_most, "
                             "kept_lower_bound and reached are null")
        return self

    def lines(self) -> list[str]:
        """The statement and its warnings; an entry written before 4.2 says what its figure was and was not."""
        if self.miss_estimate is None:
            return [self.statement, *self.warnings]
        return [self.statement, BEFORE_4_2_NOTE, *self.warnings]


BEFORE_4_2_NOTE = ("note: written before schema 4.2, this cascade line states an audit's estimated miss rate, not a "
                   "95% lower bound of the share of the decider's passes kept (it can overstate what was kept), and "
                   "records no check of the target; cascade-kept cannot be gated on it (docs/graders.md, Cascade "
                   "grading)")


class JudgeNotes(_Model):
    cascade: list[CascadeEstimate] = Field(default_factory=list)  # per tau scored
    verdict_worth: list[str] = Field(default_factory=list)  # the embedding grader's worth, the required warning
    guards: list[str] = Field(default_factory=list)  # circular judging, a leaked bank

    def lines(self) -> list[str]:
        return [*(line for c in self.cascade for line in c.lines()), *self.verdict_worth, *self.guards]


def judge_notes(scored: Scored) -> JudgeNotes | None:
    from exam_harness.graders.cascade import kept_bound_of, statement, target_of
    from exam_harness.graders.judge_guards import guard_notes
    from exam_harness.graders.support import shipped_model
    from exam_harness.graders.verdict_worth import required_warning, worth_line, worth_of

    grading, spec = scored.grading, scored.plan.grader
    cascade = []
    for tau in scored.taus:
        said = statement(grading.answers, grading.grades, tau, spec)
        bound = kept_bound_of(grading.answers, grading.grades, tau) if said is not None else None
        if said is not None and bound is not None:
            cascade.append(cascade_estimate(tau, bound, target_of(spec), said, grading.judge_figures,
                                            str(spec.options.get("first")), str(spec.options.get("decider"))))
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


FILTER_SLACK_S = 1.0  # a filter slower than the calls it spared by more than this is said to have cost more


def cascade_estimate(tau: int, bound: KeptBound, target: float | None, said: str,
                     figures: Mapping[str, float] | None, first: str, decider: str) -> CascadeEstimate:
    """The section's figures of a cascade at ``tau``, with its warnings: a target not reached, and a filter whose
    own time was more than the decider's calls it spared would have taken."""
    warnings = []
    reached = None if target is None else bound.lower_bound >= target
    if reached is False:
        assert target is not None
        warnings.append(f"WARNING: cascade target not reached: kept ≥ {100 * bound.lower_bound:.1f}% of {decider}'s "
                        f"passes (95% lower bound) is below the target {100 * target:g}%; gate on it with "
                        f"--exam-fail-under cascade-kept:{target:g} (docs/graders.md, Cascade grading)")
    filter_s = decider_s = saved_s = None
    if figures is not None and figures.get("decider_calls"):
        filter_s, decider_s = figures.get("filter_seconds", 0.0), figures.get("decider_seconds", 0.0)
        saved_s = figures.get("filtered", 0.0) * decider_s / figures["decider_calls"]
        if filter_s > saved_s + FILTER_SLACK_S:
            warnings.append(f"WARNING: the cascade's filter ({first}) took {filter_s:.1f}s, more than the "
                            f"{figures.get('filtered', 0.0):,.0f} calls it spared would have taken {decider} "
                            f"(about {saved_s:.1f}s at {decider_s / figures['decider_calls']:.3f}s a call): "
                            f"{decider} alone would have been quicker")
    return CascadeEstimate(min_grade=tau, pairs=bound.pairs, calls=bound.calls, filtered=bound.unasked,
                           found=bound.found, lost_at_most=bound.lost, kept_lower_bound=bound.lower_bound,
                           target=target, reached=reached, filter_seconds=filter_s, decider_seconds=decider_s,
                           saved_seconds=saved_s, statement=said, warnings=warnings)


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
