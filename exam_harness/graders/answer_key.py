"""Answer-key grader: is a gold answer in the passage, by the method's answer check?

For test points with gold answers. The passage is normalised like the answers (lower-case, stop
words removed, Snowball stems, see matching.py); every window of the passage's normalised words
with about the gold answer's length is a candidate span, and the passage is correct (grade 1) when
some span is within the method's edit distance of some gold answer (< 20% of the longer string).

Gold answers are secrets of the bank (a secret bank's must never reach a developer), and grades are
stored in the grade cache, so a grade holds no gold answer in clear: not the matched answer, whose
:func:`gold_fingerprint` stands in for it in the details (with the relative edit distance), and not
the matching passage span, which is a near copy of it (no extracted answer). The gold answers shape
grades through the cache key only, which is a hash. The raw response is the grade's reason, which says
whether a gold answer was found and how close the closest span came, quoting neither (:func:`reason`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from rapidfuzz.distance import Levenshtein

from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest, read_grader_options
from exam_harness.graders.matching import MAX_RELATIVE_DISTANCE, normalise
from exam_harness.models import Grade, GraderSpec, TestPoint

VERSION = "2"  # 2: the raw response is the grade's reason


def gold_fingerprint(test_point_text: str, gold: str) -> str:
    """A stored stand-in for a gold answer: the first 16 hex digits of the SHA-256 of the test point's
    text and the answer. Keyed by the test point's text (as secret as its answers), so that hashing the
    phrases of a passage does not tell which one answers the question; anyone with the bank can check
    which answer matched."""
    return hashlib.sha256(f"{test_point_text}\0{gold}".encode()).hexdigest()[:16]


def best_span(passage_words: Sequence[str], gold: str) -> tuple[str, float] | None:
    """The passage span closest to ``gold`` (both normalised) and its relative edit distance."""
    target = gold.split()
    if not target or not passage_words:
        return None
    best: tuple[str, float] | None = None
    for size in {max(1, len(target) - 1), len(target), len(target) + 1}:
        for start in range(max(1, len(passage_words) - size + 1)):
            span = " ".join(passage_words[start : start + size])
            distance = Levenshtein.distance(span, gold) / max(len(span), len(gold))
            if best is None or distance < best[1]:
                best = (span, distance)
    return best


def closest_gold(text: str, gold_answers: Sequence[str]) -> str | None:
    """The gold answer that ``text`` holds by the answer check (the closest, if several), or None."""
    words = normalise(text).split()
    found: tuple[str, float] | None = None
    for gold in gold_answers:
        span = best_span(words, normalise(gold))
        if span is not None and span[1] < MAX_RELATIVE_DISTANCE and (found is None or span[1] < found[1]):
            found = (gold, span[1])
    return found[0] if found else None


FOUND = "gold answer found"  # how a reason of a grade a found gold answer decided begins (the embedding grader's too)


def naming_the_gold(reason: str | None, gold_answers: Sequence[str], passage: str | None) -> str | None:
    """``reason`` with the gold answer it found named, for the outputs of a bank that is not secret: a stored
    reason names none (the grade cache holds no gold answer), so it is found again in the passage."""
    if reason is None or passage is None or not gold_answers or not reason.startswith(FOUND):
        return reason
    gold = closest_gold(passage, gold_answers)
    return reason if gold is None else f"gold answer {gold!r} found{reason[len(FOUND):]}"


def reason(found: tuple[str, str, float] | None) -> str:
    """The grade's reason, from the closest (gold answer, passage span, relative edit distance): whether a
    gold answer was found and how close its closest span came. Neither is quoted: both are bank secrets."""
    limit = f"{MAX_RELATIVE_DISTANCE:g}"
    if found is None:
        return "no gold answer checked: the passage or the gold answers hold no words after normalising"
    if found[2] < MAX_RELATIVE_DISTANCE:
        return f"{FOUND} in the passage (relative edit distance {found[2]:.2f} < {limit})"
    return f"no gold answer in the passage (closest span at relative edit distance {found[2]:.2f} >= {limit})"


class AnswerKeyGrader(Grader):
    name = "answer-key"

    def __init__(self, config: GraderConfig) -> None:
        read_grader_options(self.name, self.options, config.options)  # it declares none: any option is refused

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            options={"normalise": "lower,stopwords,snowball", "max_relative_distance": MAX_RELATIVE_DISTANCE},
            max_grade=1,
            default_min_grade=1,
        )

    def supports(self, test_point: TestPoint) -> str | None:
        return None if test_point.gold_answers else "it has no gold answers"

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        results: list[GradeResult] = []
        for request in requests:
            words = normalise(request.passage.text).split()
            found: tuple[str, str, float] | None = None
            for gold in request.test_point.gold_answers:
                span = best_span(words, normalise(gold))
                if span is not None and (found is None or span[1] < found[2]):
                    found = (gold, span[0], span[1])
            correct = found is not None and found[2] < MAX_RELATIVE_DISTANCE
            details: dict[str, Any] = {}
            if found is not None:
                fingerprint = gold_fingerprint(request.test_point.text, found[0])
                details = {"gold_fingerprint": fingerprint, "relative_distance": round(found[2], 4)}
            results.append(Grade(grade=int(correct), grader=self.name, details=details, raw_response=reason(found)))
        return results
