"""Autograding Workbench interoperability: export our grades as a paragraph file, import graded
paragraph files into the grade cache.

Export writes one line per query, ``[query_id, [paragraph, ...]]``, with every passage of the
query's pool: its text, ``paragraph_data`` (judgments and every run's ranking of it),
``exam_grades`` (one entry per grading run: the recorded ones of the loaded files, and ours) and
``grades`` (recorded direct grades). Reading the file back with
:func:`exam_harness.io.load_runs` gives the same passages, runs, judgments and recorded grades
(test point id, grade, answer, llm, prompt class): every field the loaders read.

Import stores each recorded grading run under the ``recorded`` grader's own cache identity: the
spec of ``RecordedGrader`` built with options ``llm`` and ``prompt_class`` of that run, and the
grader's own ``cache_payload`` of each pair. A session grading with ``--exam-grader recorded`` and
those options then finds the grades in the cache without the paragraph file among its runs
(once the recorded grader reads the cache; see the module's note in the final report).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam_harness.core.errors import InputError
from exam_harness.core.models import ExamData, Grade, GraderSpec, QueryBank, RecordedGrade, TestPoint
from exam_harness.exam.inputs import ExamView, Pair, is_direct_id, known_pool, query_for
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.grading.cache import GradeCache, cache_key
from exam_harness.grading.passes import GradingOutcome
from exam_harness.io.textio import atomic_write_text

# --- export -------------------------------------------------------------------------------------


def _self_rating_entry(
    rows: list[tuple[str, int, str | None]], kinds: Mapping[str, str], llm: str | None, prompt_class: str | None,
    llm_options: dict[str, Any], prompt_info: dict[str, Any],
) -> dict[str, Any]:
    """One ``exam_grades`` entry. As in the reference files, a self-rating >= 1 counts as answered."""
    correct = [tid for tid, grade, _ in rows if grade >= 1]
    wrong = [tid for tid, grade, _ in rows if grade < 1]
    return {
        "correctAnswered": correct,
        "wrongAnswered": wrong,
        "self_ratings": [{f"{kinds.get(tid, 'question')}_id": tid, "self_rating": grade} for tid, grade, _ in rows],
        "answers": [[tid, answer] for tid, _, answer in rows if answer is not None],
        "llm": llm,
        "llm_options": llm_options,
        "exam_ratio": len(correct) / len(rows) if rows else 0.0,
        "prompt_info": {"prompt_class": prompt_class, "is_self_rated": True, **prompt_info},
    }


def _spec_entry_info(spec: GraderSpec) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    llm = spec.model or spec.name
    prompt_class = spec.prompt_class or spec.name
    options = {"grader": spec.name, "version": spec.version, **spec.options}
    if spec.revision:
        options["revision"] = spec.revision
    info: dict[str, Any] = {
        "prompt_style": spec.prompt_text or "",
        "context_first": False,
        "check_unanswerable": False,
        "check_answer_key": spec.name == "answer-key",
    }
    return llm, prompt_class, options, info


@dataclass
class ExportSummary:
    path: Path
    queries: int
    paragraphs: int
    recorded_grades: int
    our_grades: int


def export_workbench(
    path: str | Path,
    data: ExamData,
    *,
    banks: Sequence[QueryBank] = (),
    grades: Mapping[Pair, Grade | int] | None = None,
    answers: Mapping[Pair, str | None] | None = None,
    grader: GraderSpec | None = None,
    include_recorded: bool = True,
    pool: Mapping[str, Sequence[str]] | None = None,
) -> ExportSummary:
    """Write ``data`` (and ``grades`` of ``grader``, if given) as a Workbench paragraph file.

    ``grades`` are (passage, test point) -> Grade or int; each becomes a self-rating of an
    ``exam_grades`` entry whose ``llm`` is the grader's model (else its name) and whose prompt class
    is the grader's (else its name); answers are the grades' extracted answers (else raw responses)
    or ``answers``. Test points map to queries by the banks, else by the id rule / the passages'
    queries. Written atomically; ``.gz`` compresses.
    """
    path = Path(path)
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
        raise InputError("a Workbench paragraph file must be written to .jsonl or .jsonl.gz", path=path,
                         field="file name", value=path.name, expected="NAME.jsonl or NAME.jsonl.gz")
    lines, paragraphs, recorded_count, ours_count = _paragraph_lines(
        data, banks=banks, grades=grades, answers=answers, grader=grader, include_recorded=include_recorded,
        pool=pool)
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return ExportSummary(path, len(lines), paragraphs, recorded_count, ours_count)


def workbench_text(data: ExamData, *, banks: Sequence[QueryBank] = (), grades: Mapping[Pair, Grade | int] | None = None,
                   answers: Mapping[Pair, str | None] | None = None, grader: GraderSpec | None = None,
                   pool: Mapping[str, Sequence[str]] | None = None) -> str:
    """The Workbench paragraph file :func:`export_workbench` writes, as text (for a report set's writer)."""
    lines = _paragraph_lines(data, banks=banks, grades=grades, answers=answers, grader=grader,
                             include_recorded=True, pool=pool)[0]
    return "".join(line + "\n" for line in lines)


def _paragraph_lines(
    data: ExamData, *, banks: Sequence[QueryBank], grades: Mapping[Pair, Grade | int] | None,
    answers: Mapping[Pair, str | None] | None, grader: GraderSpec | None, include_recorded: bool,
    pool: Mapping[str, Sequence[str]] | None,
) -> tuple[list[str], int, int, int]:
    """The paragraph file's lines (one per query) and the paragraphs, recorded grades and our grades in it."""
    if grades and grader is None:
        raise InputError("exporting grades needs the grader's spec (its model and prompt class name the entry)",
                         field="grader", expected="a GraderSpec")
    full_pool = known_pool(data)
    for qid, pooled in (pool or {}).items():
        target = full_pool.setdefault(qid, {})
        for pid in pooled:
            target.setdefault(pid, None)
    kinds: dict[str, str] = {}
    tid_query: dict[str, str] = {}
    for bank in banks:
        for tp in bank.test_points:
            kinds[tp.id] = tp.kind
            tid_query.setdefault(tp.id, bank.query.id)
    queries_of_passage: dict[str, list[str]] = {}
    for qid, pids in full_pool.items():
        for pid in pids:
            queries_of_passage.setdefault(pid, []).append(qid)
    known = set(full_pool)

    def query_of(pid: str, tid: str) -> str:
        if is_direct_id(tid):
            return tid.rsplit("/", 1)[0]
        qid = tid_query.get(tid)
        if qid is None:
            qid = tid_query[tid] = query_for(pid, tid, queries_of_passage, known)
        return qid

    # (query, passage) -> what the paragraph carries
    recorded_at: dict[tuple[str, str], list[tuple[str, RecordedGrade]]] = {}
    if include_recorded:
        for (pid, tid), recs in data.recorded.items():
            qid = query_of(pid, tid)
            full_pool.setdefault(qid, {}).setdefault(pid, None)
            recorded_at.setdefault((qid, pid), []).extend((tid, rec) for rec in recs)
    ours_at: dict[tuple[str, str], list[tuple[str, int, str | None]]] = {}
    for (pid, tid), value in (grades or {}).items():
        qid = query_of(pid, tid)
        full_pool.setdefault(qid, {}).setdefault(pid, None)
        if isinstance(value, Grade):
            grade = value.grade
            answer = value.extracted_answer if value.extracted_answer is not None else value.raw_response
        else:
            grade, answer = int(value), None
        if answers is not None and answers.get((pid, tid)) is not None:
            answer = answers[(pid, tid)]
        ours_at.setdefault((qid, pid), []).append((tid, grade, answer))
    rankings_at: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name, run in data.runs.items():
        for qid, ranked in run.rankings.items():
            for r in ranked:
                rankings_at.setdefault((qid, r.passage_id), []).append(
                    {"method": name, "paragraphId": r.passage_id, "queryId": qid, "rank": r.rank, "score": r.score}
                )
    spec_info = _spec_entry_info(grader) if grader is not None else None

    lines: list[str] = []
    paragraphs = recorded_count = ours_count = 0
    for qid, pids in full_pool.items():
        paras: list[dict[str, Any]] = []
        judged = data.judgments.get(qid, {})
        for pid in pids:
            passage = data.passages.get(pid)
            if passage is None:
                raise InputError(f"passage {pid!r} of query {qid!r} has no text", field="passage_id", value=pid,
                                 expected="every pooled passage among the loaded passages")
            para: dict[str, Any] = {"paragraph_id": pid, "text": passage.text, "paragraph": {}}
            judgments = (
                [{"paragraphId": pid, "query": qid, "relevance": judged[pid], "titleQuery": qid}]
                if pid in judged else []
            )
            para["paragraph_data"] = {"judgments": judgments, "rankings": rankings_at.get((qid, pid), [])}
            exam_grades: list[dict[str, Any]] = []
            direct: list[dict[str, Any]] = []
            by_run: dict[tuple[str | None, str | None], list[tuple[str, int, str | None]]] = {}
            for tid, rec in recorded_at.get((qid, pid), []):
                recorded_count += 1
                if is_direct_id(tid):
                    direct.append({
                        "correctAnswered": rec.grade > 0, "self_ratings": rec.grade, "answer": rec.answer,
                        "llm": rec.llm, "prompt_info": {"prompt_class": rec.prompt_class},
                    })
                else:
                    by_run.setdefault((rec.llm, rec.prompt_class), []).append((tid, rec.grade, rec.answer))
            for (llm, prompt_class), rows in by_run.items():
                exam_grades.append(_self_rating_entry(rows, kinds, llm, prompt_class, {}, {}))
            ours = ours_at.get((qid, pid))
            if ours and spec_info is not None:
                ours_count += len(ours)
                llm, prompt_class, options, info = spec_info
                exam_grades.append(_self_rating_entry(ours, kinds, llm, prompt_class, options, info))
            para["exam_grades"] = exam_grades
            if direct:
                para["grades"] = direct
            paras.append(para)
        paragraphs += len(paras)
        lines.append(json.dumps([qid, paras], ensure_ascii=False))
    return lines, paragraphs, recorded_count, ours_count


def export_view(path: str | Path, view: ExamView, outcome: GradingOutcome, spec: GraderSpec) -> ExportSummary:
    """Export an evaluation's exam: regraded grades become our entry; recorded ones stay as they were."""
    return export_workbench(path, view.data, **_view_exported(view, outcome, spec))


def view_text(view: ExamView, outcome: GradingOutcome, spec: GraderSpec) -> str:
    """:func:`export_view`'s paragraph file as text."""
    return workbench_text(view.data, **_view_exported(view, outcome, spec))


def _view_exported(view: ExamView, outcome: GradingOutcome, spec: GraderSpec) -> dict[str, Any]:
    regraded = outcome.source == "grader"
    return {"banks": view.banks, "grades": outcome.grades if regraded else None,
            "answers": outcome.answers if regraded else None, "grader": spec if regraded else None,
            "pool": view.pooled}


# --- import -------------------------------------------------------------------------------------


@dataclass
class ImportedRun:
    """One recorded grading run stored in the cache."""

    llm: str | None
    prompt_class: str | None
    fingerprint: str
    stored: int
    skipped: int  # grades of test points no bank lists (or of passages without text)


def import_workbench_grades(
    source: str | Path | ExamData,
    cache: GradeCache,
    banks: Sequence[QueryBank],
    *,
    registry: GraderRegistry | None = None,
    chunk_size: int = 4096,
) -> list[ImportedRun]:
    """Store every recorded grade of a graded Workbench file in ``cache`` as the ``recorded``
    grader would produce it, one grading run (llm, prompt class) at a time.

    ``banks`` give the test points (the cache identity of a grade includes its test point, and a
    paragraph file holds no question texts); grades of test points outside the banks are counted
    as skipped. Direct (query-level) grades are not test point grades and are not imported.
    """
    if isinstance(source, ExamData):
        data = source
    else:
        from exam_harness.io import load_runs

        data = load_runs([Path(source)]).data
    points: dict[str, tuple[QueryBank, TestPoint]] = {}
    for bank in banks:
        for tp in bank.test_points:
            points.setdefault(tp.id, (bank, tp))
    by_run: dict[tuple[str | None, str | None], dict[Pair, list[RecordedGrade]]] = {}
    for pair, recs in data.recorded.items():
        if is_direct_id(pair[1]):
            continue
        for rec in recs:
            by_run.setdefault((rec.llm, rec.prompt_class), {}).setdefault(pair, []).append(rec)
    registry = registry or default_registry()
    imported: list[ImportedRun] = []
    for (llm, prompt_class), recorded in by_run.items():
        options = {k: v for k, v in (("llm", llm), ("prompt_class", prompt_class)) if v is not None}
        only_this = ExamData.model_construct(
        runs={}, passages=data.passages, judgments={}, recorded=recorded
        )
        grader = registry.create("recorded", GraderConfig(options=options, data=only_this))
        fingerprint = grader.spec().fingerprint()
        requests: list[GradingRequest] = []
        skipped = 0
        for pid, tid in recorded:
            found = points.get(tid)
            passage = data.passages.get(pid)
            if found is None or passage is None:
                skipped += 1
                continue
            bank, tp = found
            requests.append(GradingRequest(bank.query, tp, passage, bank.test_points))
        stored = 0
        for start in range(0, len(requests), chunk_size):
            batch = requests[start : start + chunk_size]
            results = grader.grade_batch(batch)
            new = {
                cache_key(fingerprint, grader.cache_payload(request)): result
                for request, result in zip(batch, results)
                if isinstance(result, Grade)
            }
            skipped += len(batch) - len(new)
            if cache.put_many(new):  # False: the cache cannot store (it said why); nothing counts as imported
                stored += len(new)
        grader.close()
        imported.append(ImportedRun(llm, prompt_class, fingerprint, stored, skipped))
    return imported
