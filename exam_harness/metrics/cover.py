"""EXAM-Cover@k(tau) and its normalised form n-EXAM (METHOD.md, Phase 4).

EXAM-Cover of a run on query q = |{r in R_q : some passage of the run's top-k has grade(p, r) >= tau}|
/ |R_q|. n-EXAM divides instead by the *overall* cover: the test points of R_q that any passage of
the pool covers (the union of every run's top-k, plus optional extra passages such as judged ones).

Query rules, shared by every function here:
- a query of the bank that the run did not answer scores 0 (it is still an exam question asked);
- a query the run answered but the bank does not contain is ignored (nothing to examine);
- a query whose bank is empty is left out (no test point to cover, the ratio is undefined).

n-EXAM leaves out queries whose overall cover is empty: nobody covered anything, so the
normalised score is undefined there and a 0 would only shrink every run's mean alike.
The reference Workbench (exam_cover_metric.py) scores those queries 0 (``frac`` with a zero
denominator); pass ``empty="zero"`` to reproduce that.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from exam_harness.errors import InputError
from exam_harness.metrics._checks import Grades, check_k, check_min_grade, check_missing, grade_of
from exam_harness.metrics.stats import mean_stderr

Ranking = Mapping[str, Sequence[str]]
TestPoints = Mapping[str, Sequence[str]]
EmptyPolicy = Literal["exclude", "zero"]


def passage_coverage(
    query_id: str,
    passage_ids: Iterable[str],
    test_point_ids: Iterable[str],
    grades: Grades,
    *,
    min_grade: int,
    missing: str = "error",
) -> dict[str, frozenset[str]]:
    """Per passage, the test points (of one query) it covers: grade >= min_grade."""
    check_min_grade(min_grade)
    check_missing(missing)
    tps = list(dict.fromkeys(test_point_ids))
    coverage: dict[str, frozenset[str]] = {}
    for pid in passage_ids:
        if pid in coverage:
            continue
        coverage[pid] = frozenset(
            tp for tp in tps if grade_of(grades, pid, tp, query_id, missing) >= min_grade
        )
    return coverage


def _covered(
    query_id: str,
    passage_ids: Iterable[str],
    bank: Collection[str],
    grades: Grades,
    min_grade: int,
    missing: str,
) -> set[str]:
    covered: set[str] = set()
    for pid in dict.fromkeys(passage_ids):
        for tp in bank:
            if tp not in covered and grade_of(grades, pid, tp, query_id, missing) >= min_grade:
                covered.add(tp)
    return covered


def _check_empty(empty: str) -> None:
    if empty not in ("exclude", "zero"):
        raise InputError(
            "unknown policy for queries nobody covers", field="empty", value=empty, expected="'exclude' or 'zero'"
        )


def _bank(test_points: TestPoints) -> dict[str, list[str]]:
    """Queries with a non-empty bank -> their distinct test point ids, in bank order."""
    return {qid: list(dict.fromkeys(tps)) for qid, tps in test_points.items() if tps}


def covered_test_points(
    ranking: Ranking,
    test_points: TestPoints,
    grades: Grades,
    *,
    k: int,
    min_grade: int,
    missing: str = "error",
) -> dict[str, set[str]]:
    """Per query of the bank, the test points that some passage of the run's top-k covers."""
    check_k(k)
    check_min_grade(min_grade)
    check_missing(missing)
    return {
        qid: _covered(qid, list(ranking.get(qid, ()))[:k], bank, grades, min_grade, missing)
        for qid, bank in _bank(test_points).items()
    }


def exam_cover(
    ranking: Ranking,
    test_points: TestPoints,
    grades: Grades,
    *,
    k: int,
    min_grade: int,
    missing: str = "error",
) -> dict[str, float]:
    """EXAM-Cover@k(tau) per query of the bank (unanswered queries score 0)."""
    covered = covered_test_points(ranking, test_points, grades, k=k, min_grade=min_grade, missing=missing)
    return _exam_from(covered, _bank(test_points))


def _exam_from(covered: Mapping[str, set[str]], banks: Mapping[str, list[str]]) -> dict[str, float]:
    return {qid: len(tps) / len(banks[qid]) for qid, tps in covered.items()}


def overall_cover(
    rankings: Mapping[str, Ranking],
    test_points: TestPoints,
    grades: Grades,
    *,
    k: int,
    min_grade: int,
    extra_passages: Mapping[str, Iterable[str]] | None = None,
    missing: str = "error",
) -> dict[str, set[str]]:
    """Per query of the bank, the test points covered by any passage of any run's top-k.

    ``extra_passages`` (query -> passage ids, e.g. the judged passages) join the pool, as the
    reference Workbench normalises over every graded passage of the query.
    """
    check_k(k)
    check_min_grade(min_grade)
    check_missing(missing)
    result: dict[str, set[str]] = {}
    for qid, bank in _bank(test_points).items():
        pool: list[str] = []
        for ranking in rankings.values():
            pool.extend(list(ranking.get(qid, ()))[:k])
        if extra_passages is not None:
            pool.extend(extra_passages.get(qid, ()))
        result[qid] = _covered(qid, pool, bank, grades, min_grade, missing)
    return result


def n_exam_cover(
    ranking: Ranking,
    test_points: TestPoints,
    grades: Grades,
    *,
    k: int,
    min_grade: int,
    overall: Mapping[str, Collection[str]],
    empty: EmptyPolicy = "exclude",
    missing: str = "error",
) -> dict[str, float]:
    """n-EXAM per query: covered test points / overall cover (see the module docstring for ``empty``).

    ``overall`` must come from :func:`overall_cover` over rankings that include this run (and the
    same k and min_grade); a run covering a test point outside it is an error, not a score above 1.
    """
    _check_empty(empty)
    covered = covered_test_points(ranking, test_points, grades, k=k, min_grade=min_grade, missing=missing)
    return _n_exam_from(covered, overall, empty)


def _n_exam_from(
    covered: Mapping[str, set[str]], overall: Mapping[str, Collection[str]], empty: str
) -> dict[str, float]:
    result: dict[str, float] = {}
    for qid, tps in covered.items():
        pool_cover = set(overall.get(qid, ()))
        outside = tps - pool_cover
        if outside:
            raise InputError(
                f"the run covers test points of query {qid!r} outside the overall cover",
                field="overall",
                value=sorted(outside)[:3],
                expected="overall_cover() computed over rankings that include this run, with the same k and min_grade",
            )
        if pool_cover:
            result[qid] = len(tps) / len(pool_cover)
        elif empty == "zero":
            result[qid] = 0.0
    return result


@dataclass(frozen=True)
class RunCover:
    """EXAM and n-EXAM of one run: per query and mean with standard error."""

    exam_per_query: dict[str, float]
    n_exam_per_query: dict[str, float]
    exam: float
    exam_stderr: float
    n_exam: float
    n_exam_stderr: float


def cover_scores(
    rankings: Mapping[str, Ranking],
    test_points: TestPoints,
    grades: Grades,
    *,
    k: int,
    min_grade: int,
    extra_passages: Mapping[str, Iterable[str]] | None = None,
    empty: EmptyPolicy = "exclude",
    missing: str = "error",
) -> dict[str, RunCover]:
    """EXAM and n-EXAM of every run, normalising n-EXAM by the pool of all ``rankings``."""
    _check_empty(empty)
    banks = _bank(test_points)
    overall = overall_cover(
        rankings, test_points, grades, k=k, min_grade=min_grade, extra_passages=extra_passages, missing=missing
    )
    result: dict[str, RunCover] = {}
    for run, ranking in rankings.items():
        covered = covered_test_points(ranking, test_points, grades, k=k, min_grade=min_grade, missing=missing)
        exam = _exam_from(covered, banks)
        n_exam = _n_exam_from(covered, overall, empty)
        exam_mean, exam_se = mean_stderr(exam.values())
        n_mean, n_se = mean_stderr(n_exam.values())
        result[run] = RunCover(exam, n_exam, exam_mean, exam_se, n_mean, n_se)
    return result
