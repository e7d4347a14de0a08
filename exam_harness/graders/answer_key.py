"""Answer-key grader: is a gold answer in the passage, by the method's answer check?

For test points with gold answers. The passage is normalised like the answers (lower-case, stop
words removed, Snowball stems, see matching.py); every window of the passage's normalised words
with about the gold answer's length is a candidate span, and the passage is correct (grade 1) when
some span is within the method's edit distance of some gold answer (< 20% of the longer string), and, for a
gold answer with a number, the passage does not state that number only where its sentence denies it ("far
fewer than 6,000 cycles", "rather than 70 degrees": :func:`~exam_harness.graders.matching.denies_gold`).

Gold answers are secrets of the bank (a secret bank's must never reach a developer), and grades are
stored in the grade cache, so a grade holds no gold answer in clear: not the matched answer, whose
:func:`gold_fingerprint` stands in for it in the details (with the relative edit distance), and not
the matching passage span, which is a near copy of it (no extracted answer). The gold answers shape
grades through the cache key only, which is a hash. The raw response is the grade's reason, which says
whether a gold answer was found and how close the closest span came, quoting neither (:func:`reason`).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

from rapidfuzz.distance import Levenshtein

from exam_harness.core.models import Grade, GraderSpec, TestPoint
from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest, read_grader_options
from exam_harness.graders.matching import MAX_RELATIVE_DISTANCE, denies_gold, normalise, numbers_agree

# 2: the raw response is the grade's reason; 3: numbers must agree, a common gold answer decides nothing; 4: a gold
# answer whose number the passage states only to deny it ("far fewer than 6,000 cycles") is not found
VERSION = "4"
# A gold answer found in more than this share of its query's pooled passages (of at least COMMON_MIN_POOL), or of
# every passage of the pass (of at least 2 * COMMON_MIN_POOL), is a common word of the pool: it decides nothing alone.
COMMON_SHARE = 0.5
COMMON_MIN_POOL = 4


def gold_fingerprint(test_point_text: str, gold: str) -> str:
    """A stored stand-in for a gold answer: the first 16 hex digits of the SHA-256 of the test point's
    text and the answer. Keyed by the test point's text (as secret as its answers), so that hashing the
    phrases of a passage does not tell which one answers the question; anyone with the bank can check
    which answer matched."""
    return hashlib.sha256(f"{test_point_text}\0{gold}".encode()).hexdigest()[:16]


def best_span(passage_words: Sequence[str], gold: str) -> tuple[str, float] | None:
    """The passage span closest to ``gold`` (both normalised) and its relative edit distance; a span whose
    numbers are not the gold answer's (:func:`~exam_harness.graders.matching.numbers_agree`) is as far as can be."""
    target = gold.split()
    if not target or not passage_words:
        return None
    best: tuple[str, float] | None = None
    for size in {max(1, len(target) - 1), len(target), len(target) + 1}:
        for start in range(max(1, len(passage_words) - size + 1)):
            span = " ".join(passage_words[start : start + size])
            distance = (Levenshtein.distance(span, gold) / max(len(span), len(gold))
                        if numbers_agree(span, gold) else 1.0)
            if best is None or distance < best[1]:
                best = (span, distance)
    return best


def closest_gold(text: str, gold_answers: Sequence[str], common: Collection[str] = ()) -> str | None:
    """The gold answer that ``text`` holds by the answer check (the closest, if several), or None; the gold
    answers in ``common`` (:func:`common_golds`) are not looked for, nor one whose number ``text`` denies."""
    words = normalise(text).split()
    found: tuple[str, float] | None = None
    for gold in gold_answers:
        if gold in common or denies_gold(text, gold):
            continue
        span = best_span(words, normalise(gold))
        if span is not None and span[1] < MAX_RELATIVE_DISTANCE and (found is None or span[1] < found[1]):
            found = (gold, span[1])
    return found[0] if found else None


def common_golds(requests: Sequence[GradingRequest]) -> dict[str, set[str]]:
    """Query id -> its gold answers that are common words of the pool of ``requests``: found (the answer check)
    in more than :data:`COMMON_SHARE` of the query's distinct passages, or of every distinct passage. Such a
    gold answer ("honey" in a bank about bees, "spring" in one about the seasons of a hive) is found in passages
    that do not answer the question, so finding it decides nothing."""
    pools: dict[str, dict[str, None]] = defaultdict(dict)
    golds: dict[str, dict[str, None]] = defaultdict(dict)
    for r in requests:
        pools[r.query.id][r.passage.text] = None
        golds[r.query.id].update(dict.fromkeys(r.test_point.gold_answers))
    everything = list(dict.fromkeys(text for pool in pools.values() for text in pool))
    words = {text: normalise(text).split() for text in everything}
    out: dict[str, set[str]] = {}
    for qid, answers in golds.items():
        pool = list(pools[qid])
        for gold in answers:
            target = normalise(gold)
            found = {text for text in everything if _holds(words[text], target)}
            in_pool = sum(1 for text in pool if text in found)
            if ((len(pool) >= COMMON_MIN_POOL and in_pool > COMMON_SHARE * len(pool))
                    or (len(everything) >= 2 * COMMON_MIN_POOL and len(found) > COMMON_SHARE * len(everything))):
                out.setdefault(qid, set()).add(gold)
    return out


def _holds(words: Sequence[str], gold: str) -> bool:
    span = best_span(words, gold)
    return span is not None and span[1] < MAX_RELATIVE_DISTANCE


FOUND = "gold answer found"  # how a reason of a grade a found gold answer decided begins (the embedding grader's too)


def naming_the_gold(reason: str | None, gold_answers: Sequence[str], passage: str | None) -> str | None:
    """``reason`` with the gold answer it found named, for the outputs of a bank that is not secret: a stored
    reason names none (the grade cache holds no gold answer), so it is found again in the passage."""
    if reason is None or passage is None or not gold_answers or not reason.startswith(FOUND):
        return reason
    gold = closest_gold(passage, gold_answers)
    return reason if gold is None else f"gold answer {gold!r} found{reason[len(FOUND):]}"


COMMON = "a gold answer found is a common word of the pool"
DENIED = "a gold answer's number is in the passage only where its sentence denies it"


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
        self._common: dict[str, set[str]] | None = None  # the pass's common gold answers (prepare)

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

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        """Find the common gold answers of the pass's pool (:func:`common_golds`)."""
        self._common = common_golds(requests)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        common = self._common if self._common is not None else common_golds(requests)
        results: list[GradeResult] = []
        for request in requests:
            words = normalise(request.passage.text).split()
            skipped = common.get(request.query.id, set())
            found: tuple[str, str, float] | None = None
            denied = False
            for gold in request.test_point.gold_answers:
                if gold in skipped:
                    continue
                if denies_gold(request.passage.text, gold):
                    denied = True
                    continue
                span = best_span(words, normalise(gold))
                if span is not None and (found is None or span[1] < found[2]):
                    found = (gold, span[0], span[1])
            correct = found is not None and found[2] < MAX_RELATIVE_DISTANCE
            details: dict[str, Any] = {}
            if found is not None:
                fingerprint = gold_fingerprint(request.test_point.text, found[0])
                details = {"gold_fingerprint": fingerprint, "relative_distance": round(found[2], 4)}
            said = reason(found)
            if found is None and skipped:
                said = f"{COMMON} (found in most passages): it decides nothing alone"
            if denied and not correct:  # "far fewer than 6,000", "not 6,000", "rather than 6,000"
                said = f"{DENIED}: it is not found" + ("" if found is None else f"; {said}")
            results.append(Grade(grade=int(correct), grader=self.name, details=details, raw_response=said))
        return results
