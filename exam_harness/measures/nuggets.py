"""Nugget pyramids and the nugget F-score of TREC QA (the method's phase 4).

- Weight of a nugget = number of assessors who call it vital / the largest such count of the
  query (the top nugget weighs 1; the TREC vital/okay split is vital=1, okay=0).
- R = sum of weights of matched nuggets / sum of weights of all nuggets;
  allowance alpha = 100 x (number of matched nuggets, whatever their weight);
  l = non-whitespace characters of the response;
  P = 1 if l < alpha else 1 - (l - alpha) / l;
  F_beta = (beta^2 + 1) P R / (beta^2 P + R), beta = 3 (5 in TREC 2003); F = 0 when P = R = 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exam_harness.errors import InputError

ALLOWANCE_PER_NUGGET = 100


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
    """Non-whitespace characters, the length TREC QA charges against the allowance."""
    return len("".join(text.split()))  # str.split() splits on exactly the characters str.isspace() knows


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
    if not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta > 0):
        raise InputError("beta must be a positive number", field="beta", value=beta, expected="e.g. 3.0 or 5.0")
    hits = set(matched)
    unknown = hits - set(weights)
    if unknown:
        raise InputError(
            "matched nuggets are not in the weights", field="matched", value=sorted(unknown)[:3],
            expected="ids among the query's nuggets",
        )
    total = math.fsum(weights.values())
    recall = math.fsum(weights[n] for n in hits) / total if total > 0 else 0.0
    allowance = ALLOWANCE_PER_NUGGET * len(hits)
    length = response_length(response_text)
    precision = 1.0 if length <= allowance else 1.0 - (length - allowance) / length
    b2 = beta * beta
    denom = b2 * precision + recall
    f = (b2 + 1.0) * precision * recall / denom if denom > 0 else 0.0
    return NuggetScore(recall=recall, precision=precision, f=f, allowance=allowance, length=length)
