"""Where an evaluation's grades come from: a recorded grading run, or a grader through the cache.

:func:`replay` reads the chosen recorded grading run straight from :class:`ExamData.recorded`
(no grader objects, no per-pair models: the fast path of ``exam-harness evaluate``).
:func:`regrade` grades every (pool passage, test point) pair with any registered grader through
:func:`exam_harness.grading.run_grading_pass` and the grade cache, so a second run is all hits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from exam_harness.cache import GradeCache
from exam_harness.evaluation.inputs import (
    ExamView,
    GradingRun,
    Pair,
    choose_grading_run,
    recorded_grades,
    view_from_banks,
    view_from_recorded,
)
from exam_harness.graders.base import Grader
from exam_harness.models import ExamData, Grade, QueryBank


class GradingSummary(BaseModel):
    """How the grades of an evaluation were obtained (written into the JSON result)."""

    source: str  # "recorded" or "grader"
    grader: dict[str, Any] = {}
    pairs: int = 0
    unique_pairs: int = 0
    cache_hits: int = 0
    graded: int = 0
    failures: int = 0
    seconds: float = 0.0
    failure_examples: list[str] = []


@dataclass
class GradeTable:
    """Grades (0..5) and extracted answers per (passage, test point) pair, with their provenance."""

    grades: dict[Pair, int]
    answers: dict[Pair, str | None] = field(default_factory=dict)
    summary: GradingSummary = field(default_factory=lambda: GradingSummary(source="recorded"))
    failures: dict[Pair, str] = field(default_factory=dict)
    # whether the grades are self-ratings on a 0..5 scale (binary graders give 0/1)
    max_grade: int = 5
    default_min_grade: int = 4


def replay(
    data: ExamData,
    *,
    llm: str | None = None,
    prompt_class: str | None = None,
    banks: Sequence[QueryBank] | None = None,
) -> tuple[ExamView, GradeTable]:
    """The exam and grades of one recorded grading run (chosen by llm / prompt class).

    With ``banks`` the test points are the banks'; bank pairs without a recorded grade are
    reported as failures (they count as uncovered), recorded grades of other test points ignored.
    """
    run: GradingRun = choose_grading_run(data, llm, prompt_class)
    grades, answers = recorded_grades(data, run)
    if banks:
        view = view_from_banks(data, banks, grades)
        failures = _missing_pairs(view, grades)
        keep = view.query_of()
        grades = {pair: g for pair, g in grades.items() if pair[1] in keep}
    else:
        view = view_from_recorded(data, grades)
        failures = _missing_pairs(view, grades)
    summary = GradingSummary(
        source="recorded",
        grader={"name": "recorded", "model": run[0], "prompt_class": run[1]},
        pairs=sum(len(view.pool[q]) * len(view.test_points[q]) for q in view.queries),
        unique_pairs=len(grades),
        failures=len(failures),
        failure_examples=[f"no recorded grade for passage {p} on {t}" for p, t in list(failures)[:3]],
    )
    table = GradeTable(grades=grades, answers=answers, summary=summary, failures=failures)
    return view, table


def _missing_pairs(view: ExamView, grades: Mapping[Pair, int]) -> dict[Pair, str]:
    """Pool pairs without a grade. A bank-less replay's pool is what the grades cover, but a
    passage judged for a query may still lack grades on some test points."""
    missing: dict[Pair, str] = {}
    for qid in view.queries:
        for pid in view.pool[qid]:
            for tid in view.test_points[qid]:
                if (pid, tid) not in grades:
                    missing[(pid, tid)] = "no recorded grade"
    return missing


ProgressFactory = Callable[[str], Any]


def regrade(
    data: ExamData,
    banks: Sequence[QueryBank],
    grader: Grader,
    cache: GradeCache,
    *,
    k: int = 20,
    chunk_size: int | None = None,
    progress: ProgressFactory | None = None,
    only_queries: set[str] | None = None,
) -> tuple[ExamView, GradeTable]:
    """Grade every (pool passage, test point) pair of ``banks`` with ``grader`` through ``cache``.

    The pool of a query is every passage the files hold for it (judged, ranked, graded) plus every
    run's top-k. ``progress(label)`` returns a context manager with ``start(total)`` and
    ``advance(n)`` (e.g. :class:`exam_harness.evaluation.render.ProgressBar`).
    ``only_queries`` restricts grading to those queries (the bank edit impact uses it).
    """
    from exam_harness.grading import pool_pairs, run_grading_pass

    view = view_from_banks(data, banks)
    chosen = [b for b in banks if only_queries is None or b.query.id in only_queries]
    requests = pool_pairs(chosen, data.runs.values(), data.passages, k=k, extra=view.pool)
    spec = grader.spec()
    size = chunk_size or getattr(grader, "chunk_size", None) or 256
    if progress is not None:
        with progress(f"grading with {grader.name}") as bar:
            outcome = run_grading_pass(grader, requests, cache, chunk_size=size, on_start=bar.start, on_progress=bar.advance)
    else:
        outcome = run_grading_pass(grader, requests, cache, chunk_size=size)
    grades = {pair: g.grade for pair, g in outcome.grades.items()}
    answers = {pair: _answer_of(g) for pair, g in outcome.grades.items()}
    failures = dict(outcome.failures)
    failures.update(
        {(r.passage.id, r.test_point.id): f"unsupported: {outcome.unsupported[r.test_point.id]}"
         for r in requests if r.test_point.id in outcome.unsupported}
    )
    summary = GradingSummary(
        source="grader",
        grader=spec.model_dump(mode="json"),
        pairs=outcome.pairs,
        unique_pairs=outcome.unique,
        cache_hits=outcome.cache_hits,
        graded=outcome.graded,
        failures=len(failures),
        seconds=round(outcome.seconds, 3),
        failure_examples=[f"{p} on {t}: {msg}" for (p, t), msg in list(failures.items())[:3]],
    )
    table = GradeTable(
        grades=grades,
        answers=answers,
        summary=summary,
        failures=failures,
        max_grade=spec.max_grade,
        default_min_grade=spec.default_min_grade,
    )
    return view, table


def _answer_of(grade: Grade) -> str | None:
    return grade.extracted_answer if grade.extracted_answer is not None else grade.raw_response
