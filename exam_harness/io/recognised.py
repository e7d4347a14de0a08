"""The run-side file forms the loaders recognise, as one text for error messages (``expected=``).

Its own module so that the run loader and each format's reader can name it without importing each other.
"""

from __future__ import annotations

RECOGNISED_FORMS = (
    "collection.tsv or *.collection.tsv (passage_id<TAB>text), "
    "collection.jsonl or *.collection.jsonl ({id, text}), "
    "*.run or *.trec (TREC run: qid Q0 docid rank score tag), "
    "*.responses.jsonl (generated responses: {query_id, run, response}), "
    "*.jsonl (TREC RAG answers: {run_id, topic_id, references, answer: [{text, citations}]} or the 2025 "
    "{metadata, references, answer}; nugget assignments: {qid, run_id, answer_text, nuggets: [{text, importance, "
    "assignment}]}; else a Workbench paragraph file: [query_id, [paragraph, ...]]), "
    "a file of any other name whose first line is a TREC RAG answer; "
    "each optionally .gz"
)
