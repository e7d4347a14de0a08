"""The result document's core, built once for both front ends: ``measures[]``, each run's mean and standard
error of every measure (``systems[]``), where asked every measure's value per run and query
(``per_query[]``), and the registered sections (``sections``).

The pytest session (report/build.py) and ``exam-harness evaluate`` (report/evaluation.py) score the exam
with results/scoring.py and call :func:`build` with what it returned, so the same inputs give the same
core; each adds only its envelope's fields (the session: outcomes, grade counts, fallbacks, the
verdict; evaluate: settings, collection, leaderboards). :func:`build` reads the scoring's result only,
never the scoring context.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pydantic import BaseModel

from exam_harness.core.models import Run
from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure
from exam_harness.measures.exam import ExamCover
from exam_harness.measures.result import ExamResult
from exam_harness.results.schema import MeasureInfo, QueryScore, Score, SystemScore
from exam_harness.results.scored import Scored
from exam_harness.results.sections import Section, compute_sections


@dataclass(frozen=True)
class DocumentCore:
    """What both front ends' documents hold alike (results/schema.py names each field)."""

    measures: list[MeasureInfo]
    systems: list[SystemScore]
    per_query: list[QueryScore]
    sections: dict[str, BaseModel]


def build(scored: Scored, *, per_query: bool, unanswered: Mapping[str, Collection[str]] | None = None,
          session: Callable[[str], Mapping[str, Any]] | None = None,
          sections: Registry[Section] | None = None) -> DocumentCore:
    """The document's core from ``scored`` (results/scoring.py: score_exam).

    A query is incomplete for a run where some measure's value rests on a pair that could not be graded,
    where a feature says the run holds no answer for it (hook ``pytest_exam_unanswered``: a live system failed
    on it), or where the front end says it is (``unanswered``: run -> queries, runs past
    ``--exam-max-fallbacks``). ``session(run)`` gives the session-only fields of the run's ``SystemScore``;
    ``sections``: the registry computed (the active one by default).
    """
    from exam_harness.core.host import active_hook

    failed: dict[str, set[str]] = {run: set(queries) for run, queries in (unanswered or {}).items()}
    for said in active_hook().pytest_exam_unanswered(scored=scored):
        for run, queries in (said or {}).items():
            failed.setdefault(run, set()).update(queries)
    covered = ExamCover(k=scored.plan.k, min_grade=scored.taus[0]) if per_query else None
    systems, rows = result_core(scored.result, scored.measures, scored.runs, covered=covered, unanswered=failed,
                                session=session)
    return DocumentCore(measures=measure_infos(scored.measures, scored.taus), systems=systems, per_query=rows,
                        sections=compute_sections(scored, sections))


def result_core(result: ExamResult, measures: Sequence[Measure], runs: Mapping[str, Run], *,
                covered: Measure | None, unanswered: Mapping[str, Collection[str]] | None = None,
                session: Callable[[str], Mapping[str, Any]] | None = None,
                ) -> tuple[list[SystemScore], list[QueryScore]]:
    """``systems[]`` and ``per_query[]`` (empty when ``covered`` is None) of ``measures`` scored in ``result``,
    queries in id order.

    A query is incomplete for a run where some measure's value rests on a pair that could not be graded,
    or where ``unanswered`` (run -> queries) names it; a row's ``covered`` counts the test points the
    measure ``covered`` (EXAM-Cover at the first tau) covers; ``session(run)`` gives the session-only
    fields of the run's ``SystemScore``.
    """
    named = [(str(m), result[m]) for m in measures]  # each result looked up once (a lookup prints the measure)
    # rows in query id order whatever order scoring took (evaluate's exam order decides bootstrap draws)
    queries = sorted(result.queries)
    unanswered = unanswered or {}
    incomplete = {run: set().union(*(set(r.incomplete.get(run, ())) for _, r in named), unanswered.get(run, ()))
                  for run in result.runs}
    systems: list[SystemScore] = []
    rows: list[QueryScore] = []
    for run in result.runs:
        run_incomplete = incomplete[run]
        held = [(name, r.scores[run]) for name, r in named if run in r.scores]
        systems.append(SystemScore(
            run=run, generated=runs[run].generated, queries=len(result.queries),
            scores={name: Score(mean=value.mean, stderr=value.stderr) for name, value in held},
            incomplete_queries=[q for q in queries if q in run_incomplete],
            **(session(run) if session is not None else {}),
        ))
        if covered is None:
            continue
        run_cover = result[covered].per_query[run]
        run_values = [(name, r.per_query.get(run, {})) for name, r in named]
        for q in queries:
            bank = len(result.test_points[q])
            rows.append(QueryScore(
                run=run, query_id=q, covered=round(run_cover[q] * bank), test_points=bank,
                scores={name: values[q] for name, values in run_values if q in values},
                incomplete=q in run_incomplete,
            ))
    return systems, rows


def measure_infos(measures: Sequence[Measure], taus: Sequence[int] = ()) -> list[MeasureInfo]:
    """How the document names each measure. Titles that would read the same within a table (n-EXAM@20 at
    two taus) get the parameters that tell them apart: ``n-EXAM@20 (tau=3)``. Where several taus are
    scored (``evaluate``), the views show each of them beside the titles, so measures at those taus keep
    their plain titles."""
    infos = [MeasureInfo.of(m) for m in measures]
    shown = set(taus) if len(taus) > 1 else set()
    groups: dict[tuple[str | None, str, int | None], list[int]] = {}
    for i, info in enumerate(infos):
        groups.setdefault((info.label, info.title, info.min_grade if info.min_grade in shown else None),
                          []).append(i)
    for same in (ids for ids in groups.values() if len(ids) > 1):
        for i in same:
            differ = [f.name for f in fields(measures[i])
                      if len({repr(getattr(measures[j], f.name, None)) for j in same}) > 1]
            shown_params = ",".join(f"{measures[i].printed.get(n, n)}={getattr(measures[i], n)}" for n in differ)
            infos[i] = infos[i].model_copy(update={"title": f"{infos[i].title} ({shown_params})"})
    return infos
