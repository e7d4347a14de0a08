"""EXAM-Cover@k(tau) and n-EXAM from per-passage coverage (the method's phase 4).

A passage *covers* a test point when its grade on it reaches tau. EXAM-Cover of a run on query q =
|test points some passage of the run's top-k covers| / |R_q|; n-EXAM divides instead by the test
points that any passage of the pool covers (the *overall* cover). Coverage is computed once per
passage and tau (:func:`passage_coverage`) and shared by every run and every measure that needs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from exam_harness.measures._checks import Grades, check_min_grade

Coverage = Mapping[str, frozenset[str]]  # passage id -> test points it covers


def passage_coverage(
    grades: Grades, bank: Sequence[str], passages: Iterable[str], *, min_grade: int
) -> dict[str, frozenset[str]]:
    """Per passage, the test points of ``bank`` it covers (grade >= min_grade; no grade counts 0)."""
    check_min_grade(min_grade)
    tps = list(dict.fromkeys(bank))
    grade = grades.get
    coverage: dict[str, frozenset[str]] = {}
    for pid in passages:
        if pid not in coverage:
            coverage[pid] = frozenset([t for t in tps if grade((pid, t), 0) >= min_grade])
    return coverage


def covered_by(coverage: Coverage, passages: Iterable[str]) -> set[str]:
    """The test points that some of ``passages`` covers (each passage must be in ``coverage``): the
    union of the per-passage sets, in one call per (run, query)."""
    return set().union(*map(coverage.__getitem__, passages))
