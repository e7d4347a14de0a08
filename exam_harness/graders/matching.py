"""The method's answer-key check (docs/method.md, "Grading"): is an extracted answer the same as a gold answer?

Both strings are lower-cased, split into words, stripped of English stop words and stemmed
(Snowball); the answer is correct when the Levenshtein distance between the two normalised strings
is below 20% of the longer one's length. Ill-formed answers ("a.", "(iii)", empty) and
unanswerability expressions ("unknown", "no answer", ...) are never correct.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from rapidfuzz.distance import Levenshtein

from exam_harness.core.grade_parsing import is_ill_formed_answer, is_unanswerable

# NLTK's English stop-word list (nltk.corpus.stopwords.words("english"), 179 words), embedded so
# that grading needs no corpus download.
STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be been
    being have has had having do does did doing a an the and but if or because as until while of at
    by for with about against between into through during before after above below to from up down
    in out on off over under again further then once here there when where why how all any both
    each few more most other some such no nor not only own same so than too very s t can will just
    don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
    doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't
    needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()  # noqa: SIM905  (the list, as NLTK prints it, is easier to check)
)

MAX_RELATIVE_DISTANCE = 0.2
_WORD = re.compile(r"\w+(?:['’]\w+)?")


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def normalise(text: str) -> str:
    """Lower-case, drop stop words, stem; words joined by single spaces."""
    words = [w.replace("’", "'") for w in _WORD.findall(text.lower())]
    kept = [w for w in words if w not in STOP_WORDS]
    return " ".join(_stemmer().stemWords(kept))


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_of(text: str) -> list[str]:
    """The numbers written in ``text`` with digits, in order ("1,000" and "1000" alike)."""
    return [n.replace(",", "") for n in _NUMBER.findall(text)]


def numbers_agree(span: str, gold: str) -> bool:
    """Whether ``span`` states the numbers ``gold`` states, the same ones in the same order: a gold answer with a
    number matches only that number ("30 kilograms" is not "20 kilograms", though only one letter differs).
    True for a gold answer without a number."""
    wanted = numbers_of(gold)
    return not wanted or numbers_of(span) == wanted


def is_answer(answer: str) -> bool:
    """False for ill-formed answers and unanswerability expressions, which are never correct."""
    return not (is_ill_formed_answer(answer) or is_unanswerable(answer))


def matches(answer: str, gold: str) -> bool:
    """Whether ``answer`` equals ``gold`` under the method's rule (see the module docstring)."""
    if not is_answer(answer):
        return False
    a, g = normalise(answer), normalise(gold)
    if not a or not g:
        return False
    return Levenshtein.distance(a, g) < MAX_RELATIVE_DISTANCE * max(len(a), len(g))


def matching_gold_answer(answer: str, gold_answers: Iterable[str]) -> str | None:
    """The first gold answer that ``answer`` matches, or ``None``."""
    for gold in gold_answers:
        if matches(answer, gold):
            return gold
    return None
