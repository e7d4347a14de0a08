"""Converters between exam-harness's inputs and autojudge-base's (1.0.0): banks <-> each of its nugget-bank
kinds, and cited answers <-> ``Report`` (the TREC RAG 2025 answer shape, which autojudge-base reads as it is).

The kinds (docs/autojudge.md says what each keeps):

- ``NuggetBanks`` (AutoArgue's v3): exam questions as ``NuggetQuestion`` with their gold answers, nuggets as
  ``NuggetClaim``; what a bank holds beyond text and gold answers (id, weight, required, facet) travels in
  each nugget's ``metadata`` under ``exam_harness``. A repeated text is kept under its test point id (the
  kind keys its dicts by text, and would merge the copies);
- ``NuggetizerNuggetBanks`` (nuggetizer's create output): nuggets only, ``importance`` among autojudge-base's
  ``vital`` / ``okay`` / ``failed``; ids and weights follow the nugget file's rule (the TREC RAG feature's
  nuggets.py), so a bank read from a nuggetizer file comes back as it went;
- ``Ragtime26NuggetBanks``: questions with their answers (gold answers) and ``importance``; the exam's fields
  in each nugget's ``metadata``;
- nugget documents (``TopicNuggetDocs``: each question with the documents that answer it): a bank's questions
  with a :class:`QuestionDocs` per question.

Each kind's bank record (one per query) has its fields beyond the query's id and text in the exam bank's own
``metadata`` (records.py), so a kind's whole file comes back from kind -> exam -> kind. A bank a kind cannot hold
is refused with the test point (or the bank) and the kind's rule named, never converted with a part left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exam_harness.features.autojudge.nltk_offline import use_offline_nltk_data

use_offline_nltk_data()  # before autojudge-base is first imported: it would download NLTK data otherwise

from autojudge_base import Report  # noqa: E402
from autojudge_base.nugget_data import (  # noqa: E402
    Answer,
    NuggetBank,
    NuggetBanks,
    NuggetClaim,
    NuggetizerNuggetBank,
    NuggetizerNuggetBanks,
    NuggetQuestion,
    Ragtime26Answer,
    Ragtime26Nugget,
    Ragtime26NuggetBank,
    Ragtime26NuggetBanks,
    Ragtime26NuggetMetadata,
)
from autojudge_base.nugget_data.nuggetizer.nuggetizer_data import NuggetizerNugget  # noqa: E402
from autojudge_base.nugget_doc_models import NuggetDocEntry, TopicNuggetDocs  # noqa: E402

from exam_harness.core.answers import CitedAnswer, CitedSentence  # noqa: E402
from exam_harness.core.errors import InputError  # noqa: E402
from exam_harness.core.ids import id_problem, name_problem  # noqa: E402
from exam_harness.core.json_values import freeze_json  # noqa: E402
from exam_harness.core.models import Query, QueryBank, TestPoint, test_point_id  # noqa: E402
from exam_harness.features.autojudge.records import (  # noqa: E402
    ANSWERS,
    OneRecordPerQuery,
    answer_extras,
    laid_over,
    record_extras,
    set_fields,
    split_bank_metadata,
    split_metadata,
)
from exam_harness.io import limits  # noqa: E402

META = "exam_harness"  # the key of exam-harness's own fields in a nugget's metadata
NUGGETIZER_IMPORTANCE = ("vital", "okay", "failed")  # autojudge-base's NuggetizerNugget.importance Literal
V3_KIND = "a NuggetBank (AutoArgue's v3)"


def _ours(tp: TestPoint, others: Mapping[str, Any]) -> dict[str, Any]:
    """The exam's fields a kind has none for, where they are not their defaults (the id is the kind's own id field),
    with the test point's metadata keys that are no field of the kind (``others``)."""
    ours: dict[str, Any] = {}
    if tp.weight != 1.0:
        ours["weight"] = tp.weight
    if tp.required:
        ours["required"] = True
    if tp.required_runs:
        ours["required_runs"] = list(tp.required_runs)
    if tp.facet_id is not None:
        ours["facet_id"] = tp.facet_id
    if tp.choices:
        ours["choices"] = list(tp.choices)
    if others:
        ours["metadata"] = dict(others)
    return ours


def _kind_metadata(tp: TestPoint, own: Any, ours: Mapping[str, Any]) -> dict[str, Any] | None:
    """A nugget's ``metadata``: its own (from the test point's metadata) with the exam's fields under META."""
    if own is not None and not isinstance(own, dict):
        raise ValueError(f"test point {tp.id!r}: its metadata's 'metadata' (the kind's own metadata) must be an "
                         f"object, not {type(own).__name__}")
    if own is None and not ours:
        return None
    return {**(own or {}), **({META: dict(ours)} if ours else {})}


def _gold(tp: TestPoint, extras: Any, model: type[Any]) -> list[Any] | None:
    """The kind's answers of ``tp``'s gold answers, each with its other fields (``extras``: one object per gold
    answer, from the test point's metadata), or None where there is neither."""
    if extras is None:
        return [model(answer=text) for text in tp.gold_answers] or None
    if not isinstance(extras, list) or len(extras) != len(tp.gold_answers) or not all(
            isinstance(e, dict) for e in extras):
        raise ValueError(f"test point {tp.id!r}: its metadata's 'answers' must hold one object per gold answer "
                         f"({len(tp.gold_answers)}), the other fields of each")
    return [model.model_validate({**extra, "answer": text}) for text, extra in zip(tp.gold_answers, extras)]


def _carried(record: Any, derived: Any, answers: Sequence[Any] | None, ours: Mapping[str, Any]) -> dict[str, Any]:
    """A v3 or ragtime26 nugget's fields the test point does not give, as the test point's metadata."""
    carried = {**ours.get("metadata", {}), **record_extras(record, derived, held=("answers", "metadata"))}
    if (more := answer_extras(answers, getattr(derived, "answers", None) is None)) is not None:
        carried[ANSWERS] = more
    if record.metadata is not None:
        own = {k: v for k, v in record.metadata.items() if k != META}
        if own or META not in record.metadata:
            carried["metadata"] = own
    return carried


def _v3_record(tp: TestPoint) -> NuggetQuestion | NuggetClaim:
    question = tp.kind == "question"
    model = NuggetQuestion if question else NuggetClaim
    mine, others = split_metadata(tp, model.model_fields, ("question" if question else "claim",))
    answer_more, own = mine.pop(ANSWERS, None), mine.pop("metadata", None)
    metadata = _kind_metadata(tp, own, _ours(tp, others))
    derived: NuggetQuestion | NuggetClaim
    if question:
        derived = NuggetQuestion.from_lazy(query_id=tp.query_id, question=tp.text, question_id=tp.id,
                                           gold_answers=_gold(tp, answer_more, Answer), importance=tp.importance,
                                           metadata=metadata)
    else:
        if answer_more is not None:
            raise ValueError(f"test point {tp.id!r}: its metadata names 'answers', and a NuggetClaim has none")
        derived = NuggetClaim(query_id=tp.query_id, claim=tp.text, claim_id=tp.id, importance=tp.importance,
                              metadata=metadata)
    return laid_over(derived, mine, tp, V3_KIND)


def _key(taken: Mapping[str, object], text: str, tp: TestPoint) -> str:
    """A kind's dict key of a nugget: its text, or its test point id where the text is taken (a repeat)."""
    return tp.id if text in taken else text


V3_BANK_HELD = ("query_id", "nugget_bank", "claim_bank", "all_nuggets_view")  # what the exam bank writes itself


def _refreshed(own: Any, ours: Mapping[str, Any]) -> Any:
    """A kind's own bank metadata as the exam bank's metadata kept it, its exam key rewritten from the bank
    (``ours``: the exam's fields now; the bank's own fields win over the copy kept). Where the bank has none of
    its fields to give, a kept exam key that gives none either stays as it was."""
    if not isinstance(own, dict) or META not in own:
        return own
    if ours:
        return {**own, META: dict(ours)}
    kept = own[META]
    if isinstance(kept, dict) and not any(kept.values()):
        return own  # an empty exam key ({"facets": {}}, as older versions wrote): the same bank, kept as it was
    return {key: value for key, value in own.items() if key != META}


def _v3_bank(bank: QueryBank) -> NuggetBank:
    """The NuggetBank record of ``bank``'s query, without nuggets: the query's id and text, the exam's facets and
    the metadata keys no field of the kind names under META, and the bank's metadata laid over it."""
    mine, others = split_bank_metadata(bank, NuggetBank.model_fields, V3_BANK_HELD)
    ours: dict[str, Any] = {}
    if bank.query.facets:
        ours["facets"] = dict(bank.query.facets)
    if others:
        ours["metadata"] = others
    if "metadata" in mine:
        mine["metadata"] = _refreshed(mine["metadata"], ours)
    derived = NuggetBank(query_id=bank.query.id, title_query=bank.query.text, metadata={META: ours} if ours else None)
    return set_fields(derived, mine, f"bank {bank.key!r}", V3_KIND)


def banks_to_nugget_banks(banks: Iterable[QueryBank]) -> NuggetBanks:
    """One NuggetBank per query (its facets' test points together; the bank's metadata its record's other
    fields); questions with their gold answers; every copy of a repeated text kept; each test point's metadata
    laid over its nugget (records.py)."""
    by_query: dict[str, NuggetBank] = {}
    one = OneRecordPerQuery(V3_KIND)
    for bank in banks:
        if one.is_new(bank):
            by_query[bank.query.id] = _v3_bank(bank)
        nugget_bank = by_query[bank.query.id]
        questions = nugget_bank.nugget_bank if isinstance(nugget_bank.nugget_bank, dict) else {}
        claims = nugget_bank.claim_bank if isinstance(nugget_bank.claim_bank, dict) else {}
        for tp in bank.test_points:
            record = _v3_record(tp)
            if isinstance(record, NuggetQuestion):
                questions[_key(questions, tp.text, tp)] = record
            else:
                claims[_key(claims, tp.text, tp)] = record
        nugget_bank.nugget_bank = questions or None
        nugget_bank.claim_bank = claims or None
        nugget_bank.index_nuggets()
    return NuggetBanks.from_banks_list(list(by_query.values()))


def _answer_list(question: NuggetQuestion) -> list[Answer] | None:
    answers = question.answers
    if answers is None:
        return None
    return list(answers.values()) if isinstance(answers, dict) else list(answers)


def _plain_point(ours: Mapping[str, Any], **fields: Any) -> TestPoint:
    """A test point of a nugget: its fields, and the exam's that the nugget's META holds."""
    return TestPoint(weight=ours.get("weight", 1.0), required=ours.get("required", False),
                     required_runs=tuple(ours.get("required_runs", ())), choices=tuple(ours.get("choices", ())),
                     facet_id=ours.get("facet_id"), metadata=ours.get("metadata", {}), **fields)


def _test_point(nugget: NuggetQuestion | NuggetClaim, query_id: str) -> TestPoint:
    ours: Mapping[str, Any] = (nugget.metadata or {}).get(META, {})
    importance = None if nugget.importance is None else str(nugget.importance)
    tp: TestPoint
    if isinstance(nugget, NuggetQuestion):
        answers = _answer_list(nugget)
        tp = _plain_point(ours, id=ours.get("id") or nugget.question_id, query_id=query_id, kind="question",
                          text=nugget.question, gold_answers=tuple(a.answer for a in answers or ()),
                          importance=importance)
    else:
        answers = None
        tp = _plain_point(ours, id=ours.get("id") or nugget.claim_id, query_id=query_id, kind="nugget",
                          text=nugget.claim, importance=importance)
    derived = _v3_record(tp)
    return tp.model_copy(update={"metadata": freeze_json(_carried(nugget, derived, answers, ours))})


def nugget_banks_to_banks(nugget_banks: NuggetBanks, queries: Mapping[str, str] | None = None) -> list[QueryBank]:
    """One bank per (query, facet) of ``nugget_banks``, a query's questions before its claims; a query's text
    is its ``title_query``, else ``queries[query_id]``. Test points keep their ids (sub-nuggets are not
    flattened: they travel in the metadata), each nugget's other fields their metadata."""
    out: list[QueryBank] = []
    for query_id, nugget_bank in nugget_banks.banks.items():
        text = nugget_bank.title_query or (queries or {}).get(query_id)
        if not text:
            raise ValueError(f"nugget bank {query_id!r} has no title_query and no topic names its text")
        by_facet: dict[str | None, list[TestPoint]] = {}
        for nugget in nugget_bank.nuggets_as_list():
            tp = _test_point(nugget, query_id)
            by_facet.setdefault(tp.facet_id, []).append(tp)
        ours: Mapping[str, Any] = (nugget_bank.metadata or {}).get(META, {})
        query = Query(id=query_id, text=text, facets=ours.get("facets", {}))
        plain = QueryBank(query=query, test_points=(), metadata=ours.get("metadata", {}))
        carried = {**ours.get("metadata", {}), **record_extras(nugget_bank, _v3_bank(plain), V3_BANK_HELD)}
        out += [QueryBank(query=query, facet_id=facet, test_points=tuple(tps), metadata=carried)
                for facet, tps in by_facet.items()]
    return out


# -- nuggetizer-style ---------------------------------------------------------------------------------


def banks_to_nuggetizer_banks(banks: Iterable[QueryBank]) -> NuggetizerNuggetBanks:
    """The nuggets of ``banks`` as nuggetizer's create output, one bank per query, every copy kept. Refused (a
    ValueError naming the test point) where the kind cannot hold it: a question, an id or weight other than
    the nugget file's rule gives (qid/md5(text), ``~n`` for a repeat; vital 1, else 0), an importance other
    than autojudge-base's vital/okay/failed."""
    from exam_harness.features.trec_rag.nuggets import nugget_weight

    by_query: dict[str, NuggetizerNuggetBank] = {}
    one = OneRecordPerQuery("a NuggetizerNuggetBank")
    for bank in banks:
        if one.is_new(bank):
            by_query[bank.query.id] = _nuggetizer_bank(bank)
        out = by_query[bank.query.id]
        for tp in bank.test_points:
            expected = _repeat_id(tp.query_id, tp.text, [n.text for n in out.nuggets])
            importance = tp.importance  # none stays none: the kind's importance is optional
            weight = nugget_weight(importance or "vital")
            why = ("it is a question (the kind holds nuggets)" if tp.kind == "question"
                   else f"its importance {importance!r} is none of {', '.join(NUGGETIZER_IMPORTANCE)}"
                   if importance is not None and importance not in NUGGETIZER_IMPORTANCE
                   else f"its id is not {expected!r} (the nugget file's rule)" if tp.id != expected
                   else f"its weight {tp.weight} is not {weight} (vital 1, else 0)" if tp.weight != weight
                   else "it is required or in a facet" if tp.required or tp.facet_id else None)
            mine, others = split_metadata(tp, NuggetizerNugget.model_fields, ("text",))
            if why is None and others:
                why = f"its metadata holds {', '.join(map(repr, others))}, which a nuggetizer nugget has no field for"
            if why is not None:
                raise ValueError(f"test point {tp.id!r} cannot be written as a NuggetizerNuggetBank: {why}; "
                                 "write NuggetBanks (AutoArgue's v3), which holds every field")
            out.nuggets.append(laid_over(NuggetizerNugget(text=tp.text, importance=importance), mine, tp,
                                         "a NuggetizerNuggetBank"))
    return NuggetizerNuggetBanks.from_banks_list(list(by_query.values()))


NUGGETIZER_BANK_HELD = ("qid", "nuggets")


def _nuggetizer_bank(bank: QueryBank) -> NuggetizerNuggetBank:
    """The NuggetizerNuggetBank record of ``bank``'s query, without nuggets, the bank's metadata laid over it (a key
    the kind has no field for is refused: it has no free-form field to keep it in)."""
    mine, others = split_bank_metadata(bank, NuggetizerNuggetBank.model_fields, NUGGETIZER_BANK_HELD)
    if others:
        raise ValueError(f"bank {bank.key!r} cannot be written as a NuggetizerNuggetBank: its metadata holds "
                         f"{', '.join(map(repr, others))}, which a nuggetizer bank has no field for; write "
                         "NuggetBanks (AutoArgue's v3), which holds every field")
    return set_fields(NuggetizerNuggetBank(query=bank.query.text, qid=bank.query.id), mine, f"bank {bank.key!r}",
                      "a NuggetizerNuggetBank")


def _repeat_id(query_id: str, text: str, before: Sequence[str]) -> str:
    base = test_point_id(query_id, text)
    n = sum(1 for t in before if t == text) + 1
    return base if n == 1 else f"{base}~{n}"


def nuggetizer_banks_to_banks(nugget_banks: NuggetizerNuggetBanks,
                              queries: Mapping[str, str] | None = None) -> list[QueryBank]:
    """One nugget bank per query, as a nuggetizer nugget file reads (the TREC RAG feature's nuggets.py): importance
    kept (none is vital), weight vital 1 else 0, ids qid/md5(text) with ``~n`` for the n-th copy of a text; a
    nugget's ``reasoning``, ``trace`` and ``assignment`` its metadata."""
    from exam_harness.features.trec_rag.nuggets import nugget_weight

    out = []
    for qid, bank in nugget_banks.banks.items():
        points: list[TestPoint] = []
        texts: list[str] = []
        for nugget in bank.nuggets:
            carried = record_extras(nugget, NuggetizerNugget(text=nugget.text, importance=nugget.importance), ())
            points.append(TestPoint(id=_repeat_id(qid, nugget.text, texts), query_id=qid, kind="nugget",
                                    text=nugget.text, weight=nugget_weight(nugget.importance or "vital"),
                                    importance=nugget.importance, metadata=carried))
            texts.append(nugget.text)
        if points:
            query = Query(id=qid, text=bank.query or (queries or {}).get(qid) or qid)
            carried = record_extras(bank, _nuggetizer_bank(QueryBank(query=query, test_points=())),
                                    NUGGETIZER_BANK_HELD)
            out.append(QueryBank(query=query, test_points=tuple(points), metadata=carried))
    return out


# -- ragtime26 ----------------------------------------------------------------------------------------


def banks_to_ragtime26_banks(banks: Iterable[QueryBank]) -> Ragtime26NuggetBanks:
    """The questions of ``banks`` as ragtime26 nuggets (their gold answers its answers; the exam's fields in
    each nugget's metadata; each test point's metadata laid over its nugget, records.py). A nugget (claim) is
    refused: the kind holds questions only."""
    by_query: dict[str, Ragtime26NuggetBank] = {}
    one = OneRecordPerQuery(RAGTIME26_KIND)
    for bank in banks:
        if one.is_new(bank):
            by_query[bank.query.id] = _ragtime26_bank(bank)
        out = by_query[bank.query.id]
        for tp in bank.test_points:
            if tp.kind != "question":
                raise ValueError(f"test point {tp.id!r} is a nugget, and a Ragtime26NuggetBank holds questions "
                                 "only (autojudge-base's ragtime26 format has no claims); write NuggetBanks")
            expected = _repeat_id(tp.query_id, tp.text, [n.question for n in out.nugget_bank])
            out.nugget_bank.append(_ragtime26_record(tp, expected))
    return Ragtime26NuggetBanks.from_banks_list(list(by_query.values()))


RAGTIME26_KIND = "a Ragtime26NuggetBank"
RAGTIME26_BANK_HELD = ("nugget_bank",)


def _run_metadata(bank: Ragtime26NuggetBank) -> dict[str, Any]:
    """A ragtime26 bank's run metadata as the kind's files hold it (autojudge-base writes them without nulls: a
    null is no value), less ``topic_id`` (the query id)."""
    given = bank.metadata.model_dump(mode="json", exclude_none=True)
    return {key: value for key, value in given.items() if key != "topic_id"}


def _ragtime26_bank(bank: QueryBank) -> Ragtime26NuggetBank:
    """The Ragtime26NuggetBank record of ``bank``'s query, without nuggets: its run metadata the topic id and, under
    META, the query text, facets and the metadata keys no field of the kind names; the bank's metadata laid over
    it (its ``metadata``: the record's run metadata, less topic_id, its META rewritten from the bank)."""
    mine, others = split_bank_metadata(bank, Ragtime26NuggetBank.model_fields, RAGTIME26_BANK_HELD)
    ours: dict[str, Any] = {"query": bank.query.text, "facets": dict(bank.query.facets)}
    if others:
        ours["metadata"] = others
    run = _refreshed(mine.pop("metadata"), ours) if "metadata" in mine else {META: ours}
    if not isinstance(run, dict):
        raise ValueError(f"bank {bank.key!r}: its metadata's 'metadata' (a ragtime26 bank's run metadata) must be an "
                         f"object, not {type(run).__name__}")
    derived = Ragtime26NuggetBank(metadata=Ragtime26NuggetMetadata.model_validate({"topic_id": bank.query.id}),
                                  nugget_bank=[])
    return set_fields(derived, {**mine, "metadata": {**run, "topic_id": bank.query.id}}, f"bank {bank.key!r}",
                      RAGTIME26_KIND)


def _ragtime26_record(tp: TestPoint, expected_id: str) -> Ragtime26Nugget:
    """``tp`` as a ragtime26 nugget; ``expected_id``: the id reading it back gives (the method's rule, ``~n`` for
    the n-th copy of a question in its bank)."""
    mine, others = split_metadata(tp, Ragtime26Nugget.model_fields, ("question",))
    answer_more, own = mine.pop(ANSWERS, None), mine.pop("metadata", None)
    ours = _ours(tp, others)
    if tp.id != expected_id:
        ours["id"] = tp.id  # the kind has no id field: kept where the rule does not give it
    derived = Ragtime26Nugget(question=tp.text, answers=_gold(tp, answer_more, Ragtime26Answer),
                              importance=tp.importance, metadata=_kind_metadata(tp, own, ours))
    return laid_over(derived, mine, tp, "a Ragtime26NuggetBank")


def ragtime26_banks_to_banks(nugget_banks: Ragtime26NuggetBanks,
                             queries: Mapping[str, str] | None = None) -> list[QueryBank]:
    """One bank per (query, facet): each nugget a question, its answers the gold answers, its other fields its
    metadata; ids by the method's rule, ``~n`` for the n-th copy of a question."""
    out: list[QueryBank] = []
    for qid, bank in nugget_banks.banks.items():
        extra = (bank.metadata.model_extra or {}).get(META, {})
        text = extra.get("query") or (queries or {}).get(qid)
        if not text:
            raise ValueError(f"ragtime26 nugget bank {qid!r} names no query text and no topic gives one")
        by_facet: dict[str | None, list[TestPoint]] = {}
        texts: list[str] = []
        for nugget in bank.nuggets_as_list():
            ours: Mapping[str, Any] = (nugget.metadata or {}).get(META, {})
            importance = None if nugget.importance is None else str(nugget.importance)
            expected = _repeat_id(qid, nugget.question, texts)
            texts.append(nugget.question)
            plain = _plain_point(ours, id=ours.get("id") or expected, query_id=qid, kind="question",
                                 text=nugget.question, gold_answers=tuple(a.answer for a in nugget.answers or ()),
                                 importance=importance)
            carried = _carried(nugget, _ragtime26_record(plain, expected), nugget.answers, ours)
            tp = plain.model_copy(update={"metadata": freeze_json(carried)})
            by_facet.setdefault(tp.facet_id, []).append(tp)
        query = Query(id=qid, text=text, facets=extra.get("facets", {}))
        shell = _ragtime26_bank(QueryBank(query=query, test_points=(), metadata=extra.get("metadata", {})))
        carried = {**extra.get("metadata", {}), **record_extras(bank, shell, (*RAGTIME26_BANK_HELD, "metadata"))}
        if (run := _run_metadata(bank)) != _run_metadata(shell):
            carried["metadata"] = run
        out += [QueryBank(query=query, facet_id=facet, test_points=tuple(tps), metadata=carried)
                for facet, tps in by_facet.items()]
    return out


# -- nugget documents -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionDocs:
    """The documents that answer one question, as a nugget-document entry holds them."""

    doc_ids: tuple[str, ...]
    aggregator: str = "OR"
    answer_type: str = "OPEN_ENDED_ANSWER"


def _docs_of(tp: TestPoint) -> QuestionDocs:
    """A question's documents as its metadata holds them (``doc_ids``, ``aggregator``, ``answer_type``)."""
    meta = tp.metadata
    doc_ids, aggregator, answer_type = (meta.get("doc_ids", ()), meta.get("aggregator", "OR"),
                                        meta.get("answer_type", "OPEN_ENDED_ANSWER"))
    if not (isinstance(doc_ids, tuple) and all(isinstance(d, str) for d in doc_ids)
            and isinstance(aggregator, str) and isinstance(answer_type, str)):
        raise ValueError(f"test point {tp.id!r}: its metadata's doc_ids must be a list of texts, its aggregator "
                         "and answer_type texts")
    return QuestionDocs(doc_ids, aggregator, answer_type)


def banks_to_nugget_docs(banks: Iterable[QueryBank], docs: Mapping[str, QuestionDocs] | None = None
                         ) -> dict[str, TopicNuggetDocs]:
    """topic -> its questions with the documents that answer each, as autojudge-base's ``TopicNuggetDocs``:
    ``docs`` (test point id -> QuestionDocs) where it names the question, else its metadata's (a bank read from
    nugget documents keeps them there), else answered by none. The kind is a projection: the exam's other fields
    stay behind."""
    out: dict[str, TopicNuggetDocs] = {}
    for bank in banks:
        topic = out.setdefault(bank.query.id, TopicNuggetDocs(topic_id=bank.query.id, entries=[]))
        for tp in bank.test_points:
            found = (docs or {}).get(tp.id) or _docs_of(tp)
            topic.entries.append(NuggetDocEntry(question=tp.text, doc_ids=list(found.doc_ids),
                                                aggregator=found.aggregator, answer_type=found.answer_type))
    return out


def nugget_docs_to_banks(topics: Mapping[str, TopicNuggetDocs], queries: Mapping[str, str]
                         ) -> tuple[list[QueryBank], dict[str, QuestionDocs]]:
    """The questions of nugget documents as banks (ids by the method's rule, a repeat's ``~n``; each question's
    documents in its metadata: ``doc_ids``, and ``aggregator``/``answer_type`` where not the defaults), and each
    question's documents by test point id."""
    banks: list[QueryBank] = []
    docs: dict[str, QuestionDocs] = {}
    for topic_id, topic in topics.items():
        texts: list[str] = []
        points = []
        for entry in topic.entries:
            tid = _repeat_id(topic_id, entry.question, texts)
            texts.append(entry.question)
            carried = record_extras(entry, NuggetDocEntry(question=entry.question, doc_ids=[]), ("question",))
            points.append(TestPoint(id=tid, query_id=topic_id, kind="question", text=entry.question,
                                    metadata=carried))
            docs[tid] = QuestionDocs(tuple(entry.doc_ids), entry.aggregator, entry.answer_type)
        if points:
            banks.append(QueryBank(query=Query(id=topic_id, text=queries.get(topic_id) or topic_id),
                                   test_points=tuple(points)))
    return banks, docs


KINDS: dict[str, Any] = {"nugget-banks": banks_to_nugget_banks, "nuggetizer": banks_to_nuggetizer_banks,
                         "ragtime26": banks_to_ragtime26_banks}  # the kinds a bank is written as, by name


def nugget_banks_of(nugget_banks: Any, queries: Mapping[str, str] | None = None) -> list[QueryBank]:
    """The exam banks of any of autojudge-base's nugget-bank containers (by its type)."""
    if isinstance(nugget_banks, NuggetizerNuggetBanks):
        return nuggetizer_banks_to_banks(nugget_banks, queries)
    if isinstance(nugget_banks, Ragtime26NuggetBanks):
        return ragtime26_banks_to_banks(nugget_banks, queries)
    if isinstance(nugget_banks, NuggetBanks):
        return nugget_banks_to_banks(nugget_banks, queries)
    raise TypeError(f"no converter for nugget banks of type {type(nugget_banks).__name__}")


# -- reports ---------------------------------------------------------------------------------------------


def answers_to_reports(answers: Iterable[CitedAnswer]) -> list[Report]:
    """Each answer as a Report: the TREC RAG 2025 answer line exam-harness writes, read by autojudge-base."""
    from exam_harness.features.trec_rag.answers import answer_record

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
