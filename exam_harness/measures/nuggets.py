"""Nugget pyramids and the nugget F-score of TREC QA (the method's phase 4).

- Weight of a nugget = number of assessors who call it vital / the largest such count of the
  query (the top nugget weighs 1; the TREC vital/okay split is vital=1, okay=0).
- R = sum of weights of matched nuggets / sum of weights of all nuggets;
  allowance alpha = 100 x (number of matched nuggets, whatever their weight);
  l = non-whitespace characters of the response;
  P = 1 if l < alpha else 1 - (l - alpha) / l;
  F_beta = (beta^2 + 1) P R / (beta^2 P + R), beta = 3 (5 in TREC 2003); F = 0 when P = R = 0.

Computed once per passage: a ranked run's response is its top-k passages joined by spaces, so its
length l is the sum of its passages' lengths (the joining spaces are whitespace). :class:`ResponseLengths`
counts each passage once however many runs rank it, and :func:`nugget_f_of_length` scores a
(run, query) from l without building the joined text. Lengths are counted in C (``bytes.translate``,
``str.count``), never by a Python loop over characters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from exam_harness.core.errors import InputError

ALLOWANCE_PER_NUGGET = 100
# Every character str.isspace() calls whitespace, which is what str.split() splits on (the ASCII ones
# first): the characters a response's length leaves out. tests/measures/test_measures_nuggets.py checks the list
# against every code point.
ASCII_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
WHITESPACE = ASCII_WHITESPACE + (
    "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_ASCII_WHITESPACE_BYTES = ASCII_WHITESPACE.encode("ascii")
_BYTES = bytes(range(256))  # bytes.translate's identity table (faster than none when deleting)


@dataclass(frozen=True)
class NuggetScore:
    recall: float
    precision: float
    f: float
    allowance: int
    length: int


def pyramid_weights(vital_counts: Mapping[str, float]) -> dict[str, float]:
    """Nugget weights: vital count / the largest vital count. All-zero counts give all-zero weights."""
    for nid, count in vital_counts.items():
        if isinstance(count, bool) or not isinstance(count, (int, float)) or not math.isfinite(count) or count < 0:
            raise InputError(
                f"vital count of nugget {nid!r} is invalid", field="vital_counts", value=count,
                expected="a number of assessors >= 0",
            )
    top = max(vital_counts.values(), default=0)
    if top == 0:
        return dict.fromkeys(vital_counts, 0.0)
    return {nid: count / top for nid, count in vital_counts.items()}


def response_length(text: str) -> int:
    """Non-whitespace characters (code points), the length TREC QA charges against the allowance.

    Counted without a Python loop over characters: an ASCII text (the usual case) as its bytes with the
    whitespace deleted, any other as its length less the count of each whitespace character."""
    if text.isascii():
        return len(text.encode("ascii").translate(_BYTES, _ASCII_WHITESPACE_BYTES))
    return len(text) - sum(map(text.count, WHITESPACE))


class ResponseLengths:
    """The length nugget F charges a run on a query, each passage's length counted once.

    A generated answer (``responses``: run -> query -> text) is charged its own length; a ranked run its
    top-k passages', summed from per-passage lengths (``passage_text`` gives a passage's text, None for
    one without text, which adds nothing), the same as the length of those texts joined by spaces."""

    def __init__(self, responses: Mapping[str, Mapping[str, str]], passage_text: Callable[[str], str | None]) -> None:
        self._responses = responses
        self._passage_text = passage_text
        self._passages: dict[str, int] = {}

    def passage(self, passage_id: str) -> int:
        length = self._passages.get(passage_id)
        if length is None:
            text = self._passage_text(passage_id)
            length = self._passages[passage_id] = response_length(text) if text is not None else 0
        return length

    def of_passages(self, passage_ids: Iterable[str]) -> dict[str, int]:
        """passage -> :meth:`passage` of each of ``passage_ids`` (a small table to sum a query's runs from)."""
        return {pid: self.passage(pid) for pid in passage_ids}

    def charged(self, run: str, query: str, top_k: Sequence[str], lengths: Mapping[str, int] | None = None) -> int:
        """The length of ``run``'s response to ``query``, whose top-k passages are ``top_k`` (``lengths``:
        known passage lengths, e.g. :meth:`of_passages` of the query's pool)."""
        response = self._responses.get(run, {}).get(query)
        if response is not None:
            return response_length(response)
        known = self._passages if lengths is None else lengths
        try:  # most passages were counted for an earlier run: sum the known lengths in one C loop
            return sum(map(known.__getitem__, top_k))
        except KeyError:
            return sum(known[p] if p in known else self.passage(p) for p in top_k)


def nugget_f(
    response_text: str,
    weights: Mapping[str, float],
    matched: Iterable[str],
    *,
    beta: float,
) -> NuggetScore:
    """Nugget F_beta of one response, given the ids of the nuggets it matched.

    A bank whose weights sum to 0 gives recall 0. At l = alpha = 0 (empty response, nothing
    matched) the precision formula is 0/0; P = 1 there, as for every l <= alpha.
    """
    return nugget_f_of_length(response_length(response_text), weights, matched, beta=beta)


def nugget_f_of_length(
    length: int,
    weights: Mapping[str, float],
    matched: Iterable[str],
    *,
    beta: float,
) -> NuggetScore:
    """:func:`nugget_f` of a response ``length`` non-whitespace characters long (:class:`ResponseLengths`)."""
    return QueryNuggets(weights, beta=beta).score(length, matched)


class QueryNuggets:
    """:func:`nugget_f_of_length` of many responses to one query: beta checked and the weights summed
    once, each response scored by the same arithmetic."""

    def __init__(self, weights: Mapping[str, float], *, beta: float) -> None:
        if not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta > 0):
            raise InputError("beta must be a positive number", field="beta", value=beta, expected="e.g. 3.0 or 5.0")
        self.weights, self.beta = weights, beta
        self.total = math.fsum(weights.values())
        self._covering: dict[frozenset[str], tuple[float, int]] = {}  # covered set -> recall, matched count

    def score(self, length: int, matched: Iterable[str]) -> NuggetScore:
        hits = set(matched)
        unknown = hits - self.weights.keys()
        if unknown:
            raise InputError(
                "matched nuggets are not in the weights", field="matched", value=sorted(unknown)[:3],
                expected="ids among the query's nuggets",
            )
        recall = self._recall(hits)
        allowance, precision, f = self._precision_f(length, recall, len(hits))
        return NuggetScore(recall=recall, precision=precision, f=f, allowance=allowance, length=length)

    def f_covering(self, length: int, covered: frozenset[str]) -> float:
        """``score(length, covered & weights).f``: the F of a response that covers the test points
        ``covered``, the recall of each distinct covered set summed once (runs share most sets)."""
        found = self._covering.get(covered)
        if found is None:
            hits = covered & self.weights.keys()
            found = self._covering[covered] = (self._recall(hits), len(hits))
        return self._precision_f(length, *found)[2]

    def _recall(self, hits: Iterable[str]) -> float:
        weights, total = self.weights, self.total
        return math.fsum(weights[n] for n in hits) / total if total > 0 else 0.0

    def _precision_f(self, length: int, recall: float, matched: int) -> tuple[int, float, float]:
        """Allowance, precision and F of a response ``length`` long that matched ``matched`` nuggets."""
        beta = self.beta
        allowance = ALLOWANCE_PER_NUGGET * matched
        precision = 1.0 if length <= allowance else 1.0 - (length - allowance) / length
        b2 = beta * beta
        denom = b2 * precision + recall
        f = (b2 + 1.0) * precision * recall / denom if denom > 0 else 0.0
        return allowance, precision, f
