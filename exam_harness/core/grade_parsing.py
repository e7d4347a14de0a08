"""The method's rules for turning an LLM's text into a grade (docs/method.md, "Grading").

Self-rating: a response that is a single digit 0..5 (punctuation and space around it allowed) is
the grade; otherwise an unanswerability expression gets 0; any other text gets 1. (The reference
implementation swapped the two fallbacks; we implement the rule as the method writes it.)
"""

from __future__ import annotations

import re

UNANSWERABLE_EXPRESSIONS: tuple[str, ...] = (
    "unanswerable",
    "no",
    "no answer",
    "not enough information",
    "unknown",
    "it is not possible to tell",
    "it does not say",
    "no relevant information",
)

_SURROUNDING = " \t\r\n.,;:!?\"'()[]{}<>*-_`"
_DIGIT = re.compile(r"^[0-5]$")


def _normalise(text: str) -> str:
    return " ".join(text.strip().strip(_SURROUNDING).lower().split())


def single_digit_grade(response: str, max_grade: int = 5) -> int | None:
    """The grade if the response is one digit in 0..max_grade with only punctuation/space around it."""
    core = response.strip().strip(_SURROUNDING)
    if _DIGIT.match(core) and int(core) <= max_grade:
        return int(core)
    return None


# A number, signed or not, with at most brackets, quotes and end punctuation around it.
_NUMBER = re.compile(r"^[\s\"'(\[*`]*(?P<number>[+-]?(\d+([.,]\d+)?|[.,]\d+))[\s\"')\]*`.,;:!?]*$")


def is_malformed_rating(response: str, max_grade: int = 5) -> bool:
    """An answer to a rating prompt that is no answer at all: empty, or a number off the 0..max_grade
    scale ("7", "-1", "4.5"). Such an answer is asked again and finally reported as a failure, never
    read as grade 1 (the method's fallback for other text)."""
    if not response.strip().strip(_SURROUNDING):
        return True
    match = _NUMBER.match(response)
    if match is None:
        return False
    number = match.group("number")
    return not (number.isdigit() and len(number) == 1 and int(number) <= max_grade)


def is_unanswerable(response: str) -> bool:
    return _normalise(response) in UNANSWERABLE_EXPRESSIONS


def parse_self_rating(response: str, max_grade: int = 5) -> int:
    """Digit -> grade; unanswerability expression -> 0; anything else -> 1."""
    return read_self_rating(response, max_grade)[0]


# The fallback rules, by the name a grade read by one carries (Grade.fallback): the answer held no grade.
FALLBACK_UNANSWERABLE = "unanswerable text -> 0"
FALLBACK_OTHER_TEXT = "other text -> 1"
FALLBACK_NOT_A_GRADE = "no grade digit -> 0"
FALLBACK_NOT_YES_NO = "neither yes nor no -> 0"
# a nugget label of a track prompt's answer that is none of the three (an LLM's stray words): nuggetizer keeps
# it and its calculate_nugget_scores counts it 0
FALLBACK_STRAY_LABEL = "a label other than support/partial_support/not_support -> 0, as nuggetizer counts it"


def read_self_rating(response: str, max_grade: int = 5) -> tuple[int, str | None]:
    """:func:`parse_self_rating`'s grade and the fallback rule that gave it (None: the answer's digit)."""
    grade = single_digit_grade(response, max_grade)
    if grade is not None:
        return grade, None
    return (0, FALLBACK_UNANSWERABLE) if is_unanswerable(response) else (1, FALLBACK_OTHER_TEXT)


def parse_yes_no(response: str) -> int | None:
    """Yes -> 1, No -> 0, anything else -> None (the caller decides; never guessed)."""
    word = _normalise(response).split(" ", 1)[0].strip(_SURROUNDING) if response.strip() else ""
    if word == "yes":
        return 1
    if word == "no":
        return 0
    return None


_ILL_FORMED = re.compile(r"^\(?([a-z]|[ivx]+)[.)]?$")


def is_ill_formed_answer(answer: str) -> bool:
    """Answers like 'a. ', '(iii)' or empty text are not answers (the method's answer-key mode)."""
    core = answer.strip().lower()
    return not core or bool(_ILL_FORMED.match(core))


# --- TREC RAG track answers (nugget assignment lists, UMBRELA scores) -------------------------------

ASSIGNMENT_GRADES = {"support": 2, "partial_support": 1, "not_support": 0}
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_UMBRELA_SCORE = re.compile(r"final\s+score\s*[:=]?\s*\**\s*(\d+)", re.IGNORECASE)


def _label(item: str) -> str:
    return "_".join(item.strip().strip("\"'`").strip().lower().replace("-", " ").split())


def parse_assignment_list(response: str, count: int, labels: tuple[str, ...]) -> list[int] | None:
    """The grades (support 2, partial_support 1, not_support 0) of a list answer naming exactly
    ``count`` labels among ``labels``, e.g. ``['support', 'not_support']``; None for anything else
    (no list, a label not allowed, too few or too many): such an answer is never read as labels.

    The list may be written as a Python or JSON list, with or without quotes, in a code fence, or
    as the bare comma-separated labels; ``partial support`` and ``Partial-Support`` read as
    ``partial_support``."""
    text = _FENCE.sub("", response.strip()).strip()
    if text.lower().startswith("labels:"):  # the prompt's last word, echoed
        text = text[len("labels:") :].strip()
    start, end = text.find("["), text.rfind("]")
    if start >= 0 and end > start:
        if text[:start].strip() or text[end + 1 :].strip(" \t\r\n."):
            return None  # words around the list: an explanation, not the list asked for
        text = text[start + 1 : end]
    elif "[" in text or "]" in text:
        return None
    items = [_label(part) for part in text.split(",")]
    if items and items[-1] == "":
        items.pop()  # a trailing comma
    if len(items) != count or any(item not in labels for item in items):
        return None
    return [ASSIGNMENT_GRADES[item] for item in items]


def parse_assignment_label(response: str) -> int | None:
    """One nugget-assignment label (a custom prompt's answer) as its grade: support 2, partial_support 1,
    not_support 0 (case, quotes and surrounding punctuation free); None for anything else."""
    return ASSIGNMENT_GRADES.get(_label(response.strip().strip(_SURROUNDING)))


def parse_umbrela_score(response: str, max_grade: int = 3) -> int | None:
    """UMBRELA's answer ``##final score: N`` (or a lone digit) as a grade 0..max_grade; None otherwise."""
    found = _UMBRELA_SCORE.findall(response)
    if found:
        value = int(found[-1])
        return value if value <= max_grade else None
    return single_digit_grade(response, max_grade)


SUPPORT_GRADES = {"full_support": 2, "partial_support": 1, "no_support": 0}


def parse_support(response: str) -> int | None:
    """Full Support 2, Partial Support 1, No Support 0 (case, ``_``/``-``/space and surrounding punctuation
    free); None for any other answer."""
    return SUPPORT_GRADES.get(_label(response.strip().strip(_SURROUNDING)))
