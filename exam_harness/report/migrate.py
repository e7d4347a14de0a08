"""Kept reports of older schemas read as the current one.

Schema 3.0 and 3.1 reports read as 3.2: each outcome's ``answer`` (the best grade's extracted answer or raw
response, which is its reason) becomes its ``reason``; they hold no ``best_passage_text``.

Reports of schema 2.x read as 3.0 first: their fixed score fields become scores keyed by measure name.

A 2.x report held ``exam_cover``/``n_exam_cover`` (+ ``_stderr``), ``nugget_f`` and ``qrels_measures[label]
[measure]`` per run and per query. Each becomes the score of the measure the session computed, named as
schema 3.0 names it, from the report's settings (k, tau, pool, qrels m, label variants). Two parameters
were not written into 2.x reports and take the defaults the pytest sessions that wrote them used: n-EXAM's
``empty`` policy (``skip``; ``zero`` where a per-query n-EXAM is missing could not have happened) and
nugget F's ``beta`` (3).
"""

from __future__ import annotations

from typing import Any

from exam_harness.measures.base import Measure
from exam_harness.measures.exam import ExamCover, NExam, NuggetF
from exam_harness.measures.trec import TrecMeasure
from exam_harness.report.schema import MeasureInfo

EMPTY = "skip"  # the n-EXAM policy of every 2.x report (--exam-n-exam-empty's default)
BETA = 3.0  # nugget F's beta in every pytest session (pytest has no --beta)


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """A 2.x, 3.0 or 3.1 report document (parsed JSON) rewritten as 3.2; anything else is returned
    unchanged, for the schema check to judge. Malformed content is left for that check to name too."""
    return _answer_to_reason(_from_2(raw))


def _answer_to_reason(raw: dict[str, Any]) -> dict[str, Any]:
    """A 3.0 or 3.1 document as 3.2: ``outcomes[].answer`` renamed ``reason``."""
    if str(raw.get("schema_version", "")) not in ("3.0", "3.1"):
        return raw
    outcomes = raw.get("outcomes")
    for outcome in outcomes if isinstance(outcomes, list) else []:
        if isinstance(outcome, dict) and "answer" in outcome and "reason" not in outcome:
            outcome["reason"] = outcome.pop("answer")
    raw["schema_version"] = "3.2"
    return raw


def _from_2(raw: dict[str, Any]) -> dict[str, Any]:
    """A 2.x document as 3.0."""
    version = str(raw.get("schema_version", ""))
    settings = raw.get("settings")
    if version.split(".")[0] != "2" or not isinstance(settings, dict):
        return raw
    try:
        k, tau = int(settings["k"]), int(settings["min_grade"])
        pool, m = str(settings["pool"]), int(settings["qrels_m"])
        labels = [str(label) for label in settings.get("label_variants", [])]
        names = [str(name) for name in settings.get("measures", [])]
    except (KeyError, TypeError, ValueError):
        return raw
    cover = ExamCover(k=k, min_grade=tau)
    n_exam = NExam(k=k, min_grade=tau, pool=pool, empty=EMPTY)
    nugget = NuggetF(k=k, min_grade=tau, beta=BETA)
    trec = {(label, name): TrecMeasure(name=name, label=label, min_grade=tau, m=m, pool=pool, k=k)
            for label in labels for name in names}
    systems, rows = raw.get("systems", []), raw.get("per_query", [])
    has_nuggets = any(isinstance(s, dict) and s.get("nugget_f") is not None for s in systems)
    measures: list[Measure] = [cover, n_exam, *trec.values(), *([nugget] if has_nuggets else [])]
    for system in systems:
        if isinstance(system, dict):
            system["scores"] = _system_scores(system, cover, n_exam, nugget, trec)
    for row in rows:
        if isinstance(row, dict):
            row["scores"] = _query_scores(row, cover, n_exam, nugget, trec)
    raw["measures"] = [MeasureInfo.of(measure).model_dump() for measure in measures]
    raw["schema_version"] = "3.0"
    return raw


def _system_scores(system: dict[str, Any], cover: Measure, n_exam: Measure, nugget: Measure,
                   trec: dict[tuple[str, str], TrecMeasure]) -> dict[str, Any]:
    scores: dict[str, Any] = {
        str(cover): {"mean": system.pop("exam_cover", None), "stderr": system.pop("exam_cover_stderr", None)},
        str(n_exam): {"mean": system.pop("n_exam_cover", None), "stderr": system.pop("n_exam_cover_stderr", None)},
    }
    nugget_f = system.pop("nugget_f", None)
    if nugget_f is not None:
        scores[str(nugget)] = nugget_f
    by_label = system.pop("qrels_measures", {}) or {}
    for (label, name), measure in trec.items():
        score = by_label.get(label, {}).get(name) if isinstance(by_label, dict) else None
        if score is not None:
            scores[str(measure)] = score
    return scores


def _query_scores(row: dict[str, Any], cover: Measure, n_exam: Measure, nugget: Measure,
                  trec: dict[tuple[str, str], TrecMeasure]) -> dict[str, Any]:
    scores: dict[str, Any] = {str(cover): row.pop("exam_cover", None)}
    for measure, value in ((n_exam, row.pop("n_exam_cover", None)), (nugget, row.pop("nugget_f", None))):
        if value is not None:
            scores[str(measure)] = value
    by_label = row.pop("qrels_measures", {}) or {}
    for (label, name), measure in trec.items():
        value = by_label.get(label, {}).get(name) if isinstance(by_label, dict) else None
        if value is not None:
            scores[str(measure)] = value
    return scores
