"""Which pairs ``exam-harness label`` asks, and the label lines it writes (docs/calibration.md, "The sample"):
the logic both the line prompt (cli/label.py) and any other screen call; no input is read here.

The population is every pair of the exam's pool (a run's passage or generated answer, on a test point of its
query), as a unit of its own (``pair``) or grouped by test point (``test-point``: one draw labels every pair of
the test point's pool, so that the answered indicator of each run on it is known: what corrected scores of
runs with several passages per test point need). Each unit's stratum:

- of a pair, ``grade G``: the first judge's grade of it (``not graded`` where it could not grade it);
- of a test point, how many passages of its pool the first judge passes (``no pass``, ``1 pass``, ``2-3
  passes``, ``4-7 passes``, ``8+ passes``): nearly every test point has some passage at the top grade, so its
  best grade would put most of them in one stratum;
- ``, judges disagree``: another judge whose grades the cache holds gives the pair (some pair of the test point)
  the other verdict, each judge at its own minimum grade.

The units are asked in the order of design.py (seeded square-root allocation over the strata). A unit whose
pairs are all labelled already (in any sample, or in no sample) joins the sample without being asked, so a
session that resumes asks nothing twice and draws the same sample for the same seed and population.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from exam_harness.analysis.label_design import Unit, members, population_id, sample_order
from exam_harness.analysis.label_file import Pair, TeamLabel, labels_of, with_counts
from exam_harness.core.models import Run


@dataclass(frozen=True)
class JudgeGrades:
    """One judge's grades of the pool's pairs and the grade its verdict begins at."""

    name: str
    grades: Mapping[Pair, int]
    min_grade: int


def _disagree(pair: Pair, first: JudgeGrades, others: Sequence[JudgeGrades]) -> bool:
    grade = first.grades.get(pair)
    if grade is None:
        return False
    verdict = grade >= first.min_grade
    return any((g := other.grades.get(pair)) is not None and (g >= other.min_grade) != verdict for other in others)


def unit_pairs(pairs: Iterable[Pair], unit: str) -> dict[Unit, list[Pair]]:
    """unit -> its pairs (sorted), for units of kind ``unit``."""
    out: dict[Unit, list[Pair]] = {}
    for pair in sorted(set(pairs)):
        out.setdefault(pair if unit == "pair" else (pair[1],), []).append(pair)
    return out


PASS_BUCKETS = ((0, "no pass"), (1, "1 pass"), (3, "2-3 passes"), (7, "4-7 passes"))


def _passes(count: int) -> str:
    return next((name for most, name in PASS_BUCKETS if count <= most), "8+ passes")


def strata_of(units: Mapping[Unit, Sequence[Pair]], first: JudgeGrades, others: Sequence[JudgeGrades]
              ) -> dict[Unit, str]:
    """Each unit's stratum (module docstring)."""
    out: dict[Unit, str] = {}
    for unit, pairs in units.items():
        grades = [g for p in pairs if (g := first.grades.get(p)) is not None]
        if len(unit) == 1:  # a test point
            name = _passes(sum(g >= first.min_grade for g in grades)) if grades else "not graded"
        else:
            name = "not graded" if not grades else f"grade {grades[0]}"
        if any(_disagree(p, first, others) for p in pairs):
            name += ", judges disagree"
        out[unit] = name
    return out


@dataclass
class Draw:
    """One session's draw: the sample, the pairs to ask in order, the units that join without being asked."""

    sample: str
    unit: str
    units: Mapping[Unit, Sequence[Pair]]
    strata: Mapping[Unit, str]
    asked: list[Pair]  # the pairs to ask, unit after unit
    adopted: list[Unit]  # drawn units whose pairs were all labelled before
    drawn: list[Unit] = field(default_factory=list)  # every unit drawn this session, in order

    @property
    def sizes(self) -> dict[str, int]:
        return {stratum: len(units) for stratum, units in members(self.strata).items()}


def answer_passages(runs: Iterable[Run]) -> set[str]:
    """The passages that only runs of generated answers rank: their answers' segments (labelled as answers)."""
    ranked: set[str] = set()
    answers: set[str] = set()
    for run in runs:
        ids = {entry.passage_id for entries in run.rankings.values() for entry in entries}
        (answers if run.generated else ranked).update(ids)
    return answers - ranked


def sample_id(unit: str, seed: int, strata: Mapping[Unit, str]) -> str:
    return f"{unit}s/seed={seed}/{population_id(strata)}"


def draw(pairs: Iterable[Pair], unit: str, seed: int, first: JudgeGrades, others: Sequence[JudgeGrades],
         earlier: Sequence[TeamLabel], size: int) -> Draw:
    """The next units of the sample of ``unit`` and ``seed`` over ``pairs`` until ``size`` units of the sample
    are labelled (or will be, once the pairs asked are answered)."""
    units = unit_pairs(pairs, unit)
    strata = strata_of(units, first, others)
    name = sample_id(unit, seed, strata)
    known = labels_of(earlier)
    done = {label.unit_id for label in earlier if label.sample == name and label.inclusion is not None}
    count = len(done)
    found = Draw(name, unit, units, strata, [], [])
    for drawn in sample_order(strata, seed):
        if count >= size:
            break
        if drawn in done:
            continue
        found.drawn.append(drawn)
        missing = [p for p in units[drawn] if p not in known]
        if not missing:
            found.adopted.append(drawn)
        else:  # the pairs of a test point in a seeded order: the pool's order would tell the judge's ranking
            random.Random(f"{seed}/{'/'.join(drawn)}").shuffle(missing)
            found.asked += missing
        count += 1
    return found


def finish(found: Draw, earlier: Sequence[TeamLabel], given: Mapping[Pair, bool], *,
           query_of: Callable[[str], str], source_of: Callable[[str], str], shown: bool) -> list[TeamLabel]:
    """Every label line once the session ends: the earlier lines, a line of the sample for each pair of a unit
    drawn that is labelled now (given this session or before; each unit complete only when all its pairs are),
    and every line of the sample with its stratum's counts (labelfile.with_counts)."""
    known = {**labels_of(earlier), **given}
    before = {label.pair: label for label in earlier}
    in_sample = {label.pair for label in earlier if label.sample == found.sample}
    lines = list(earlier)
    for unit in found.drawn:
        for pair in found.units[unit]:
            if pair in known and pair not in in_sample:
                passage, tp = pair
                origin = before.get(pair)
                lines.append(TeamLabel(query_of(tp), tp, passage, known[pair], found.sample, found.unit,
                                       stratum=found.strata[unit], stratum_size=0, stratum_labelled=0,
                                       source=source_of(passage),
                                       shown=origin.shown if origin is not None else shown,
                                       kind=origin.kind if origin is not None else None))
                in_sample.add(pair)
    complete = [u for u in found.units if all(p in known for p in found.units[u])
                and all(p in in_sample for p in found.units[u])]
    return with_counts(lines, found.sample, found.strata, found.sizes, complete)
