"""Phase-3 analyses of the method (human in the loop): what to check, fix or drop in a bank.

- :func:`verify_grading`: per test point, the extracted answers with their grades;
- :func:`grade_grid`: per passage of a query, every test point's grade and answer;
- :func:`missing_in_bank`: passages judged relevant that reach no grade >= tau on any test point
  (the bank needs a question they answer);
- :func:`spurious_test_points`: test points ranked by how often passages judged non-relevant reach
  grade >= tau on them (reformulate or drop them).

All work on an :class:`ExamView` (built with the grades, so its pool holds every graded passage) and
a :class:`GradingOutcome` (recorded or regraded grades, with their answers) and return pydantic models
that serialise to JSON. The bank edit impact is in :mod:`.edit_impact`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field, computed_field

from exam_harness.core.errors import InputError
from exam_harness.exam.inputs import ExamView
from exam_harness.grading.passes import GradingOutcome


def _check_query(view: ExamView, query: str | None) -> None:
    if query is not None and query not in view.test_points:
        import difflib

        close = difflib.get_close_matches(query, list(view.test_points), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise InputError(
            f"query not in the exam.{hint}", field="--query", value=query,
            expected=f"one of the {len(view.test_points)} query ids of the bank / recorded grades",
        )


def _judgment(view: ExamView, qid: str, pid: str) -> int | None:
    return view.data.judgments.get(qid, {}).get(pid)


# --- verify grading -------------------------------------------------------------------------------


class AnswerRow(BaseModel):
    passage_id: str
    grade: int
    answer: str | None = None
    judgment: int | None = None


class TestPointAnswers(BaseModel):
    __test__ = False  # not a pytest test class despite the name

    test_point_id: str
    query_id: str
    text: str = ""
    graded: int
    grade_counts: dict[int, int]
    rows: list[AnswerRow]


def verify_grading(
    view: ExamView,
    table: GradingOutcome,
    *,
    query: str | None = None,
    test_point: str | None = None,
    min_grade: int = 0,
    limit: int | None = None,
) -> list[TestPointAnswers]:
    """Per test point: its grade distribution over the pool and the answers, highest grade first
    (then judged-relevant first). ``min_grade`` hides lower rows; ``limit`` caps rows per test point."""
    _check_query(view, query)
    out: list[TestPointAnswers] = []
    found = False
    for qid in view.queries:
        if query is not None and qid != query:
            continue
        for tid in view.test_points[qid]:
            if test_point is not None and tid != test_point:
                continue
            found = True
            rows: list[AnswerRow] = []
            counts: Counter[int] = Counter()
            for pid in view.pooled.get(qid, []):
                grade = table.grades.get((pid, tid))
                if grade is None:
                    continue
                counts[grade] += 1
                if grade >= min_grade:
                    rows.append(AnswerRow(passage_id=pid, grade=grade, answer=table.answers.get((pid, tid)),
                                          judgment=_judgment(view, qid, pid)))
            rows.sort(key=lambda r: (-r.grade, -(r.judgment if r.judgment is not None else -1), r.passage_id))
            out.append(
                TestPointAnswers(
                    test_point_id=tid, query_id=qid, text=view.text_of(tid), graded=sum(counts.values()),
                    grade_counts=dict(sorted(counts.items())), rows=rows[:limit] if limit is not None else rows,
                )
            )
    if test_point is not None and not found:
        raise InputError("test point not in the exam", field="--test-point", value=test_point,
                         expected="a test point id of the bank / recorded grades (see 'analyze grid')")
    return out


# --- grid -----------------------------------------------------------------------------------------


class GridRow(BaseModel):
    passage_id: str
    judgment: int | None = None
    max_grade: int | None = None
    grades: dict[str, int | None]
    answers: dict[str, str | None] = Field(default_factory=dict)


class GradeGrid(BaseModel):
    query_id: str
    test_points: list[dict[str, str]]  # [{"id": ..., "text": ...}]
    rows: list[GridRow]


def grade_grid(
    view: ExamView, table: GradingOutcome, *, query: str, passages: Sequence[str] | None = None
) -> GradeGrid:
    """Every passage of a query's pool (or the ``passages`` given) x every test point of its bank."""
    _check_query(view, query)
    tids = view.test_points[query]
    pids = list(passages) if passages else view.pooled.get(query, [])
    unknown = [p for p in pids if p not in view.data.passages]
    if unknown:
        raise InputError("passage not loaded", field="--passage", value=unknown[0],
                         expected="a passage id of the run files")
    rows: list[GridRow] = []
    for pid in pids:
        grades = {tid: table.grades.get((pid, tid)) for tid in tids}
        answers = {tid: table.answers.get((pid, tid)) for tid in tids}
        present = [g for g in grades.values() if g is not None]
        rows.append(
            GridRow(passage_id=pid, judgment=_judgment(view, query, pid), max_grade=max(present) if present else None,
                    grades=grades, answers=answers)
        )
    return GradeGrid(query_id=query, test_points=[{"id": t, "text": view.text_of(t)} for t in tids], rows=rows)


# --- missing in bank ------------------------------------------------------------------------------


class MissingPassage(BaseModel):
    query_id: str
    passage_id: str
    judgment: int
    max_grade: int | None
    best_test_point: str | None = None
    text: str = ""


class MissingQuery(BaseModel):
    query_id: str
    relevant: int
    missing: int


class MissingInBank(BaseModel):
    min_grade: int
    relevance_level: int
    queries: list[MissingQuery]
    passages: list[MissingPassage]


def missing_in_bank(
    view: ExamView, table: GradingOutcome, *, min_grade: int, relevance_level: int = 1, query: str | None = None
) -> MissingInBank:
    """Passages judged >= ``relevance_level`` whose best grade over the bank stays below ``min_grade``.

    Sorted by judgment (most relevant first) then best grade (lowest first); per query the counts.
    """
    _check_query(view, query)
    passages: list[MissingPassage] = []
    per_query: list[MissingQuery] = []
    for qid in view.queries:
        if query is not None and qid != query:
            continue
        judged = view.data.judgments.get(qid, {})
        tids = view.test_points[qid]
        relevant = 0
        missing = 0
        for pid, level in judged.items():
            if level < relevance_level:
                continue
            relevant += 1
            best: tuple[int, str] | None = None
            for tid in tids:
                g = table.grades.get((pid, tid))
                if g is not None and (best is None or g > best[0]):
                    best = (g, tid)
            if best is None or best[0] < min_grade:
                missing += 1
                passage = view.data.passages.get(pid)
                passages.append(
                    MissingPassage(query_id=qid, passage_id=pid, judgment=level, max_grade=best[0] if best else None,
                                   best_test_point=best[1] if best else None, text=passage.text if passage else "")
                )
        if relevant:
            per_query.append(MissingQuery(query_id=qid, relevant=relevant, missing=missing))
    passages.sort(key=lambda m: (-m.judgment, m.max_grade if m.max_grade is not None else -1, m.query_id, m.passage_id))
    per_query.sort(key=lambda q: (-q.missing / q.relevant, q.query_id))
    return MissingInBank(min_grade=min_grade, relevance_level=relevance_level, queries=per_query, passages=passages)


# --- spurious test points -------------------------------------------------------------------------


class SpuriousPoint(BaseModel):
    test_point_id: str
    query_id: str
    text: str = ""
    non_relevant_high: int  # judged non-relevant passages reaching min_grade
    non_relevant_judged: int
    relevant_high: int
    relevant_judged: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float:
        return self.non_relevant_high / self.non_relevant_judged if self.non_relevant_judged else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def precision(self) -> float | None:
        high = self.non_relevant_high + self.relevant_high
        return self.relevant_high / high if high else None


def spurious_test_points(
    view: ExamView,
    table: GradingOutcome,
    *,
    min_grade: int,
    relevance_level: int = 1,
    query: str | None = None,
    limit: int | None = None,
) -> list[SpuriousPoint]:
    """Test points ranked by how many judged non-relevant passages (< ``relevance_level``) reach
    ``min_grade`` on them, then by that count's share of the non-relevant passages."""
    _check_query(view, query)
    out: list[SpuriousPoint] = []
    for qid in view.queries:
        if query is not None and qid != query:
            continue
        judged = view.data.judgments.get(qid, {})
        for tid in view.test_points[qid]:
            nr_high = nr = r_high = r = 0
            for pid, level in judged.items():
                g = table.grades.get((pid, tid))
                if g is None:
                    continue
                if level >= relevance_level:
                    r += 1
                    r_high += g >= min_grade
                else:
                    nr += 1
                    nr_high += g >= min_grade
            out.append(
                SpuriousPoint(test_point_id=tid, query_id=qid, text=view.text_of(tid), non_relevant_high=nr_high,
                              non_relevant_judged=nr, relevant_high=r_high, relevant_judged=r)
            )
    out.sort(key=lambda s: (-s.non_relevant_high, -s.rate, s.test_point_id))
    return out[:limit] if limit is not None else out
