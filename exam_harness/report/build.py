"""The pytest session's report, built by a pure function from the inputs, the outcome and the plan.

The scores are a view of the one scoring pipeline's :class:`~exam_harness.measures.result.ExamResult`:
the plan's measures at its tau, each system's EXAM-Cover, n-EXAM, nugget F and trec_eval measures per
qrels label variant, per query and aggregated.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exam_harness import __version__
from exam_harness.display import shorten
from exam_harness.grading import GradingOutcome
from exam_harness.inputs import ExamInputs, view_from_banks
from exam_harness.measures.base import Score as MeasureScore
from exam_harness.measures.context import ScoringContext
from exam_harness.measures.exam import ExamCover, NExam, NuggetF
from exam_harness.measures.pipeline import score
from exam_harness.measures.qrels import Qrels, qrels_file_name, relevance_level
from exam_harness.measures.result import ExamResult
from exam_harness.measures.trec import TrecMeasure
from exam_harness.models import QueryBank
from exam_harness.plan import ExamPlan
from exam_harness.report.schema import (
    CacheSummary,
    ExamReport,
    Outcomes,
    QrelsFile,
    QueryScore,
    Score,
    Settings,
    SystemScore,
    TestPointOutcome,
)
from exam_harness.verdicts import verdict


@dataclass(frozen=True)
class SessionOutcome:
    """What a session produced: the grades, the banks it scored and each run's case outcomes."""

    grading: GradingOutcome
    banks: Sequence[QueryBank]
    tallies: Mapping[str, Outcomes] = field(default_factory=dict)
    cache_path: str | None = None
    partial: str | None = None  # why the session covered part of the exam only


@dataclass(frozen=True)
class BuiltReport:
    """The report and the qrels behind its qrels files (file name -> labels)."""

    report: ExamReport
    qrels: Mapping[str, Qrels]
    result: ExamResult


def build_report(inputs: ExamInputs, outcome: SessionOutcome, plan: ExamPlan, *, root: Path | None = None,
                 run_paths: Sequence[Path] = ()) -> BuiltReport:
    """Score ``outcome``'s banks at the plan's tau and describe everything as an :class:`ExamReport`.

    Paths in the report are shown relative to ``root`` where they lie below it. Pure: no file is written.
    """
    grading = outcome.grading
    view = view_from_banks(inputs.data, outcome.banks, exclude=grading.unsupported)
    tau = plan.min_grade
    ctx = ScoringContext(view.scoring_input(grading.grades, responses=inputs.responses, sort_queries=True,
                                            failed=grading.failures.keys(), tie_order=plan.tie_order))
    bindings = plan.bindings(tau)
    cover, n_exam = ExamCover().bind(bindings), NExam().bind(bindings)
    nugget = NuggetF().bind(bindings) if any(ctx.exam.nuggets.values()) else None
    trec = {label: [TrecMeasure(name=name, label=label).bind(bindings) for name in plan.trec_measures]
            for label in plan.labels}
    measures = [cover, n_exam, *([nugget] if nugget else []), *(m for ms in trec.values() for m in ms)]
    result = score(ctx, measures)

    incomplete = {run: set().union(*(set(result[m].incomplete.get(run, ())) for m in measures)) for run in result.runs}
    systems: list[SystemScore] = []
    per_query: list[QueryScore] = []
    for run in result.runs:
        c, n = result[cover].scores[run], result[n_exam].scores[run]
        systems.append(SystemScore(
            run=run,
            generated=inputs.data.runs[run].generated,
            queries=len(result.queries),
            exam_cover=c.mean, exam_cover_stderr=c.stderr,
            n_exam_cover=n.mean, n_exam_cover_stderr=n.stderr,
            nugget_f=_score(result[nugget].scores[run]) if nugget else None,
            qrels_measures={label: {m.key: _score(result[m].scores[run]) for m in ms} for label, ms in trec.items()},
            outcomes=outcome.tallies.get(run, Outcomes()),
            incomplete_queries=[q for q in result.queries if q in incomplete[run]],
            grade_counts=grade_counts(inputs.data.runs[run].top_k, outcome, plan.k),
        ))
        for q in result.queries:
            exam = result[cover].per_query[run][q]
            bank = len(result.test_points[q])
            per_query.append(QueryScore(
                run=run, query_id=q, exam_cover=exam, n_exam_cover=result[n_exam].per_query[run].get(q),
                covered=round(exam * bank), test_points=bank,
                nugget_f=result[nugget].per_query[run].get(q) if nugget else None,
                qrels_measures={label: {m.key: result[m].per_query[run][q] for m in ms} for label, ms in trec.items()},
                incomplete=q in incomplete[run],
            ))
    qrels = exam_qrels(ctx, plan, [tau])
    report = ExamReport(
        tool_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        settings=Settings(
            grader=plan.grader, k=plan.k, min_grade=tau, qrels_m=plan.qrels_m, pool=plan.pool,
            measures=list(plan.trec_measures), label_variants=list(plan.labels),
            banks=sorted({_rel(b.source, root) for b in outcome.banks}),
            runs=[_rel(p, root) for p in run_paths],
        ),
        cache=CacheSummary(
            path=outcome.cache_path, pairs=grading.pairs, unique_pairs=grading.unique, hits=grading.cache_hits,
            misses=grading.cache_misses, graded=grading.graded, failures=len(grading.failures),
            grading_seconds=round(grading.seconds, 3),
        ),
        queries=len({b.query.id for b in outcome.banks}),
        test_points=sum(len(b.test_points) for b in outcome.banks),
        systems=systems,
        per_query=per_query,
        qrels=[QrelsFile(label=label, file=qrels_file_name(label, tau, plan.qrels_m),
                         relevance_level=relevance_level(label, tau)) for label in plan.labels],
        partial=outcome.partial,
        outcomes=test_point_outcomes(inputs, outcome, plan),
        decided_by=dict(grading.decided_by),
    )
    return BuiltReport(report, qrels, result)


def test_point_outcomes(inputs: ExamInputs, outcome: SessionOutcome, plan: ExamPlan) -> list[TestPointOutcome]:
    """Every run's verdict on every test point of the scored banks (texts left out for secret banks)."""
    grading = outcome.grading
    found: list[TestPointOutcome] = []
    for bank in outcome.banks:
        secret = bank.secret or inputs.redact_all
        for name in sorted(inputs.data.runs):
            top = inputs.data.runs[name].top_k(bank.query.id, plan.k)
            for tp in bank.test_points:
                result = verdict(tp, top, grading.grades, grading.failures, grading.unsupported,
                                 min_grade=plan.min_grade, k=plan.k)
                answer = None
                if result.best_passage is not None and not secret:
                    answer = grading.answers.get((result.best_passage, tp.id))
                found.append(TestPointOutcome(
                    run=name, query_id=bank.query.id, test_point_id=tp.id, kind=tp.kind, required=tp.required,
                    text=None if secret else tp.text, outcome=result.outcome, best_grade=result.best_grade,
                    best_passage=result.best_passage, answer=shorten(answer, 500) if answer is not None else None,
                ))
    return found


def grade_counts(top_k: Callable[[str, int], Sequence[str]], outcome: SessionOutcome, k: int) -> dict[str, int]:
    """How often each grade occurs over a run's top-k passages and the scored test points of their
    queries (``"failed"``: pairs that could not be graded; test points the grader cannot grade are left out)."""
    grading = outcome.grading
    counts: Counter[str] = Counter()
    for bank in outcome.banks:
        top = top_k(bank.query.id, k)
        for tp in bank.test_points:
            if tp.id in grading.unsupported:
                continue
            for pid in top:
                grade = grading.grades.get((pid, tp.id))
                if grade is not None:
                    counts[str(grade)] += 1
                elif (pid, tp.id) in grading.failures:
                    counts["failed"] += 1
    return dict(sorted(counts.items()))


def exam_qrels(ctx: ScoringContext, plan: ExamPlan, min_grades: Sequence[int]) -> dict[str, Qrels]:
    """File name -> EXAM-Qrels for each label variant and tau (max-grade labels are the same at every tau)."""
    return {
        qrels_file_name(label, tau, plan.qrels_m): ctx.qrels(label, tau, plan.qrels_m, plan.pool, plan.k)
        for tau in min_grades for label in plan.labels
    }


def _score(value: MeasureScore) -> Score:
    return Score(mean=value.mean, stderr=value.stderr)


def _rel(path: object, root: Path | None) -> str:
    p = Path(str(path))
    if root is None:
        return str(p)
    try:
        return str(p.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(p)
