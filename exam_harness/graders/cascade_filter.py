"""The arithmetic of cascade grading (:mod:`exam_harness.graders.cascade`), kept free of graders so that
benchmarks/cascade.py and the tests run it over recorded or simulated verdicts.

A cheap first judge scores every pair (a number in 0..1). Pairs scoring at least the escalation threshold are
*kept*: the deciding judge grades them. The others are *filtered*: graded 0 without a call, except the *audit
sample*, which the decider grades too, so that how many of its passes the filter lost can be bounded.

The audit sample is stratified by the first judge's score (:func:`strata_of`: ``strata`` bands of about
equal size, best scores first, ties never split) and drawn before any threshold is chosen
(:func:`audit_sample`): in each band at least ``minimum`` pairs (every pair of a smaller band) and at least a
share ``share`` of it, the pairs whose seeded draw (:func:`audit_draw`) is lowest, so a rerun audits the same
pairs. A band's audit is a simple random sample of the band, so the hypergeometric distribution bounds the
decider's passes in the band (:func:`passes_bound`); the bands' bounds hold together with 95% confidence
(the lowest band's at 97.5%, the next one's at 98.75%, ...: :func:`band_levels`). Below a threshold, the
passes the filter lost in a band are at most its bound less the passes the decider found in the band (its
audit and its kept pairs), and never more than the band's pairs it did not ask about (:func:`kept_bound`).
The kept share of the decider's passes is then at least ``found / (found + lost)``, its one-sided 95% lower
bound; because the bands' bounds hold at once, the lower bound holds at whatever threshold the data chose.

For a target share (:func:`descend`) the audit sample is graded first, then the other pairs from the best
score down, a step at a time, until the lower bound reaches the target; if it never does, every pair is sent
(the filter keeps everything, and the bound is 100%).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
ALPHA = 0.05  # one minus the confidence of the stated lower bound


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


# --- the audit sample ------------------------------------------------------------------------------------


def strata_of(scores: Sequence[float], count: int) -> list[int]:
    """Each pair's band (0: the best scores): ``count`` bands of about equal size by the rank of the score, a
    tie never split (its pairs join the band of the first of them)."""
    if count < 1:
        raise ValueError("a cascade needs at least one band of scores")
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    bands = [0] * len(scores)
    for rank, i in enumerate(order):
        same = rank > 0 and scores[order[rank - 1]] == scores[i]
        bands[i] = bands[order[rank - 1]] if same else min(count - 1, rank * count // max(1, len(scores)))
    return bands


def audit_sizes(band_sizes: Sequence[int], share: float, minimum: int) -> list[int]:
    """Pairs audited per band: at least ``minimum`` and a share ``share`` of it, never more than it holds."""
    return [min(n, max(minimum, math.ceil(share * n))) for n in band_sizes]


def audit_sample(bands: Sequence[int], draws: Sequence[float], share: float, minimum: int) -> list[bool]:
    """Which pairs are audited: in each band the :func:`audit_sizes` pairs of lowest ``draws``."""
    members: dict[int, list[int]] = {}
    for i, band in enumerate(bands):
        members.setdefault(band, []).append(i)
    audited = [False] * len(bands)
    for index in members.values():
        [size] = audit_sizes([len(index)], share, minimum)
        for i in sorted(index, key=lambda j: (draws[j], j))[:size]:
            audited[i] = True
    return audited


@lru_cache(maxsize=4096)  # a descent asks again for the same band's bound at every step
def passes_bound(found: int, audited: int, size: int, alpha: float) -> int:
    """The one-sided ``1 - alpha`` upper confidence bound of the passes among ``size`` pairs, of which a simple
    random sample of ``audited`` held ``found``: the largest count of passes under which finding ``found`` or
    fewer has a chance above ``alpha`` (hypergeometric; exact when every pair was audited)."""
    from scipy.stats import hypergeom

    if audited >= size:
        return found
    low, high = found, size - (audited - found)  # the pairs audited and failed cannot be passes
    while low < high:  # the chance of finding <= found falls as the passes grow: the last one above alpha
        middle = (low + high + 1) // 2
        if float(hypergeom.cdf(found, size, middle, audited)) > alpha:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Band:
    """One band's pairs as a cascade graded them: how many, how many the audit drew (and of those how many the
    decider passed), how many other pairs the decider graded (and passed), and how many it was never asked."""

    size: int
    audited: int
    audit_passes: int
    sent: int  # kept pairs not drawn for the audit
    sent_passes: int

    @property
    def unasked(self) -> int:
        return self.size - self.audited - self.sent


@dataclass(frozen=True)
class KeptBound:
    """What the audit says of the decider's passes the filter lost: the passes the decider found, an upper
    bound of those lost, and the kept share's lower bound (all at 95% confidence, the bands together)."""

    found: int
    lost: int  # at most this many passes among the pairs the decider was not asked about
    calls: int  # pairs the decider graded
    pairs: int
    unasked: int

    @property
    def lower_bound(self) -> float:
        """The share of the decider's passes the cascade kept, at least (1.0 when nothing was filtered)."""
        return self.found / (self.found + self.lost) if self.found + self.lost else 1.0


def band_levels(count: int, alpha: float = ALPHA) -> list[float]:
    """The chance each of ``count`` bands (the best scores first) may exceed its bound: ``alpha / 2`` for the
    lowest band, ``alpha / 4`` for the next, and so on, the best band the rest (``alpha / 2 ** (count - 1)``),
    so that every band's bound holds at once with ``1 - alpha`` confidence and the low bands, whose pairs a
    filter leaves unasked, get the tighter bounds."""
    return [alpha / 2 ** min(count - i, count - 1) for i in range(count)]


def kept_bound(bands: Sequence[Band], alpha: float = ALPHA) -> KeptBound:
    """The kept share's lower bound over ``bands`` (see the module docstring), each band's passes bounded at
    its :func:`band_levels` chance, so that every band's bound holds at once with ``1 - alpha`` confidence."""
    lost = 0
    for band, level in zip(bands, band_levels(len(bands), alpha)):
        if band.unasked:
            bound = passes_bound(band.audit_passes, band.audited, band.size, level)
            lost += min(band.unasked, max(0, bound - band.audit_passes - band.sent_passes))
    found = sum(b.audit_passes + b.sent_passes for b in bands)
    return KeptBound(found=found, lost=lost, calls=sum(b.audited + b.sent for b in bands),
                     pairs=sum(b.size for b in bands), unasked=sum(b.unasked for b in bands))


def bands_of(bands: Sequence[int], audited: Sequence[bool], sent: Sequence[bool], passed: Sequence[bool],
             count: int) -> list[Band]:
    """The :class:`Band` figures of pairs given per pair: its band, whether it was audited, sent to the decider
    (audited or kept) and passed by it (False where it was not asked)."""
    figures = [[0, 0, 0, 0, 0] for _ in range(count)]
    for band, a, s, p in zip(bands, audited, sent, passed):
        row = figures[band]
        row[0] += 1
        if a:
            row[1] += 1
            row[2] += p
        elif s:
            row[3] += 1
            row[4] += p
    return [Band(*row) for row in figures]


# --- choosing the threshold ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Descent:
    """The threshold :func:`descend` chose, and what it cost."""

    threshold: float
    calls: int  # pairs sent to the decider (audit sample included)
    bound: KeptBound
    stopped: str | None = None  # why the descent stopped before reaching the target (e.g. max_cost)


Verdicts = Callable[[Sequence[int]], Sequence[bool | None]]


def descend(scores: Sequence[float], bands: Sequence[int], audited: Sequence[bool], decide: Verdicts, *,
            target: float, step: int, alpha: float = ALPHA) -> Descent:
    """Choose the highest threshold whose kept share's lower bound (:func:`kept_bound`) reaches ``target``.

    ``scores[i]`` is pair i's first-judge score, ``bands[i]`` its band and ``audited[i]`` whether the audit drew
    it. ``decide(indices)`` asks the decider about those pairs and returns, per pair, whether it passed (None:
    it could not be graded, or was not asked: the budget ran out; such a pair counts as no pass). The audit
    sample is decided first, then the other pairs from the highest score down, ``step`` pairs at a time (ties
    are never split), until the bound reaches ``target``; when it never does, every pair is sent."""
    if not 0 < target <= 1:
        raise ValueError("the target share must be in (0, 1]")
    count = max(bands, default=-1) + 1
    rows = [[0, 0, 0, 0, 0] for _ in range(count)]  # per band: Band's figures, kept up to date
    for band in bands:
        rows[band][0] += 1
    asked = 0

    def ask(indices: list[int]) -> bool:
        nonlocal asked
        answers = list(decide(indices))
        for i, v in zip(indices, answers):
            row = rows[bands[i]]
            row[1 if audited[i] else 3] += 1
            row[2 if audited[i] else 4] += bool(v)
        asked += len(indices)
        return len(answers) == len(indices) and all(v is not None for v in answers)

    def bound() -> KeptBound:
        return kept_bound([Band(*row) for row in rows], alpha)

    complete = ask([i for i, a in enumerate(audited) if a]) if any(audited) else True
    order = sorted((i for i, a in enumerate(audited) if not a), key=lambda i: -scores[i])
    position = 0
    boundary = max(scores, default=0.0) + 1.0  # nothing kept yet: every pair below the boundary
    found = bound()
    while complete and found.lower_bound < target and position < len(order):
        end = min(len(order), position + step)
        while end < len(order) and scores[order[end]] == scores[order[end - 1]]:
            end += 1  # a tie goes to the decider whole: the threshold cannot split it
        chunk = order[position:end]
        complete = ask(chunk)
        position = end
        boundary = scores[chunk[-1]]
        found = bound()
    if position >= len(order):  # everything was sent: the filter keeps every pair
        boundary = min(scores, default=0.0)
    stopped = None if complete else ("the decider stopped answering (a failure or max_cost) while the threshold "
                                     "was being chosen")
    return Descent(threshold=boundary, calls=asked, bound=found, stopped=stopped)


def describe(bound: KeptBound, decider: str, target: float | None) -> str:
    """The line every output of a cascade session states: the kept share's lower bound, the target, the calls
    (a target not reached is a warning of its own: sections/judge_notes.py)."""
    sent = f"{bound.calls:,} of {bound.pairs:,} pairs sent to {decider}"
    at = f" (target {100 * target:g}%)" if target is not None else ""
    return (f"cascade: kept ≥ {100 * bound.lower_bound:.1f}% of {decider}'s passes (95% lower bound){at}, {sent}; "
            f"the filter graded {bound.unasked:,} pairs 0 without a call")
