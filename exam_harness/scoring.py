"""Turns a graded exam into scores and the :class:`ExamReport`: EXAM-Cover, n-EXAM, nugget F and
trec_eval measures over EXAM-Qrels, per query and per system.

Pairs whose grading failed are absent from the grades; they count as uncovered here, and the
session is failed by their case errors, so a score with failures never passes silently.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exam_harness import __version__
from exam_harness.metrics.cover import cover_scores
from exam_harness.metrics.nuggets import matched_nuggets, nugget_f
from exam_harness.metrics.qrels import evaluate, qrels_labels, relevance_level
from exam_harness.metrics.stats import mean_stderr
from exam_harness.models import ExamData, GraderSpec, QueryBank
from exam_harness.report.schema import (
    CacheSummary,
    ExamReport,
    Outcomes,
    QrelsFile,
    QueryScore,
    Score,
    Settings,
    SystemScore,
)
from exam_harness.settings import LABEL_VARIANTS, MEASURES

if TYPE_CHECKING:
    from exam_harness.grading import GradingOutcome
    from exam_harness.session import ExamSession

Qrels = dict[str, dict[str, int]]


@dataclass
class ScoreInputs:
    data: ExamData
    banks: Sequence[QueryBank]
    grades: Mapping[tuple[str, str], int]
    k: int
    min_grade: int
    qrels_m: int = 2
    responses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unsupported: Mapping[str, str] = field(default_factory=dict)
    measures: Sequence[str] = MEASURES
    label_variants: Sequence[str] = LABEL_VARIANTS


@dataclass
class Scores:
    systems: list[SystemScore]
    per_query: list[QueryScore]
    qrels: dict[str, Qrels]
    relevance_levels: dict[str, int]


def _test_points(banks: Sequence[QueryBank], unsupported: Mapping[str, str]) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """query -> scored test point ids (facets merged); query -> nugget id -> weight."""
    points: dict[str, list[str]] = {}
    nuggets: dict[str, dict[str, float]] = {}
    for bank in banks:
        for tp in bank.test_points:
            if tp.id in unsupported:
                continue
            points.setdefault(bank.query.id, []).append(tp.id)
            if tp.kind == "nugget":
                nuggets.setdefault(bank.query.id, {})[tp.id] = tp.weight
    return points, nuggets


def compute_scores(inputs: ScoreInputs) -> Scores:
    data, k, tau = inputs.data, inputs.k, inputs.min_grade
    test_points, nugget_weights = _test_points(inputs.banks, inputs.unsupported)
    queries = sorted(test_points)
    rankings = {name: {qid: run.top_k(qid, k) for qid in queries} for name, run in data.runs.items()}

    covers = cover_scores(rankings, test_points, inputs.grades, k=k, min_grade=tau, missing="zero")

    pool: dict[str, list[str]] = {qid: [] for qid in queries}
    for ranking in rankings.values():
        for qid, pids in ranking.items():
            pool[qid].extend(p for p in pids if p not in pool[qid])
    qrels: dict[str, Qrels] = {}
    levels: dict[str, int] = {}
    measured: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for variant in inputs.label_variants:
        qrels[variant] = qrels_labels(
            inputs.grades, test_points, pool, variant=variant, min_grade=tau, m=inputs.qrels_m, missing="zero"
        )
        levels[variant] = relevance_level(variant, tau)
        # Graded top-k only: passages below k have no labels, and trec_eval counts them non-relevant.
        measured[variant] = evaluate(qrels[variant], rankings, inputs.measures, relevance_level=levels[variant])

    systems: list[SystemScore] = []
    per_query: list[QueryScore] = []
    for name in sorted(data.runs):
        run = data.runs[name]
        cover = covers[name]
        f_values: dict[str, float] = {}
        for qid, weights in nugget_weights.items():
            passages = rankings[name].get(qid, [])
            matched = matched_nuggets(qid, passages, weights, inputs.grades, min_grade=tau, missing="zero")
            text = inputs.responses.get(name, {}).get(qid)
            if text is None:
                text = " ".join(data.passages[p].text for p in passages if p in data.passages)
            f_values[qid] = nugget_f(text, weights, matched).f
        measures_by_label: dict[str, dict[str, Score]] = {}
        for variant in inputs.label_variants:
            by_query = measured[variant][name]
            measures_by_label[variant] = {}
            for m in inputs.measures:
                mean, se = mean_stderr(by_query.get(q, {}).get(m, 0.0) for q in queries)
                measures_by_label[variant][m] = Score(mean=mean, stderr=se)
        f_mean = Score(mean=mean_stderr(f_values.values())[0], stderr=mean_stderr(f_values.values())[1]) if f_values else None
        systems.append(
            SystemScore(
                run=name,
                generated=run.generated,
                queries=len(queries),
                exam_cover=cover.exam,
                exam_cover_stderr=cover.exam_stderr,
                n_exam_cover=cover.n_exam,
                n_exam_cover_stderr=cover.n_exam_stderr,
                nugget_f=f_mean,
                qrels_measures=measures_by_label,
            )
        )
        for qid in queries:
            covered = round(cover.exam_per_query[qid] * len(test_points[qid]))
            per_query.append(
                QueryScore(
                    run=name,
                    query_id=qid,
                    exam_cover=cover.exam_per_query[qid],
                    n_exam_cover=cover.n_exam_per_query.get(qid),
                    covered=covered,
                    test_points=len(test_points[qid]),
                    nugget_f=f_values.get(qid),
                    qrels_measures={
                        v: {m: measured[v][name].get(qid, {}).get(m, 0.0) for m in inputs.measures}
                        for v in inputs.label_variants
                    },
                )
            )
    return Scores(systems=systems, per_query=per_query, qrels=qrels, relevance_levels=levels)


def cache_summary(outcome: GradingOutcome, path: str | None) -> CacheSummary:
    return CacheSummary(
        path=path,
        pairs=outcome.pairs,
        unique_pairs=outcome.unique,
        hits=outcome.cache_hits,
        misses=outcome.cache_misses,
        graded=outcome.graded,
        failures=len(outcome.failures),
        grading_seconds=round(outcome.seconds, 3),
    )


def assemble_report(
    scores: Scores,
    *,
    spec: GraderSpec,
    inputs: ScoreInputs,
    cache: CacheSummary,
    bank_sources: list[str],
    run_sources: list[str],
    write_qrels: bool,
    outcomes: Mapping[str, Outcomes] | None = None,
) -> ExamReport:
    qrels_files = []
    if write_qrels:
        for variant in inputs.label_variants:
            label = variant if variant != "at-least-m" else f"at-least-{inputs.qrels_m}"
            qrels_files.append(
                QrelsFile(label=variant, file=f"exam-{label}.qrels", relevance_level=scores.relevance_levels[variant])
            )
    systems = [s.model_copy(update={"outcomes": (outcomes or {}).get(s.run, Outcomes())}) for s in scores.systems]
    return ExamReport(
        tool_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        settings=Settings(
            grader=spec,
            k=inputs.k,
            min_grade=inputs.min_grade,
            qrels_m=inputs.qrels_m,
            measures=list(inputs.measures),
            label_variants=list(inputs.label_variants),
            banks=bank_sources,
            runs=run_sources,
        ),
        cache=cache,
        queries=len({b.query.id for b in inputs.banks}),
        test_points=sum(len(b.test_points) for b in inputs.banks),
        systems=systems,
        per_query=scores.per_query,
        qrels=qrels_files,
    )


def build_report(session: ExamSession) -> ExamReport:
    """Scores of the session's graded banks, as the report the reporters publish."""
    outcome = session.outcome
    assert outcome is not None and session.grader_spec is not None
    banks = session.graded_banks
    inputs = ScoreInputs(
        data=session.data,
        banks=banks,
        grades={pair: g.grade for pair, g in outcome.grades.items()},
        k=session.settings.k,
        min_grade=session.min_grade,
        qrels_m=session.settings.qrels_m,
        responses=session.responses,
        unsupported=outcome.unsupported,
    )
    scores = compute_scores(inputs)
    session.qrels = scores.qrels
    root = session.config.rootpath
    return assemble_report(
        scores,
        spec=session.grader_spec,
        inputs=inputs,
        cache=cache_summary(outcome, _rel(session.settings.cache, root)),
        bank_sources=sorted({_rel(b.source, root) or "" for b in banks}),
        run_sources=[_rel(p, root) or "" for p in session.settings.runs],
        write_qrels=session.settings.report_dir is not None,
        outcomes=session.outcomes,
    )


def _rel(path: object, root: object) -> str | None:
    if path is None:
        return None
    from pathlib import Path

    p = Path(str(path))
    try:
        return str(p.resolve().relative_to(Path(str(root)).resolve()))
    except ValueError:
        return str(p)
