"""Converters between exam-harness's inputs and autojudge-base's: banks <-> ``NuggetBanks`` (AutoArgue's
shape: exam questions as ``NuggetQuestion`` with their gold answers, nuggets as ``NuggetClaim``) and cited
answers <-> ``Report`` (the TREC RAG 2025 answer shape, which autojudge-base reads as it is).

What a bank holds beyond text and gold answers (weight, required, facet) travels in each nugget's
``metadata`` under ``exam_harness``, and the test point's id as ``question_id`` / ``claim_id``, so that a bank
comes back from NuggetBanks as it went in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autojudge_base import Report  # importable offline: the package's __init__ placed the NLTK data
from autojudge_base.nugget_data import NuggetBank, NuggetBanks, NuggetClaim, NuggetQuestion

from exam_harness.core.answers import CitedAnswer, CitedSentence
from exam_harness.core.errors import InputError
from exam_harness.core.ids import id_problem, name_problem
from exam_harness.core.models import Query, QueryBank, TestPoint
from exam_harness.io import limits

META = "exam_harness"  # the key of exam-harness's own fields in a nugget's metadata


def _meta(tp: TestPoint) -> dict[str, Any]:
    return {META: {"id": tp.id, "weight": tp.weight, "required": tp.required, "facet_id": tp.facet_id}}


def banks_to_nugget_banks(banks: Iterable[QueryBank]) -> NuggetBanks:
    """One NuggetBank per query (its facets' test points together); questions with their gold answers."""
    by_query: dict[str, NuggetBank] = {}
    for bank in banks:
        nugget_bank = by_query.setdefault(bank.query.id, NuggetBank(
            query_id=bank.query.id, title_query=bank.query.text, metadata={META: {"facets": dict(bank.query.facets)}}))
        for tp in bank.test_points:
            if tp.kind == "question":
                nugget_bank.add_nuggets(NuggetQuestion.from_lazy(
                    query_id=tp.query_id, question=tp.text, question_id=tp.id,
                    gold_answers=list(tp.gold_answers) or None, importance=tp.importance, metadata=_meta(tp)))
            else:
                nugget_bank.add_nuggets(NuggetClaim(query_id=tp.query_id, claim=tp.text, claim_id=tp.id,
                                                    importance=tp.importance, metadata=_meta(tp)))
    return NuggetBanks.from_banks_list(list(by_query.values()))


def _answers(question: NuggetQuestion) -> tuple[str, ...]:
    answers = question.answers or {}
    values = answers.values() if isinstance(answers, dict) else answers
    return tuple(a.answer for a in values)


def _test_point(nugget: NuggetQuestion | NuggetClaim, query_id: str) -> TestPoint:
    ours: Mapping[str, Any] = (nugget.metadata or {}).get(META, {})
    importance = None if nugget.importance is None else str(nugget.importance)
    common: dict[str, Any] = {"query_id": query_id, "weight": ours.get("weight", 1.0),
                              "required": ours.get("required", False), "importance": importance,
                              "facet_id": ours.get("facet_id")}
    if isinstance(nugget, NuggetQuestion):
        return TestPoint(id=ours.get("id") or nugget.question_id, kind="question", text=nugget.question,
                         gold_answers=_answers(nugget), **common)
    return TestPoint(id=ours.get("id") or nugget.claim_id, kind="nugget", text=nugget.claim, **common)


def nugget_banks_to_banks(nugget_banks: NuggetBanks, queries: Mapping[str, str] | None = None) -> list[QueryBank]:
    """One bank per (query, facet) of ``nugget_banks``, a query's questions before its claims; a query's text
    is its ``title_query``, else ``queries[query_id]``. Test points keep their ids (sub-nuggets are not
    flattened)."""
    out: list[QueryBank] = []
    for query_id, nugget_bank in nugget_banks.banks.items():
        text = nugget_bank.title_query or (queries or {}).get(query_id)
        if not text:
            raise ValueError(f"nugget bank {query_id!r} has no title_query and no topic names its text")
        by_facet: dict[str | None, list[TestPoint]] = {}
        for nugget in nugget_bank.nuggets_as_list():
            tp = _test_point(nugget, query_id)
            by_facet.setdefault(tp.facet_id, []).append(tp)
        query = Query(id=query_id, text=text, facets=(nugget_bank.metadata or {}).get(META, {}).get("facets", {}))
        out += [QueryBank(query=query, facet_id=facet, test_points=tuple(tps)) for facet, tps in by_facet.items()]
    return out


def answers_to_reports(answers: Iterable[CitedAnswer]) -> list[Report]:
    """Each answer as a Report: the TREC RAG 2025 answer line exam-harness writes, read by autojudge-base."""
    from exam_harness.io.trec_rag import answer_record

    return [Report.model_validate(answer_record(answer, "2025")) for answer in answers]


def responses_to_answers(responses: Mapping[str, Mapping[str, str]], queries: Mapping[str, str]) -> list[CitedAnswer]:
    """Plain generated responses (run -> query -> text, as ``*.responses.jsonl`` holds them) as answers of
    one sentence without citations."""
    return [CitedAnswer(run=run, query_id=q, query=queries.get(q, ""), references=(),
                        sentences=(CitedSentence(text),))
            for run, by_query in sorted(responses.items()) for q, text in by_query.items()]


def reports_to_answers(reports: Iterable[Report], queries: Mapping[str, str]) -> list[CitedAnswer]:
    """Each Report (any of autojudge-base's sentence formats) as a cited answer: its cited documents in
    order of first citation become the references."""
    answers = []
    for number, report in enumerate(reports, 1):
        _check_ids(report, number)  # the one id rule, before any file is named after the run
        sentences = report.get_sentences_with_citations()
        references: dict[str, int] = {}
        cited = []
        for sentence in sentences:
            ids = [references.setdefault(doc, len(references)) for doc in (sentence.citations or [])]
            cited.append(CitedSentence(sentence.text, tuple(dict.fromkeys(ids))))
        meta = report.metadata
        query_id = str(meta.topic_id)
        answers.append(CitedAnswer(run=meta.run_id, query_id=query_id,
                                   query=queries.get(query_id) or meta.narrative or "",
                                   references=tuple(references), sentences=tuple(cited),
                                   metadata={"team_id": meta.team_id}))
    return answers


def _check_ids(report: Report, number: int) -> None:
    """A Report's run and topic ids by the one id rule (exam_harness/core/ids.py): an InputError naming the report
    and the field, never a path or a terminal escape further on."""
    meta = report.metadata
    run_id, topic_id = meta.run_id, meta.topic_id if isinstance(meta.topic_id, str) else str(meta.topic_id)
    for field, why, value in (("metadata.run_id", name_problem(run_id, "run_id"), run_id),
                              ("metadata.topic_id", id_problem(topic_id, "topic_id"), topic_id)):
        if why is not None:
            raise InputError(f"report {number} (run {limits.quoted(run_id)}, topic {limits.quoted(topic_id)}): {why}",
                             field=field, value=value, expected="a plain id without whitespace, "
                             "control characters or path separators")


def topics_of(reports: Sequence[Report]) -> dict[str, str]:
    """The topic texts the reports carry (``narrative``), by topic id."""
    return {str(r.metadata.topic_id): r.metadata.narrative for r in reports if r.metadata.narrative}
