"""Support evaluation of cited answers (the TREC RAG track's): is each answer sentence backed by each
document it cites?

Every (sentence, cited document) pair is one grading request: the sentence is the test point (a
``<query>/support/<md5 of the sentence>`` nugget), the cited document the passage, its text taken from the
loaded collection. A grader with the ``support`` prompt grades it 2 (full support), 1 (partial) or 0 (no
support), which count 1, 0.5 and 0. :func:`support_credits` turns the grades into, per answer, each
sentence's credits (one per citation); the citation measures (:mod:`exam_harness.measures.citations`)
score them. A pair that could not be graded has no credit and makes the answer's values incomplete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from exam_harness.core.answers import CitedAnswer
from exam_harness.core.errors import InputError
from exam_harness.core.models import Passage, Query, TestPoint, md5_hex
from exam_harness.graders.base import GradingRequest

SUPPORT_CREDIT = {2: 1.0, 1: 0.5, 0: 0.0}  # full, partial, no support
# run -> query -> per sentence, the credit of each citation (None: not graded); an uncited sentence: ()
Credits = dict[str, dict[str, tuple[tuple[float | None, ...], ...]]]


def support_point_id(query_id: str, sentence: str) -> str:
    return f"{query_id}/support/{md5_hex(sentence)}"


@dataclass(frozen=True)
class SupportPairs:
    """The grading requests of every cited answer, and which (document, sentence point) pair each
    citation of each sentence is."""

    requests: list[GradingRequest]
    # run -> query -> per sentence, its (document id, test point id) pairs in citation order
    pairs: dict[str, dict[str, list[list[tuple[str, str]]]]]


def support_pairs(answers: Mapping[str, Mapping[str, CitedAnswer]], passages: Mapping[str, Passage]) -> SupportPairs:
    """Every (sentence, cited document) pair of ``answers``; a cited document without a text in
    ``passages`` is an InputError (support cannot be judged without it). A document cited twice by one
    sentence counts once; blank sentences are left out."""
    requests: dict[tuple[str, str], GradingRequest] = {}
    pairs: dict[str, dict[str, list[list[tuple[str, str]]]]] = {}
    for run, by_query in answers.items():
        for qid, answer in by_query.items():
            query = Query(id=qid, text=answer.query or qid)
            sentences: list[list[tuple[str, str]]] = []
            for sentence in answer.sentences:
                if not sentence.text.strip():
                    continue
                point = TestPoint(id=support_point_id(qid, sentence.text), query_id=qid, kind="nugget",
                                  text=sentence.text)
                cited: list[tuple[str, str]] = []
                for doc in dict.fromkeys(answer.cited(sentence)):
                    passage = passages.get(doc)
                    if passage is None:
                        raise InputError(
                            f"run {run!r} cites segment {doc!r} for topic {qid!r}, which is in no loaded collection",
                            field="references", value=doc,
                            expected="the text of every cited segment in a collection file among the run paths "
                                     "(collection.tsv, *.collection.jsonl)")
                    requests.setdefault((doc, point.id), GradingRequest(query, point, passage))
                    cited.append((doc, point.id))
                sentences.append(cited)
            pairs.setdefault(run, {})[qid] = sentences
    return SupportPairs(list(requests.values()), pairs)


def support_credits(pairs: SupportPairs, grades: Mapping[tuple[str, str], int]) -> Credits:
    """Per answer and sentence, each citation's credit from its grade (None where it has none)."""
    credits: Credits = {}
    for run, by_query in pairs.pairs.items():
        for qid, sentences in by_query.items():
            credits.setdefault(run, {})[qid] = tuple(
                tuple(SUPPORT_CREDIT[g] if (g := grades.get(pair)) is not None else None for pair in cited)
                for cited in sentences)
    return credits
