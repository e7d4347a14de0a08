"""The arithmetic of cascade grading (:mod:`exam_harness.graders.cascade`), kept free of graders so that
benchmarks/cascade.py runs it over recorded grades.

A cheap first judge scores every pair (a number in 0..1: its support, else its grade over its top grade).
Pairs scoring at least the escalation threshold are *kept*: the deciding judge grades them. The others are
*filtered*: graded 0 without a call, except a seeded random *audit* sample of them, which the decider grades
too, so the share of the decider's passes the filter lost can be estimated (:func:`miss_estimate`).

The threshold is given, or chosen from the data for a target recall (:func:`descend`): the audit sample is
drawn from every pair first and graded; then the other pairs are sent to the decider from the highest score
down, a step at a time, until the recall estimated from the kept passes and the audit sample's passes below
the boundary, and the recall bounded by the tighter of the pass rate of the latest steps (a filter whose
score means anything passes fewer pairs lower down) and the upper end of the audit's interval, both reach
the target.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


def audit_draw(seed: int, key: str) -> float:
    """A number in [0, 1) drawn for the pair of content ``key`` under ``seed``: the same pair is drawn alike
    in every run (the audit sample of a rerun is the same sample), different seeds draw independently."""
    digest = hashlib.sha256(f"{seed}\0{key}".encode()).hexdigest()
    return int(digest[:13], 16) / 16**13


def wilson(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (0..1 when nothing was tried)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class MissEstimate:
    """What the audit sample says of the pairs the filter graded 0 without a call."""

    kept: int  # pairs at or above the threshold (the decider graded them)
    kept_passes: int
    audited: int  # pairs below the threshold the decider graded all the same (the audit sample)
    audit_passes: int
    filtered: int  # pairs below the threshold graded 0 without a call

    @property
    def calls(self) -> int:
        """Pairs the decider graded."""
        return self.kept + self.audited

    def _rate(self, pass_rate: float) -> float:
        missed = pass_rate * self.filtered
        found = self.kept_passes + self.audit_passes
        return missed / (found + missed) if found + missed > 0 else 0.0

    @property
    def missed(self) -> float:
        """Estimated passes of the decider among the filtered pairs."""
        return self.audit_passes / self.audited * self.filtered if self.audited else 0.0

    @property
    def miss_rate(self) -> float | None:
        """Estimated share of the decider's passes the filter graded 0 (None without an audit sample while
        something was filtered: nothing to estimate it from)."""
        if self.filtered and not self.audited:
            return None
        return self._rate(self.audit_passes / self.audited if self.audited else 0.0)

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval of :attr:`miss_rate` (the Wilson interval of the audit's pass rate carried through)."""
        if not self.filtered:
            return 0.0, 0.0
        low, high = wilson(self.audit_passes, self.audited)
        return self._rate(low), self._rate(high)


def miss_estimate(kept: Sequence[bool], audited: Sequence[bool], filtered: int) -> MissEstimate:
    """The estimate from the decider's verdicts (passed or not) on the kept pairs and on the audit sample."""
    return MissEstimate(kept=len(kept), kept_passes=sum(kept), audited=len(audited), audit_passes=sum(audited),
                        filtered=filtered)


def describe(estimate: MissEstimate, first: str, decider: str, threshold: float | None) -> str:
    """One line that every output of a cascade session states: calls made, pairs filtered, the miss rate."""
    total = estimate.calls + estimate.filtered
    share = 100.0 * estimate.calls / total if total else 0.0
    at = f" at score >= {threshold:.4g}" if threshold is not None else ""
    line = (f"cascade: {decider} graded {estimate.calls:,} of {total:,} pairs ({share:.1f}%: {estimate.kept:,} kept"
            f"{at}, {estimate.audited:,} audited); {first} graded {estimate.filtered:,} pairs 0 without a call")
    rate = estimate.miss_rate
    if rate is None:
        return line + "; no audit sample: the share of passes the filter missed is unknown"
    low, high = estimate.interval
    return (line + f"; audit: {estimate.audit_passes} passes in {estimate.audited:,} -> estimated miss rate "
            f"{100 * rate:.1f}% of {decider}'s passes (95% interval {100 * low:.1f}%-{100 * high:.1f}%)")


@dataclass(frozen=True)
class Descent:
    """The threshold :func:`descend` chose, and what it cost."""

    threshold: float
    calls: int  # pairs sent to the decider (audit sample included)
    estimated_recall: float
    stopped: str | None = None  # why the descent stopped before reaching the target (e.g. max_cost)


Verdicts = Callable[[Sequence[int]], Sequence[bool | None]]


def descend(scores: Sequence[float], audited: Sequence[bool], decide: Verdicts, *, target: float, step: int,
            floor_step: int | None = None) -> Descent:
    """Choose the lowest threshold needed for ``target`` recall of the decider's passes.

    ``scores[i]`` is pair i's first-judge score and ``audited[i]`` whether it is in the audit sample.
    ``decide(indices)`` asks the decider about those pairs and returns, per pair, whether it passed (None:
    it could not be graded, or was not asked: the budget ran out; such a pair counts as no pass). The audit
    sample is decided first, then the rest from the highest score down, ``step`` pairs at a time (ties are
    never split). The descent stops when both recall estimates reach ``target``: kept passes over kept passes
    plus the passes the audit sample finds below the boundary (scaled to every pair below it), and kept passes
    over kept passes plus the lesser of two upper bounds of the misses: the pass rate of the last
    ``floor_step`` pairs sent (default: ``4 * step`` or a tenth of the pairs, whichever is more: a window that a
    few passes scattered low down still fall into) times the pairs below the boundary, and the upper end of the
    audit's 95% (Wilson) interval of its pass rate below the boundary times those pairs."""
    if not 0 < target <= 1:
        raise ValueError("target recall must be in (0, 1]")
    window = floor_step or max(4 * step, len(scores) // 10)
    audit = [i for i, a in enumerate(audited) if a]
    verdicts: dict[int, bool] = {}

    def ask(indices: list[int]) -> bool:
        answers = list(decide(indices))
        for i, v in zip(indices, answers):
            verdicts[i] = bool(v)
        return len(answers) == len(indices) and all(v is not None for v in answers)

    complete = ask(audit) if audit else True
    order = sorted((i for i, a in enumerate(audited) if not a), key=lambda i: -scores[i])
    sent: list[int] = []
    boundary = math.inf
    recall = 0.0
    position = 0
    while complete and position < len(order):
        end = min(len(order), position + step)
        while end < len(order) and scores[order[end]] == scores[order[end - 1]]:
            end += 1  # a tie goes to the decider whole: the threshold cannot split it
        chunk = order[position:end]
        complete = ask(chunk)
        sent.extend(chunk)
        position = end
        boundary = scores[chunk[-1]]
        recall = _recall(scores, audit, verdicts, sent, order[position:], boundary, window)
        if recall >= target:
            break
    if position >= len(order):  # everything was sent: the filter keeps every pair
        boundary, recall = (min(scores) if scores else 0.0), 1.0
    stopped = None if complete else "the decider stopped answering (a failure or max_cost) while the threshold " \
                                    "was being chosen"
    return Descent(threshold=boundary, calls=len(verdicts), estimated_recall=recall, stopped=stopped)


def _recall(scores: Sequence[float], audit: Sequence[int], verdicts: dict[int, bool], sent: Sequence[int],
            below: Sequence[int], boundary: float, window: int) -> float:
    kept_passes = sum(verdicts[i] for i in sent) + sum(verdicts.get(i, False) for i in audit if scores[i] >= boundary)
    if not below:
        return 1.0
    audit_below = [i for i in audit if scores[i] < boundary]
    # every pair below the boundary, audit ones included: the audit is a uniform sample of all of them
    below_all = len(below) + len(audit_below)
    audit_passes = sum(verdicts.get(i, False) for i in audit_below)
    from_audit = audit_passes / len(audit_below) * below_all if audit_below else 0.0
    audit_bound = wilson(audit_passes, len(audit_below))[1] * below_all  # the audit's 95% upper bound
    latest = sent[-window:]
    from_floor = sum(verdicts[i] for i in latest) / len(latest) * len(below)
    # Both the floor (the latest pass rate held flat below the boundary) and the audit's upper bound bound the
    # misses from above; the tighter one counts, never less than the audit's own estimate. A small audit
    # bounds little (its interval is wide), so the floor counts; a large one bounds the misses far tighter than
    # the floor, which overstates them wherever the pass rate keeps falling below the boundary.
    missed = max(from_audit, min(from_floor, audit_bound))
    return kept_passes / (kept_passes + missed) if kept_passes + missed > 0 else 0.0
