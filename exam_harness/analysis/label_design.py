"""The stratified sample a team labels (docs/calibration.md, "The sample"): the order units are asked in and
the inclusion probability of each labelled one. Pure: no file, no grader.

A unit is what one draw labels: a (passage, test point) pair, or a test point with every pair of its pool.
Each unit falls in one stratum (sampling.py names them: the judge's grade, whether the judges disagree).
Within a stratum the units are shuffled by a seed; across strata the j-th unit of stratum h (0-based) is
asked at priority (j + 1/2) / sqrt(N_h), N_h the stratum's size, ties broken by the stratum's name. However
many units are asked, each stratum then holds a share of them about proportional to sqrt(N_h)
(square-root allocation): a rare stratum (a judge's few confident grades) is not left nearly unlabelled as
under proportional allocation, and a large one is not weighted as poorly as under equal allocation. A stratum
that runs out leaves its turns to the others.

The order does not depend on how many units are asked, so a session that stops and one that resumes draw the
same sample: the first n_h units of stratum h's shuffle are a simple random sample of the stratum, and each
labelled one's inclusion probability is n_h / N_h.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Unit = tuple[str, ...]  # (passage id, test point id) for a pair, (test point id,) for a test point


def shuffled(units: Sequence[Unit], seed: int, stratum: str) -> list[Unit]:
    """``units`` in the seeded order of ``stratum`` (the same for the same seed, stratum and units)."""
    ordered = sorted(units)
    random.Random(f"{seed}/{stratum}").shuffle(ordered)
    return ordered


def members(strata: Mapping[Unit, str]) -> dict[str, list[Unit]]:
    """stratum -> its units, strata in name order."""
    found: dict[str, list[Unit]] = {}
    for unit, stratum in strata.items():
        found.setdefault(stratum, []).append(unit)
    return dict(sorted(found.items()))


def sample_order(strata: Mapping[Unit, str], seed: int) -> list[Unit]:
    """Every unit in the order it is asked (module docstring)."""
    keyed: list[tuple[float, str, int]] = []
    order: dict[str, list[Unit]] = {}
    for stratum, units in members(strata).items():
        order[stratum] = shuffled(units, seed, stratum)
        rate = math.sqrt(len(units))
        keyed += [((j + 0.5) / rate, stratum, j) for j in range(len(units))]
    keyed.sort()
    return [order[stratum][j] for _, stratum, j in keyed]


def population_id(strata: Mapping[Unit, str]) -> str:
    """A short digest of the units and their strata: a sample is resumed only over the same population."""
    digest = hashlib.sha256()
    for unit, stratum in sorted(strata.items()):
        digest.update("\x1f".join(unit).encode("utf-8") + b"\x1e" + stratum.encode("utf-8") + b"\x1d")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class StratumCount:
    """A stratum's size and how many of its units are labelled."""

    size: int
    labelled: int

    @property
    def inclusion(self) -> float:
        return self.labelled / self.size if self.size else 0.0


def stratum_counts(strata: Mapping[Unit, str], labelled: Sequence[Unit]) -> dict[str, StratumCount]:
    """stratum -> its size and labelled units (``labelled``: units of the population, each once)."""
    sizes = {stratum: len(units) for stratum, units in members(strata).items()}
    done: dict[str, int] = dict.fromkeys(sizes, 0)
    for unit in labelled:
        done[strata[unit]] += 1
    return {stratum: StratumCount(size, done[stratum]) for stratum, size in sizes.items()}
