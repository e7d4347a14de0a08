"""What an evaluation works on: per query the test points, the graded pool of passages, and grades.

A Workbench paragraph file holds, per query, every passage that was graded (for DL19: every judged
passage); that whole set is the query's *pool*. Runs are scored on their top-k, the pool serves as
the n-EXAM normaliser (as the reference Workbench normalises over every graded passage) and as the
set of passages that get qrels labels, so the qrels have no holes.

Grades come either from the recorded ``exam_grades`` of the file (replay, one grading run chosen
by model and prompt class) or from a grader through the grade cache (:mod:`.grades`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from exam_harness.errors import ConfigError, InputError
from exam_harness.io.workbench import DIRECT_GRADE_SUFFIX
from exam_harness.models import ExamData, QueryBank, TestPoint

Pair = tuple[str, str]  # (passage id, test point id)
GradingRun = tuple[str | None, str | None]  # (llm, prompt class) of recorded grades


def is_direct_id(test_point_id: str) -> bool:
    """Whether an id is the pseudo test point of direct (query-level) grades, never a real test point."""
    return test_point_id.endswith("/" + DIRECT_GRADE_SUFFIX)


@dataclass
class ExamView:
    """The exam as the evaluation sees it: plain dicts, cheap to build, no per-pair models.

    ``test_points``: query -> test point ids (bank order, or first appearance in recorded grades);
    ``points``: test point id -> its model when a bank gave texts (empty on a bank-less replay);
    ``pool``: query -> every passage of the query (judged, ranked at any rank, or graded);
    ``query_texts``: query -> text where a bank gave it.
    """

    data: ExamData
    test_points: dict[str, list[str]]
    pool: dict[str, list[str]]
    points: dict[str, TestPoint] = field(default_factory=dict)
    query_texts: dict[str, str] = field(default_factory=dict)
    banks: list[QueryBank] = field(default_factory=list)

    @property
    def queries(self) -> list[str]:
        return [q for q, tps in self.test_points.items() if tps]

    def query_of(self) -> dict[str, str]:
        """test point id -> query id."""
        return {tid: qid for qid, tids in self.test_points.items() for tid in tids}

    def rankings(self, k: int) -> dict[str, dict[str, list[str]]]:
        """run -> query -> the run's top-k passage ids, for every query of the exam."""
        queries = self.queries
        return {name: {q: run.top_k(q, k) for q in queries} for name, run in self.data.runs.items()}

    def text_of(self, test_point_id: str) -> str:
        point = self.points.get(test_point_id)
        return point.text if point is not None else ""


def base_pool(data: ExamData) -> dict[str, dict[str, None]]:
    """query -> passages judged or ranked (at any rank) for it, in first-seen order."""
    pool: dict[str, dict[str, None]] = {}
    for qid, judged in data.judgments.items():
        pool.setdefault(qid, {}).update(dict.fromkeys(judged))
    for run in data.runs.values():
        for qid, ranked in run.rankings.items():
            target = pool.setdefault(qid, {})
            for r in ranked:
                target.setdefault(r.passage_id, None)
    return pool


def recorded_grading_runs(data: ExamData) -> Counter[GradingRun]:
    """How many recorded grades each (llm, prompt class) grading run holds (direct grades excluded)."""
    counts: Counter[GradingRun] = Counter()
    for (_pid, tid), grades in data.recorded.items():
        if is_direct_id(tid):
            continue
        for g in grades:
            counts[(g.llm, g.prompt_class)] += 1
    return counts


def describe_grading_run(run: GradingRun) -> str:
    llm, prompt_class = run
    return f"--llm {llm or '(none)'} --prompt-class {prompt_class or '(none)'}"


def choose_grading_run(data: ExamData, llm: str | None = None, prompt_class: str | None = None) -> GradingRun:
    """The one recorded grading run matching ``llm`` / ``prompt_class`` (None matches any).

    No recorded grades, no match, or several matches are a ConfigError listing what the file has.
    """
    counts = recorded_grading_runs(data)
    if not counts:
        raise ConfigError(
            "the loaded files hold no recorded exam_grades to replay; give a bank and a grader "
            "(--bank BANK --grader embedding) to grade the passages instead"
        )
    matching = [
        run for run in counts if (llm is None or run[0] == llm) and (prompt_class is None or run[1] == prompt_class)
    ]
    listed = "; ".join(f"{describe_grading_run(r)} ({counts[r]} grades)" for r in sorted(counts, key=str))
    if not matching:
        raise ConfigError(f"no recorded grading run matches llm={llm!r} prompt_class={prompt_class!r}. Available: {listed}")
    if len(matching) > 1:
        raise ConfigError(f"the files hold several recorded grading runs; choose one with --llm/--prompt-class: {listed}")
    return matching[0]


def recorded_grades(data: ExamData, run: GradingRun) -> tuple[dict[Pair, int], dict[Pair, str | None]]:
    """Grades and extracted answers of one recorded grading run (direct grades excluded)."""
    grades: dict[Pair, int] = {}
    answers: dict[Pair, str | None] = {}
    llm, prompt_class = run
    for pair, recs in data.recorded.items():
        for rec in recs:
            if rec.llm == llm and rec.prompt_class == prompt_class and not is_direct_id(pair[1]):
                grades[pair] = rec.grade
                answers[pair] = rec.answer
                break
    return grades, answers


def _query_for(pid: str, tid: str, queries_of_passage: Mapping[str, list[str]], known: set[str]) -> str:
    candidates = queries_of_passage.get(pid, [])
    if len(candidates) == 1:
        return candidates[0]
    prefixed = [q for q in (candidates or known) if tid.startswith(q + "/")]
    if len(prefixed) == 1:
        return prefixed[0]
    head = tid.split("/", 1)[0]
    if not candidates and "/" in tid:
        return head  # graded for a query nobody judged or ranked: the id rule names the query
    raise InputError(
        f"cannot tell which query test point {tid!r} (graded on passage {pid!r}) belongs to",
        field="test_point_id",
        value=tid,
        expected="ids of the form query_id/md5(text), or a bank (--bank) that lists the test point",
    )


def view_from_recorded(data: ExamData, grades: Iterable[Pair]) -> ExamView:
    """An exam whose test points are those the recorded grades mention (no bank needed)."""
    pool = base_pool(data)
    queries_of_passage: dict[str, list[str]] = {}
    for qid, pids in pool.items():
        for pid in pids:
            queries_of_passage.setdefault(pid, []).append(qid)
    known = set(pool)
    test_points: dict[str, dict[str, None]] = {}
    tid_query: dict[str, str] = {}
    for pid, tid in grades:
        qid = tid_query.get(tid)
        if qid is None:
            qid = tid_query[tid] = _query_for(pid, tid, queries_of_passage, known)
            test_points.setdefault(qid, {})[tid] = None
        target = pool.setdefault(qid, {})
        if pid not in target:
            target[pid] = None
    return ExamView(
        data=data,
        test_points={q: list(t) for q, t in test_points.items()},
        pool={q: list(p) for q, p in pool.items() if q in test_points},
    )


def view_from_banks(data: ExamData, banks: Sequence[QueryBank], grades: Iterable[Pair] = ()) -> ExamView:
    """An exam whose test points are the banks' (facets merged per query); the pool also takes in
    passages that ``grades`` mention for a bank's test point."""
    if not banks:
        raise InputError("the bank file holds no query banks", field="bank", expected="at least one query")
    pool = base_pool(data)
    test_points: dict[str, list[str]] = {}
    points: dict[str, TestPoint] = {}
    texts: dict[str, str] = {}
    for bank in banks:
        qid = bank.query.id
        texts.setdefault(qid, bank.query.text)
        target = test_points.setdefault(qid, [])
        for tp in bank.test_points:
            if tp.id not in points:
                target.append(tp.id)
                points[tp.id] = tp
    tid_query = {tid: qid for qid, tids in test_points.items() for tid in tids}
    for pid, tid in grades:
        qid = tid_query.get(tid)
        if qid is not None:
            target_pool = pool.setdefault(qid, {})
            if pid not in target_pool:
                target_pool[pid] = None
    return ExamView(
        data=data,
        test_points=test_points,
        pool={q: list(pool.get(q, {})) for q in test_points},
        points=points,
        query_texts=texts,
        banks=list(banks),
    )
