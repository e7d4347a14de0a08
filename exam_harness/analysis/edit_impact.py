"""Bank edit impact: what changes when a person edits a bank, at the cost of the changed test points.

Given an old and a new bank, :func:`bank_edit_impact` reports
- the bank diff per query: test points removed, added, changed (same id, new text) and edited
  (a removed and an added test point of one query whose texts are close: the id rule gives an
  edited question a new id);
- which pool passages change their qrels label (and whether their binarised relevance flips);
- how much each system's EXAM-Cover@k and chosen trec_eval measures move.

Only the queries with a change are graded, old and new bank alike, with one grader through the
grade cache: the old bank's grades come from the cache (graded before), and on the new side only
the changed and added test points miss it. Unchanged queries contribute equally to the old and the
new mean, so each system's change is exact: sum over changed queries of (new - old) / |queries|.
(n-EXAM is left out: its mean runs over the queries anybody covers, which needs every query.)
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import BaseModel, Field

from exam_harness.core.models import ExamData, QueryBank, TestPoint
from exam_harness.core.progress import GradingProgress
from exam_harness.exam.inputs import ExamView
from exam_harness.exam.plan import ExamPlan
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome
from exam_harness.grading.setup import GradingSetup
from exam_harness.measures.base import Measure
from exam_harness.measures.context import ScoringContext
from exam_harness.measures.exam import ExamCover
from exam_harness.measures.pipeline import score
from exam_harness.measures.qrels import QrelsCut, relevance_level
from exam_harness.measures.result import ExamResult
from exam_harness.measures.trec import TrecMeasure

EDIT_SIMILARITY = 0.6  # difflib ratio from which a removed + added pair reads as one edit


class BankChange(BaseModel):
    query_id: str
    change: str  # removed | added | changed | edited
    test_point_id: str | None = None  # the new id (added, changed, edited) or the removed one
    old_id: str | None = None
    text: str | None = None
    old_text: str | None = None


class LabelChange(BaseModel):
    query_id: str
    passage_id: str
    judgment: int | None
    old_label: int
    new_label: int
    old_relevant: bool
    new_relevant: bool


class SystemMove(BaseModel):
    run: str
    measure: str
    delta: float
    per_query: dict[str, tuple[float, float]] = Field(default_factory=dict)  # changed query -> (old, new)


class GradingCounts(BaseModel):
    unique_pairs: int
    cache_hits: int
    graded: int
    failures: int


class EditImpact(BaseModel):
    min_grade: int
    k: int
    label: str
    queries: int
    changes: list[BankChange]
    affected_queries: list[str]
    label_changes: list[LabelChange]
    moves: dict[str, list[SystemMove]]  # measure -> systems, largest |delta| first
    old_grading: GradingCounts | None = None
    new_grading: GradingCounts | None = None


def _points(banks: Sequence[QueryBank]) -> dict[str, dict[str, TestPoint]]:
    out: dict[str, dict[str, TestPoint]] = {}
    for bank in banks:
        target = out.setdefault(bank.query.id, {})
        for tp in bank.test_points:
            target.setdefault(tp.id, tp)
    return out


def bank_diff(old_banks: Sequence[QueryBank], new_banks: Sequence[QueryBank]) -> list[BankChange]:
    """Per query (in the new bank's order, then queries only the old bank has): removed, added,
    changed and edited test points. Texts are compared as written (whitespace included)."""
    old, new = _points(old_banks), _points(new_banks)
    changes: list[BankChange] = []
    for qid in [*new, *(q for q in old if q not in new)]:
        o, n = old.get(qid, {}), new.get(qid, {})
        changed = [
            BankChange(query_id=qid, change="changed", test_point_id=tid, old_id=tid, text=n[tid].text,
                       old_text=o[tid].text)
            for tid in n if tid in o and (n[tid].text, n[tid].gold_answers) != (o[tid].text, o[tid].gold_answers)
        ]
        removed = [tid for tid in o if tid not in n]
        added = [tid for tid in n if tid not in o]
        scored = sorted(
            ((difflib.SequenceMatcher(None, o[r].text, n[a].text).ratio(), r, a) for r in removed for a in added
             if o[r].facet_id == n[a].facet_id),
            reverse=True,
        )
        edits: list[tuple[str, str]] = []
        used_r: set[str] = set()
        used_a: set[str] = set()
        for ratio, r, a in scored:
            if ratio >= EDIT_SIMILARITY and r not in used_r and a not in used_a:
                edits.append((r, a))
                used_r.add(r)
                used_a.add(a)
        changes.extend(changed)
        changes.extend(
            BankChange(query_id=qid, change="edited", test_point_id=a, old_id=r, text=n[a].text, old_text=o[r].text)
            for r, a in edits
        )
        changes.extend(BankChange(query_id=qid, change="removed", test_point_id=r, old_id=r, old_text=o[r].text)
                       for r in removed if r not in used_r)
        changes.extend(BankChange(query_id=qid, change="added", test_point_id=a, text=n[a].text)
                       for a in added if a not in used_a)
    return changes


def _scored(
    view: ExamView, outcome: GradingOutcome, queries: Sequence[str], plan: ExamPlan, measures: Sequence[Measure]
) -> tuple[ExamResult, dict[str, dict[str, int]], str]:
    """One side of the edit: the measures and the plan's label over ``queries``; the label's name."""
    ctx = ScoringContext(view.scoring_input(outcome.grades, only=queries, tie_order=plan.tie_order))
    label = plan.labels[0]
    result = score(ctx, measures)
    return result, ctx.qrels(QrelsCut(label, plan.min_grade, plan.qrels_m, plan.pool, plan.k)), label


def impact_of(
    old: tuple[ExamView, GradingOutcome],
    new: tuple[ExamView, GradingOutcome],
    changes: list[BankChange],
    plan: ExamPlan,
) -> EditImpact:
    """The impact from grades at hand (old and new view with their grades), at the plan's tau, k,
    first label variant and trec measures."""
    (old_view, old_outcome), (new_view, new_outcome) = old, new
    affected = list(dict.fromkeys(c.query_id for c in changes))
    all_queries = set(old_view.queries) | set(new_view.queries)
    same_queries = set(old_view.queries) == set(new_view.queries)
    n_queries = len(new_view.queries) if same_queries else 0
    tau, k = plan.min_grade, plan.k
    # With the same queries on both sides only the changed ones are scored (the others cancel out);
    # otherwise every query is, and the means are taken over each side's own queries.
    scored = affected if same_queries else sorted(all_queries)
    bindings = plan.bindings(tau)
    cover = ExamCover().bind(bindings)
    measures: list[Measure] = [cover, *(TrecMeasure(name=m, label=plan.labels[0]).bind(bindings)
                                        for m in plan.trec_measures)]
    old_result, old_labels, label = _scored(old_view, old_outcome, scored, plan, measures)
    new_result, new_labels, _ = _scored(new_view, new_outcome, scored, plan, measures)
    level = relevance_level(label, tau)
    judgments = new_view.data.judgments
    label_changes: list[LabelChange] = []
    for qid in affected:
        before, after = old_labels.get(qid, {}), new_labels.get(qid, {})  # a query only one side has: labels 0
        for pid in dict.fromkeys([*before, *after]):
            a, b = before.get(pid, 0), after.get(pid, 0)
            if a != b:
                label_changes.append(
                    LabelChange(query_id=qid, passage_id=pid, judgment=judgments.get(qid, {}).get(pid), old_label=a,
                                new_label=b, old_relevant=a >= level, new_relevant=b >= level)
                )
    label_changes.sort(key=lambda c: (c.old_relevant == c.new_relevant, c.query_id, -abs(c.new_label - c.old_label),
                                      c.passage_id))
    runs = sorted(set(old_view.data.runs) | set(new_view.data.runs))
    generated = {name for view in (old_view, new_view) for name, run in view.data.runs.items() if run.generated}
    moves: dict[str, list[SystemMove]] = {}
    for measure in measures:
        old_values, new_values = old_result[measure].per_query, new_result[measure].per_query
        rows = []
        for r in runs:
            if not measure.scores_run(r in generated):
                continue  # a run of generated answers has no value of a trec measure on either side: no move
            by_q = {q: (old_values.get(r, {}).get(q, 0.0), new_values.get(r, {}).get(q, 0.0)) for q in scored}
            if same_queries:
                delta = sum(n - o for o, n in by_q.values()) / n_queries if n_queries else 0.0
            else:  # every query scored: each side's mean over its own queries
                old_q, new_q = set(old_view.queries), set(new_view.queries)
                new_mean = sum(v[1] for q, v in by_q.items() if q in new_q) / (len(new_q) or 1)
                old_mean = sum(v[0] for q, v in by_q.items() if q in old_q) / (len(old_q) or 1)
                delta = new_mean - old_mean
            rows.append(SystemMove(run=r, measure=measure.key, delta=delta,
                                   per_query={q: v for q, v in by_q.items() if v[0] != v[1]}))
        rows.sort(key=lambda m: (-abs(m.delta), m.run))
        moves[measure.key] = rows
    return EditImpact(
        min_grade=tau, k=k, label=label, queries=len(all_queries), changes=changes, affected_queries=affected,
        label_changes=label_changes, moves=moves, old_grading=_summary(old_outcome), new_grading=_summary(new_outcome),
    )


def _summary(outcome: GradingOutcome) -> GradingCounts:
    return GradingCounts(unique_pairs=outcome.unique, cache_hits=outcome.cache_hits, graded=outcome.graded,
                         failures=len(outcome.failures))


def bank_edit_impact(
    data: ExamData,
    old_banks: Sequence[QueryBank],
    new_banks: Sequence[QueryBank],
    grading: GradingSetup,
    cache: GradeCache,
    *,
    progress: GradingProgress | None = None,
) -> EditImpact:
    """Grade what the edit touches (see the module doc) with the one grading set-up, and report its impact."""
    changes = bank_diff(old_banks, new_banks)
    affected = {c.query_id for c in changes}
    same_queries = {b.query.id for b in old_banks} == {b.query.id for b in new_banks}
    only = affected if same_queries else None
    old = grading.grade(data, old_banks, cache, progress=progress, only_queries=only)
    new = grading.grade(data, new_banks, cache, progress=progress, only_queries=only)
    return impact_of(old, new, changes, grading.plan)
