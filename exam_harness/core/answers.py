"""Generated answers made of sentences that cite documents: the shape of a TREC RAG answer, and of any
live system whose answer carries citations.

A :class:`CitedAnswer` keeps the answer's sentences in order, each with the indexes of the references
(segment ids) it cites. Nugget assignment reads the sentences joined into one text (:attr:`text`);
support evaluation reads each (sentence, cited reference) pair.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def word_count(text: str) -> int:
    """Words as the TREC RAG validator counts them: the NFKC-normalised text split on whitespace."""
    return len(unicodedata.normalize("NFKC", text).split())


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of an answer; ``citations`` are indexes into the answer's ``references``."""

    text: str
    citations: tuple[int, ...] = ()


@dataclass(frozen=True)
class CitedAnswer:
    """One system's answer to one query. ``metadata`` keeps what the file gave beside the answer (the
    2025 format's team, type and narrative) so that a writer can give it back."""

    run: str
    query_id: str
    query: str
    references: tuple[str, ...]
    sentences: tuple[CitedSentence, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The sentences joined by spaces, as written: the one text a nugget is assigned against (nuggetizer's
        ``answer_text``, ``" ".join`` of the sentences' texts, ``cli/adapters.py``)."""
        return " ".join(s.text for s in self.sentences)

    @property
    def words(self) -> int:
        return sum(word_count(s.text) for s in self.sentences)

    def cited(self, sentence: CitedSentence) -> list[str]:
        """The segment ids ``sentence`` cites."""
        return [self.references[i] for i in sentence.citations]
