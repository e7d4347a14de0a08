"""The method's answer-key check (docs/method.md, "Grading"): is an extracted answer the same as a gold answer?

Both strings are lower-cased, split into words, stripped of English stop words and stemmed
(Snowball); the answer is correct when the Levenshtein distance between the two normalised strings
is below 20% of the longer one's length. Ill-formed answers ("a.", "(iii)", empty) and
unanswerability expressions ("unknown", "no answer", ...) are never correct.

Numbers: a gold answer that states a number matches only a span stating that number (:func:`numbers_agree`).
The same rule read in a passage's raw text (:func:`number_mentions`: each number with its unit and whether its
sentence denies it) tells where a passage states only another number in the gold answer's unit
(:func:`other_number`: the default grader's support does not pass it) and where it states the gold answer's
number only to deny it (:func:`denies_gold`: the answer key does not count it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
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


# --- numbers a text states (the answer key's number rule, read in the raw text) ---------------------------------
# A number group: a number, or a range of two ("5 to 10", "5-10", "between 5 and 10"), with its sign.
_GROUP = r"[-−]?\d+(?:[.,]\d+)*(?:\s*(?:to|-|–|and)\s*[-−]?\d+(?:[.,]\d+)*)?"
_UNIT = r"%|per\s+cent\b|°\s*[CF]\b|[^\W\d_][\w'’]*(?:-[^\W\d_]+)*"
_MENTION = re.compile(rf"(?P<pre>[£$€])?(?P<group>{_GROUP})(?:\s*(?P<unit>{_UNIT}))?")
# A number is contradicted when the words just before it in its sentence deny it ("not 6,000", "far fewer than
# 6,000", "rather than 70"); a bound ("no more than 48", "up to 6,000", "below 42") is not a contradiction.
_DENIED = re.compile(
    r"(?:\b(?:far|much|well|way|considerably|significantly|substantially)\s+(?:fewer|less|lower|more|higher|greater|"
    r"above|below|under|over)(?:\s+than)?|\bnowhere\s+near|\bfar\s+from|\bshort\s+of|\brather\s+than|\binstead\s+of|"
    r"\bother\s+than|\bnever|\bnot)(?:\s+(?:about|around|roughly|nearly|quite|even|the|a|an|just|only|exactly))*\s*$",
    re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;:](?=\s)")
_QUESTION_UNIT = re.compile(r"\bhow\s+(?:many|much)\s+([^\W\d_][\w-]*)", re.IGNORECASE)
_UNIT_ALIASES = {
    "%": "percent", "per cent": "percent", "pct": "percent", "w": "watt", "kw": "kilowatt", "kwh": "kilowatt-hour",
    "wh": "watt-hour", "mwh": "megawatt-hour", "db": "decibel", "dba": "decibel", "°c": "degree", "celsius": "degree",
    "°f": "degree-f", "l": "litre", "liter": "litre", "m": "metre", "meter": "metre", "km": "kilometre",
    "cm": "centimetre", "mm": "millimetre", "h": "hour", "hr": "hour", "min": "minute", "sec": "second", "yr": "year",
    "kg": "kilogram", "g": "gram", "£": "pound", "$": "dollar", "€": "euro",
}


def unit_name(raw: str) -> str:
    """A unit as written, one name for its spellings: lower case, singular, symbols named (``kWh`` and
    ``kilowatt-hours``, ``%`` and ``per cent``, ``°C`` and ``degrees`` alike)."""
    unit = " ".join(raw.lower().replace("’", "'").split()).replace("° ", "°")
    unit = _UNIT_ALIASES.get(unit, unit)
    if len(unit) > 3 and unit.endswith("s") and not unit.endswith(("ss", "us")):
        unit = unit[:-1]
    return _UNIT_ALIASES.get(unit, unit)


@dataclass(frozen=True)
class NumberMention:
    """A number (or a range) a text states, its unit (None: none follows it) and whether its sentence denies it."""

    text: str  # as written, e.g. "5 to 10 minutes"
    numbers: tuple[str, ...]  # as numbers_of reads them
    unit: str | None
    denied: bool


def number_mentions(text: str) -> list[NumberMention]:
    """Every number group ``text`` states, in order, with the unit after it (or a currency sign before it)."""
    out: list[NumberMention] = []
    for found in _MENTION.finditer(text):
        before = text[: found.start()]
        clauses = _CLAUSE_END.split(before)
        unit = found["unit"] or found["pre"]
        out.append(NumberMention(text=found.group(0), numbers=tuple(numbers_of(found["group"])),
                                 unit=unit_name(unit) if unit else None,
                                 denied=bool(_DENIED.search(clauses[-1] if clauses else ""))))
    return out


def gold_unit(gold: str, question: str | None = None) -> str | None:
    """The unit of a gold answer's number: the one written after it, else the one the question asks for ("how
    many watts"); None for a gold answer without a number, or without a unit either way."""
    mentions = [m for m in number_mentions(gold) if m.numbers]
    if not mentions:
        return None
    if mentions[-1].unit is not None:
        return mentions[-1].unit
    asked = _QUESTION_UNIT.search(question or "")
    return unit_name(asked.group(1)) if asked else None


def denies_gold(text: str, gold: str) -> bool:
    """Whether ``text`` states the number of a gold answer only where its sentence denies it ("far fewer than
    6,000 cycles" for "6,000 cycles"): every time it writes that number, and at least once. False for a gold
    answer without a number, and where the text writes its number plainly somewhere."""
    wanted = numbers_of(gold)
    if not wanted:
        return False
    own = {m.numbers: m.denied for m in number_mentions(gold)}  # a gold answer that itself reads "not 5" is not denied
    stated = [m for m in number_mentions(text) if wanted[0] in m.numbers]
    return bool(stated) and all(m.denied and not own.get(m.numbers, False) for m in stated)


def other_number(text: str, gold_answers: Iterable[str], question: str | None = None) -> NumberMention | None:
    """A number ``text`` states in a gold answer's unit (or the question's) that is not the gold answer's, where the
    text states none of the gold answers' numbers plainly in that unit ("rated at 250 watts" for "400 watts", "far
    fewer than 6,000 cycles" for "6,000 cycles"); None otherwise, and for gold answers without numbers. A number
    within the gold answer's range ("about 10 minutes" for "5 to 10 minutes") is the gold answer's."""
    mentions = number_mentions(text)
    found: NumberMention | None = None
    for gold in gold_answers:
        unit = gold_unit(gold, question)
        if unit is None:
            continue
        wanted = set(numbers_of(gold))
        same = [m for m in mentions if m.unit == unit and m.numbers]
        if any(not m.denied and set(m.numbers) <= wanted for m in same):
            return None  # the text states this gold answer's number
        found = found or next(iter(same), None)
    return found
