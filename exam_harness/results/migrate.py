"""Kept reports of an older schema read as today's.

Schema 3.0 and 3.1 read as 3.2 (:func:`migrate_3`): ``kind`` is ``exam-report`` and each measure's tau and k
are read from its printed name (a plugin measure this session does not register keeps None).
Schema 3.0 to 3.3 read as 3.4 (:func:`answer_to_reason`): each outcome's ``answer`` (the best grade's
extracted answer or raw response, which is its reason) becomes its ``reason``; they hold no
``best_passage_text``.

Schema 2.x and 3.x read as 4.0 (:func:`to_sections`): the fixed optional fields become sections
(``decided_by`` -> ``sections["decided-by"].parts``; ``cost``, the evaluation's ``grading.cost`` ->
``sections.cost``; ``judge_variance``, one or one per tau ->
``sections["judge-variance"].per_tau``). Either envelope (the pytest report, ``evaluate --json``) migrates.

A 4.0 evaluation document reads as 4.1 (:func:`evaluation_to_sections`): its remaining optional parts become
sections (``official`` and each ``leaderboards[].correlation`` -> ``sections.correlations``; each
``leaderboards[].significance`` -> ``sections.significance``; ``agreement``, ``min_answers``,
``direct_agreement`` -> ``sections.agreement``; ``external_qrels`` -> ``sections["external-qrels"]``).

A feature's section that an older schema held as a field of its own migrates it itself (:func:`legacy_sections`:
the section's optional ``from_legacy(raw, schema)``, and ``legacy_fields``, the fields of a 4.0 evaluation it takes;
the TREC RAG feature's ``trec-rag``, a 3.x report's field, and ``trec-rag-agreement``, a 4.0 evaluation's), in both
steps.

A 4.0 or 4.1 document (either envelope) reads as 4.2 (:func:`cascade_before_4_2`): each cascade entry of its
judge-notes section held the audit's estimated miss rate, which is no lower bound of the kept share. What is
derivable is derived (``pairs`` = ``calls`` + ``filtered``; ``target``, the ``target_recall`` the document's
grader was asked for); the figures that version did not record (``found``, ``lost_at_most``, ``kept_lower_bound``,
``reached``, the seconds) are None, its own (``kept``, ``audited``, ``audit_passes``, ``miss_rate``, ``interval``)
move to ``miss_estimate`` and its statement stays the statement.

Schema 2.x reads as 3.0 first: its fixed score fields become scores keyed by measure name.

A 2.x report held ``exam_cover``/``n_exam_cover`` (+ ``_stderr``), ``nugget_f`` and ``qrels_measures[label]
[measure]`` per run and per query. Each becomes the score of the measure the session computed, named as
schema 3.0 names it, from the report's settings (k, tau, pool, qrels m, label variants). Two parameters
were not written into 2.x reports and take the defaults the pytest sessions that wrote them used: n-EXAM's
``empty`` policy (``skip``; ``zero`` where a per-query n-EXAM is missing could not have happened) and
nugget F's ``beta`` (3).
"""

from __future__ import annotations

from typing import Any

from exam_harness.core.errors import ConfigError
from exam_harness.measures.base import Measure
from exam_harness.measures.exam import ExamCover, NExam, NuggetF
from exam_harness.measures.parsing import parse_measure
from exam_harness.measures.trec import TrecMeasure
from exam_harness.results.schema import MeasureInfo

EMPTY = "skip"  # the n-EXAM policy of every 2.x report (--exam-n-exam-empty's default)
BETA = 3.0  # nugget F's beta in every pytest session (pytest has no --beta)


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """A 2.x, 3.x, 4.0 or 4.1 report document (parsed JSON) rewritten as today's; anything else is returned
    unchanged, for the schema check to judge. Malformed content is left for that check to name too. A 3.x or 4.x
    report keeps the ``schema_version`` it was written as."""
    return cascade_before_4_2(to_sections(answer_to_reason(migrate_3(_migrate_2(raw)))))


_OLD_CASCADE = ("kept", "audited", "audit_passes", "miss_rate", "interval")  # a 4.0/4.1 entry's own figures


def cascade_before_4_2(raw: dict[str, Any]) -> dict[str, Any]:
    """A 4.0 or 4.1 document's cascade entries (``sections["judge-notes"].cascade[]``) in 4.2's shape, recording
    nothing that version did not (see the module's docstring). Anything else is returned unchanged; a malformed
    entry is moved as it is, for the schema check to name."""
    if str(raw.get("schema_version", "")) not in ("4.0", "4.1"):
        return raw
    sections = raw.get("sections")
    notes = sections.get("judge-notes") if isinstance(sections, dict) else None
    entries = notes.get("cascade") if isinstance(notes, dict) else None
    settings = raw.get("settings")
    grader = settings.get("grader") if isinstance(settings, dict) else None
    options = grader.get("options") if isinstance(grader, dict) else None
    target = options.get("target_recall") if isinstance(options, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or "miss_rate" not in entry or "kept_lower_bound" in entry:
            continue
        old = {key: entry.pop(key) for key in _OLD_CASCADE if key in entry}
        calls, filtered = entry.get("calls"), entry.get("filtered")
        if type(calls) is int and type(filtered) is int:  # else no pairs: the schema check refuses the entry
            entry["pairs"] = calls + filtered  # every pair was sent or filtered
        entry.update(found=None, lost_at_most=None, kept_lower_bound=None, reached=None, miss_estimate=old,
                     target=target if isinstance(target, (int, float)) and not isinstance(target, bool) else None)
    return raw


def to_sections(raw: dict[str, Any]) -> dict[str, Any]:
    """A 3.x document's fixed optional fields moved into ``sections`` (4.0)."""
    if str(raw.get("schema_version", "")).split(".")[0] != "3" or "sections" in raw:
        return raw
    sections: dict[str, Any] = {}
    decided = raw.pop("decided_by", None)
    if decided:
        sections["decided-by"] = {"parts": decided}
    grading = raw.get("grading")
    cost = raw.pop("cost", None)
    if isinstance(grading, dict) and "cost" in grading:  # the evaluation envelope held it in its grading summary
        cost = grading.pop("cost")
    if cost is not None:
        sections["cost"] = cost
    judge = raw.pop("judge_variance", None)
    if judge is not None:
        sections["judge-variance"] = {"per_tau": judge if isinstance(judge, list) else [judge]}
    raw["sections"] = _in_registry_order(sections, legacy_sections(raw, "3"))
    return raw


def legacy_sections(raw: dict[str, Any], schema: str) -> dict[str, Any]:
    """The content of each registered section that takes its own legacy fields out of a document of schema
    ``schema`` (``"3"``: a 3.x report or evaluation; ``"4.0"``: a 4.0 evaluation): its ``from_legacy(raw, schema)``,
    which pops them (None: the document holds none)."""
    from exam_harness.results.sections import active_sections

    found: dict[str, Any] = {}
    for section in active_sections().values():
        migrate = getattr(section, "from_legacy", None)
        content = migrate(raw, schema) if callable(migrate) else None
        if content is not None:
            found[section.name] = content
    return found


def _legacy_fields() -> set[str]:
    """The top-level fields of a 4.0 evaluation some registered section migrates (its optional ``legacy_fields``)."""
    from exam_harness.results.sections import active_sections

    return {name for section in active_sections().values() for name in getattr(section, "legacy_fields", ())}


def _in_registry_order(sections: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``sections`` with ``added`` among them, both in the order documents show sections (the registry's)."""
    from exam_harness.results.sections import active_sections

    order = {name: i for i, name in enumerate(active_sections())}
    merged = {**sections, **added}
    return dict(sorted(merged.items(), key=lambda item: order.get(item[0], len(order))))


_EVALUATION_PARTS = ("official", "agreement", "min_answers", "direct_agreement", "external_qrels")


def evaluation_to_sections(raw: dict[str, Any]) -> dict[str, Any]:
    """A 4.0 evaluation document's top-level optional parts and per-leaderboard correlations and
    significance moved into ``sections`` (4.1). Anything else is returned unchanged; a malformed part is
    moved as it is, for the schema check to name."""
    boards = raw.get("leaderboards")
    boards = [b for b in boards if isinstance(b, dict)] if isinstance(boards, list) else []
    old = any(key in raw for key in (*_EVALUATION_PARTS, *_legacy_fields())) or any(
        "correlation" in b or "significance" in b for b in boards)
    sections = raw.get("sections", {})
    if raw.get("kind") != "evaluation" or not old or not isinstance(sections, dict):
        return raw
    infos = {m.get("name"): m for m in raw.get("measures") or [] if isinstance(m, dict)}
    official = raw.pop("official", None)
    correlations = [{**_board_info(infos.get(b.get("measure"), {}), b), "label": infos.get(b.get("measure"), {})
                     .get("label"), "correlation": b.pop("correlation")} for b in boards if "correlation" in b]
    if official is not None:
        sections["correlations"] = {"official": official, "measures": correlations}
    significance = [(b, b.pop("significance")) for b in boards if "significance" in b]
    if significance and all(isinstance(sig, dict) for _, sig in significance):
        first = significance[0][1]
        sections["significance"] = {
            **{key: first.get(key) for key in ("baseline", "method", "alpha", "resamples")},
            "measures": [{**_board_info(infos.get(b.get("measure"), {}), b),
                          "runs": _in_board_order(raw, b.get("measure"), sig.get("runs"), official)}
                         for b, sig in significance]}
    agreement = raw.pop("agreement", None)
    min_answers, direct = raw.pop("min_answers", None), raw.pop("direct_agreement", None)
    if agreement is not None:
        sections["agreement"] = {"tables": agreement, "min_answers": min_answers or [], "direct": direct or []}
    external = raw.pop("external_qrels", None)
    if isinstance(external, dict):
        sections["external-qrels"] = {**external, "official": official}
    sections.update(legacy_sections(raw, "4.0"))
    raw["sections"] = sections
    return raw


def _board_info(info: dict[str, Any], board: dict[str, Any]) -> dict[str, Any]:
    """What a section names a leaderboard by: the measure's name, short name, title and tau (0: none)."""
    return {"measure": board.get("measure"), "key": board.get("key"), "title": info.get("title"),
            "min_grade": info.get("min_grade") or 0}


def _in_board_order(raw: dict[str, Any], measure: object, runs: object, official: object) -> object:
    """A measure's comparisons with the baseline in the order its leaderboard lists the runs."""
    from exam_harness.results.evaluation import system_order

    if not isinstance(runs, dict):
        return runs
    means: dict[str, float] = {}
    for system in raw.get("systems") or []:
        scores = system.get("scores") if isinstance(system, dict) else None
        score = scores.get(measure) if isinstance(scores, dict) else None
        mean = score.get("mean") if isinstance(score, dict) else None
        if isinstance(system, dict) and isinstance(system.get("run"), str) and isinstance(mean, (int, float)):
            means[system["run"]] = float(mean)
    order = system_order(list(runs), official if isinstance(official, dict) else None, means)
    return {run: runs[run] for run in order}


def migrate_3(raw: dict[str, Any]) -> dict[str, Any]:
    """A 3.0 or 3.1 report gains 3.2's fields: ``kind`` and each measure's ``min_grade`` and ``k``."""
    if str(raw.get("schema_version", "")) not in ("3.0", "3.1"):
        return raw
    raw.setdefault("kind", "exam-report")
    for info in raw.get("measures") or []:
        if isinstance(info, dict) and isinstance(info.get("name"), str) and "min_grade" not in info:
            info.update(_tau_and_k(info["name"]))
    return raw


def _tau_and_k(name: str) -> dict[str, Any]:
    try:
        parsed = MeasureInfo.of(parse_measure(name))
    except (ConfigError, ValueError):  # a plugin measure unknown here: its tau and k stay unknown
        return {}
    return {"min_grade": parsed.min_grade, "k": parsed.k}


def answer_to_reason(raw: dict[str, Any]) -> dict[str, Any]:
    """A 3.0 to 3.3 report's ``outcomes[].answer`` renamed ``reason`` (3.4)."""
    if str(raw.get("schema_version", "")) not in ("3.0", "3.1", "3.2", "3.3"):
        return raw
    outcomes = raw.get("outcomes")
    for outcome in outcomes if isinstance(outcomes, list) else []:
        if isinstance(outcome, dict) and "answer" in outcome and "reason" not in outcome:
            outcome["reason"] = outcome.pop("answer")
    return raw


def _migrate_2(raw: dict[str, Any]) -> dict[str, Any]:
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
    return _trec_scores(scores, system, trec)


def _query_scores(row: dict[str, Any], cover: Measure, n_exam: Measure, nugget: Measure,
                  trec: dict[tuple[str, str], TrecMeasure]) -> dict[str, Any]:
    scores: dict[str, Any] = {str(cover): row.pop("exam_cover", None)}
    for measure, value in ((n_exam, row.pop("n_exam_cover", None)), (nugget, row.pop("nugget_f", None))):
        if value is not None:
            scores[str(measure)] = value
    return _trec_scores(scores, row, trec)


def _trec_scores(scores: dict[str, Any], entry: dict[str, Any],
                 trec: dict[tuple[str, str], TrecMeasure]) -> dict[str, Any]:
    """``scores`` with the trec measures of an entry's ``qrels_measures`` (label -> name -> value) added."""
    by_label = entry.pop("qrels_measures", {}) or {}
    for (label, name), measure in trec.items():
        value = by_label.get(label, {}).get(name) if isinstance(by_label, dict) else None
        if value is not None:
            scores[str(measure)] = value
    return scores
