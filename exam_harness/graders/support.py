"""How well a passage supports a test point: the signals the default grader reads, the small models
that combine them, and the grade's human-readable reason.

Signals of one (test point, passage) pair (:class:`Signals`), each in 0..1 or -1..1:

- ``span``: the cosine of the test point with the passage's best-matching sentence window
  (:func:`sentence_windows`): a short question or nugget matches the sentences that state it better than
  a whole paragraph, and a long generated answer is read window by window;
- ``passage``: the cosine with the whole passage (what the model reads of it);
- ``words``: the share of the test point's content words (stop words dropped, stemmed, as the answer
  key normalises) that occur in the passage;
- ``query``: the cosine of the test point's *query* with the whole passage: a careful grader reads a
  question in the context of the query it was written for, and the bundled all-MiniLM-L6-v2 was trained
  on (among others) MS MARCO query-passage pairs, the shape of this comparison;
- for test points with gold answers only: ``answer``, the best cosine of a gold answer with a span;
  ``statement``, the best cosine of the question followed by a gold answer with a span; and ``gain``
  (``statement - span``, derived): a passage that states the answer comes closer to the question once
  the answer is added to it, one that only shares the question's words does not.

A model (:class:`SupportModel`) is a logistic regression over the signals it names: ``support`` is the
fitted probability that a person judges the passage relevant (or, for the answer model, answering), and
the grade is the number of cut points it reaches. The shipped file (``support_model.json`` beside this
module) holds the model for all test points, fit on DL19, and under ``with_answers`` the one for test
points with gold answers; each names the data it was fit on. ``exam-harness calibrate --fit-support
OUT.json`` fits the first again on a team's judgments (:mod:`exam_harness.analysis.support_fit`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from exam_harness.core.display import shorten
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.graders.matching import normalise

SIGNALS = ("span", "passage", "words", "query", "answer", "statement", "gain")
QUESTION_SIGNALS = ("span", "passage", "words", "query")  # what calibrate --fit-support fits
SHIPPED_MODEL = Path(__file__).with_name("support_model.json")
QUOTE_CHARS = 100  # the best span as quoted in a reason
# A window is at least this many characters of consecutive sentences (short sentences are joined).
MIN_WINDOW_CHARS = 100
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_REASON = re.compile(
    r"support (?P<support>\d+\.\d+) \(span (?P<span>-?\d+\.\d+), passage (?P<passage>-?\d+\.\d+), "
    r"words (?P<words>\d+\.\d+)(?:, query (?P<query>-?\d+\.\d+))?"
    r"(?:, answer (?P<answer>-?\d+\.\d+), statement (?P<statement>-?\d+\.\d+))?\)"
)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def sentence_windows(text: str, min_chars: int = MIN_WINDOW_CHARS) -> list[str]:
    """``text`` cut into windows of consecutive sentences, each at least ``min_chars`` long (the last may
    be shorter; a too short last one joins the one before), not overlapping: the windows together are
    about as long as the text, so encoding them costs about what encoding the text does. A text of one
    window gives ``[]`` (its window is the text itself)."""
    windows: list[str] = []
    current: list[str] = []
    for sentence in sentences(text):
        current.append(sentence)
        if sum(len(s) + 1 for s in current) > min_chars:
            windows.append(" ".join(current))
            current = []
    if current:
        if windows and sum(len(s) + 1 for s in current) <= min_chars // 2:
            windows[-1] = windows[-1] + " " + " ".join(current)
        else:
            windows.append(" ".join(current))
    return windows if len(windows) > 1 else []


def content_words(text: str) -> set[str]:
    """The stemmed content words of ``text`` (the answer key's normalisation)."""
    return set(normalise(text).split())


def word_overlap(question_words: set[str], passage_words: set[str]) -> float:
    """The share of the question's content words that the passage holds (0 for a question of none)."""
    return len(question_words & passage_words) / len(question_words) if question_words else 0.0


@dataclass(frozen=True)
class Signals:
    span: float
    passage: float
    words: float
    query: float | None = None  # None: read back from a reason of version 4
    answer: float | None = None  # None: the test point has no gold answer
    statement: float | None = None

    def value(self, name: str) -> float:
        if name == "gain":
            return self.value("statement") - self.span
        found: float | None = getattr(self, name)
        if found is None:
            raise ConfigError(f"the signal {name!r} is missing (a test point without gold answers has no answer "
                              "signals; a grade of version 4 has no query signal)")
        return found

    def vector(self, names: Sequence[str] = QUESTION_SIGNALS[:3]) -> list[float]:
        return [self.value(n) for n in names]


@dataclass(frozen=True)
class SupportModel:
    """``support = sigmoid(intercept + weights · signals)``; grade = how many ``cut_points`` it reaches.
    ``with_answers``: the model for test points with gold answers (None: this one grades them too)."""

    signals: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    cut_points: tuple[float, ...]
    fitted_on: str
    answer_key_floor: float  # the least support (of the model that grades the pair) at which a gold answer counts
    notes: dict[str, Any]
    with_answers: SupportModel | None = None

    def support(self, signals: Signals) -> float:
        z = self.intercept + sum(w * x for w, x in zip(self.weights, signals.vector(self.signals)))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def for_pair(self, has_gold_answers: bool) -> SupportModel:
        """The model that grades a test point with (or without) gold answers."""
        return self.with_answers if has_gold_answers and self.with_answers is not None else self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"signals": list(self.signals), "weights": list(self.weights),
                               "intercept": self.intercept, "cut_points": list(self.cut_points),
                               "answer_key_floor": self.answer_key_floor, "fitted_on": self.fitted_on,
                               "notes": self.notes}
        if self.with_answers is not None:
            out["with_answers"] = self.with_answers.to_json()
        return out

    def fingerprint(self) -> str:
        import hashlib

        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def read_support_model(path: Path) -> SupportModel:
    """A support model file (as ``exam-harness calibrate --fit-support`` writes it); a ConfigError names the
    file and the field that is wrong."""
    from exam_harness.io.textio import read_json_file  # bounded and checked as every JSON input

    try:
        _, raw = read_json_file(path)
    except InputError as exc:
        raise ConfigError(f"cannot read the support model: {exc}") from None
    return support_model_of(raw, str(path))


def support_model_of(raw: Any, where: str, prefix: str = "") -> SupportModel:
    def bad(field: str, expected: str) -> ConfigError:
        return ConfigError(f"{where}: field {prefix + field!r} must be {expected}")

    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a support model is a JSON object")
    names = raw.get("signals")
    if not (isinstance(names, list) and names and all(n in SIGNALS for n in names) and len(set(names)) == len(names)):
        raise bad("signals", f"a list of distinct signal names out of {list(SIGNALS)}")
    weights = raw.get("weights")
    if not (isinstance(weights, list) and len(weights) == len(names) and all(_finite(w) for w in weights)):
        raise bad("weights", f"{len(names)} finite numbers (one per signal)")
    if not _finite(raw.get("intercept")):
        raise bad("intercept", "a finite number")
    cuts = raw.get("cut_points")
    if not (isinstance(cuts, list) and len(cuts) == 5 and all(_finite(c) for c in cuts) and cuts == sorted(cuts)):
        raise bad("cut_points", "5 increasing numbers (where grades 1..5 begin)")
    if not _finite(raw.get("answer_key_floor", 0.0)):
        raise bad("answer_key_floor", "a finite number")
    fitted_on = raw.get("fitted_on")
    if not isinstance(fitted_on, str) or not fitted_on:
        raise bad("fitted_on", "a text naming the judgments the model was fit on")
    notes = raw.get("notes", {})
    nested = raw.get("with_answers")
    with_answers = None if nested is None else support_model_of(nested, where, "with_answers.")
    return SupportModel(tuple(names), tuple(float(w) for w in weights), float(raw["intercept"]),
                        tuple(float(c) for c in cuts), fitted_on, float(raw.get("answer_key_floor", 0.0)),
                        notes if isinstance(notes, dict) else {}, with_answers)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@lru_cache(maxsize=1)
def shipped_model() -> SupportModel:
    return read_support_model(SHIPPED_MODEL)


# --- reasons ---------------------------------------------------------------------------------------------


def reason(support: float, signals: Signals, best_span: str) -> str:
    """The grade's reason as stored (the raw response): the best span quoted and cut, then the figures,
    in a form :func:`signals_of_reason` reads back (``calibrate`` refits from stored grades)."""
    figures = f"span {signals.span:.4f}, passage {signals.passage:.4f}, words {signals.words:.4f}"
    if signals.query is not None:
        figures += f", query {signals.query:.4f}"
    if signals.answer is not None and signals.statement is not None:
        figures += f", answer {signals.answer:.4f}, statement {signals.statement:.4f}"
    return f"{quote(best_span)} support {support:.4f} ({figures})"


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    return "“" + shorten(text, limit) + "”"


def signals_of_reason(raw: str) -> tuple[float, Signals] | None:
    """(support, signals) read back from a stored reason, or None when ``raw`` holds none."""
    matches = list(_REASON.finditer(raw))  # the last one: a quoted span could hold a look-alike
    if not matches:
        return None
    found = matches[-1]

    def optional(name: str) -> float | None:
        return None if found[name] is None else float(found[name])

    return float(found["support"]), Signals(float(found["span"]), float(found["passage"]), float(found["words"]),
                                            optional("query"), optional("answer"), optional("statement"))


def fit_logistic(x: Sequence[Sequence[float]], y: Sequence[bool], l2: float = 1e-3,
                 iterations: int = 50) -> tuple[list[float], float]:
    """Logistic regression by Newton's method (a little L2 on the weights, none on the intercept):
    (weights, intercept). numpy only: scikit-learn is no runtime dependency."""
    import numpy as np

    features = np.asarray(x, dtype=float)
    target = np.asarray(y, dtype=float)
    design = np.hstack([features, np.ones((len(features), 1))])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2 * len(features))
    penalty[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (p - target) + penalty * beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return [float(b) for b in beta[:-1]], float(beta[-1])
