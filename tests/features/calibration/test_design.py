"""The sample's order (features/calibration/design.py): seeded, resumable, square-root allocation."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from exam_harness.analysis.label_design import population_id, sample_order, stratum_counts


def _strata(sizes: dict[str, int]) -> dict[tuple[str, ...], str]:
    return {(f"{name}-{i}",): name for name, size in sizes.items() for i in range(size)}


def test_the_order_is_the_same_for_the_same_seed_and_another_for_another() -> None:
    strata = _strata({"grade 0": 300, "grade 5": 20, "grade 3": 40})
    assert sample_order(strata, 3) == sample_order(dict(reversed(list(strata.items()))), 3)
    assert sample_order(strata, 3) != sample_order(strata, 4)
    assert sorted(sample_order(strata, 3)) == sorted(strata)


def test_every_prefix_holds_each_stratum_about_in_proportion_to_the_root_of_its_size() -> None:
    sizes = {"grade 0": 900, "grade 5": 25, "grade 3": 100}
    order = sample_order(_strata(sizes), 0)
    for asked in (30, 60, 100):
        held = Counter(unit[0].split("-")[0] for unit in order[:asked])
        roots = {name: math.sqrt(size) for name, size in sizes.items()}
        for name, root in roots.items():
            assert abs(held[name] - asked * root / sum(roots.values())) <= 1.0
    # a stratum that runs out leaves its turns to the others
    held = Counter(unit[0].split("-")[0] for unit in order[:500])
    assert held["grade 5"] == 25 and held["grade 3"] == 100


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 30), min_size=1), st.integers(0, 9),
       st.integers(0, 120))
def test_within_a_stratum_the_asked_units_are_a_prefix_of_its_shuffle(sizes: dict[str, int], seed: int,
                                                                      asked: int) -> None:
    strata = _strata(sizes)
    order = sample_order(strata, seed)
    first = order[:asked]
    counts = stratum_counts(strata, first)
    for name, count in counts.items():
        mine = [u for u in order if strata[u] == name]
        assert [u for u in first if strata[u] == name] == mine[: count.labelled]
        assert count.size == sizes[name] and math.isclose(count.inclusion, count.labelled / sizes[name])


def test_the_population_id_names_the_units_and_their_strata() -> None:
    strata = _strata({"a": 3, "b": 2})
    assert population_id(strata) == population_id(dict(sorted(strata.items())))
    moved = {**strata, ("a-0",): "b"}
    assert population_id(moved) != population_id(strata)
