"""LLM graders: every grading prompt class of the method over any :class:`TextBackend`.

:class:`LLMGrader` renders a prompt per (passage, test point) pair, asks its backend (transformers,
an OpenAI-compatible server, ...) for the answers of a whole batch at once, parses each answer with
the method's rules (:mod:`exam_harness.core.grade_parsing`) and records the provenance of every grade.

Prompt modes (grader option ``prompt``):

==================  ===========================================================  ===========
mode                what the model is asked                                      grade
==================  ===========================================================  ===========
self-rating         question self-rating for questions, nugget self-rating        0..5
                    for nuggets (the default; RUBRIC / EXAM++)
question-rating     question self-rating (questions only)                         0..5
nugget-rating       nugget self-rating (nuggets only)                             0..5
answer-extraction   extract an answer; grade 1 if it is an answer (not            0/1
                    ill-formed, not an unanswerability expression)
answer-key          extract an answer, check it against the gold answers          0/1
                    (:mod:`~exam_harness.graders.matching`)
llm-verify          extract an answer, then ask the yes/no verification           0/1
                    prompt once per gold answer; 1 if any says yes
nugget-extraction   extract the passage's mention of the nugget; 1 if any         0/1
sun, sun-few,       direct grading of the passage for the query (no bank):        0/1
fagb, fagb-few,     "yes" -> 1; "no" and anything else -> 0
helm
thomas              direct grading 0..2; an answer that is not 0, 1 or 2 -> 0     0..2
umbrela             TREC RAG relevance (UMBRELA): direct grading 0..3 from          0..3
                    "##final score: N"; any other answer is a failure
nugget-assignment   TREC RAG nugget assignment: up to ``nuggets_per_call``          0..2
                    nuggets of one passage per call, answered as a list of
                    support (2) / partial_support (1) / not_support (0)
nugget-assignment-2 the same with support (2) / not_support (0) only              0, 2
nuggetizer-         the track's own assignment prompts, word for word               0..2
assignment(-2)      (llm/track_prompts.py), read as nuggetizer reads them: a
                    stray label counts 0 (a fallback rule)
umbrela-zeroshot    UMBRELA's own zero-shot prompt, read as umbrela reads it       0..3
support             TREC RAG support: does the document (the passage) support     0..2
                    the answer sentence (the test point)? Full Support 2,
                    Partial Support 1, No Support 0; any other answer fails
custom:PATH         the prompt in file PATH with ``{question}`` and               0..5
                    ``{context}`` (and optionally ``{query}``) placeholders,
                    parsed as self-rating (option ``custom_output`` = yes-no,
                    answer, or assignment: one label support 2 /
                    partial_support 1 / not_support 0, graded as the track's
                    assignments)
==================  ===========================================================  ===========

A nugget-assignment answer that is not a list of exactly one allowed label per nugget is asked again
(:data:`MALFORMED_RETRIES` times), then every nugget of that call fails: it is never read as labels.
The nuggets of a passage are asked in nuggetizer's windows (:meth:`LLMGrader._window`: the bank's nuggets
in order, every copy of a repeated text in its place, ``nuggets_per_call`` at a time), and a nugget's grade
is cached by (query, passage, its window's texts, its position in it): the call that asked it.

Direct baselines grade the passage against the query text, not against a test point: they need no
bank, the grading pass still hands them one request per (passage, test point) pair, and every test
point of a query receives the same grade for a passage. Their :meth:`~LLMGrader.cache_payload` is
keyed on query text and passage text only, so each (query, passage) is graded once.

:data:`LLM_OPTIONS` declares the options every LLM grader takes (``prompt``, ``max_new_tokens``,
``custom_output``); the ``hf`` and ``openai`` graders add their backend's options to them.
"""

from __future__ import annotations

import json
import string
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam_harness.config.options import choice, integer, number, optional, text
from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_parsing import (
    FALLBACK_NOT_A_GRADE,
    FALLBACK_NOT_YES_NO,
    FALLBACK_STRAY_LABEL,
    is_malformed_rating,
    parse_assignment_label,
    parse_assignment_list,
    parse_support,
    parse_umbrela_score,
    parse_yes_no,
    read_self_rating,
    single_digit_grade,
)
from exam_harness.core.models import Grade, GraderSpec, TestPoint
from exam_harness.graders.answer_key import gold_fingerprint
from exam_harness.graders.base import GradeFailure, Grader, GradeResult, GraderOption, GradingRequest
from exam_harness.graders.matching import is_answer, matching_gold_answer
from exam_harness.graders.repeats import moved_seed
from exam_harness.llm import prompts
from exam_harness.llm.backend import Generation, PromptParts, TextBackend
from exam_harness.llm.cost import Meter, Prices, prices_from
from exam_harness.llm.modes import ASSIGNMENT_LABELS_3, MODES, Output, PromptMode
from exam_harness.llm.track_prompts import (
    assignment_grades,
    nuggetizer_nugget_list,
    parse_nuggetizer_labels,
    parse_umbrela_reference,
)

VERSION = "1"

MALFORMED_RETRIES = 2  # a malformed list answer is asked this many times more before its nuggets fail


VERIFY_MAX_NEW_TOKENS = 8
# "assignment": the answer is one nugget-assignment label, support 2 / partial_support 1 / not_support 0
CUSTOM_OUTPUTS: dict[str, Output] = {"self-rating": "self_rating", "yes-no": "yes_no", "answer": "answer",
                                     "assignment": "label"}


def custom_mode(path: str | Path, output: str = "self-rating") -> PromptMode:
    """A prompt mode from a template file with ``{question}`` and ``{context}`` placeholders."""
    from exam_harness.core.errors import InputError
    from exam_harness.io.textio import read_text  # bounded, UTF-8 and a regular file only (a FIFO would block)

    file = Path(path)
    try:
        text = read_text(file)
    except OSError as exc:
        raise ConfigError(f"custom prompt file {str(file)!r} cannot be read: {exc.strerror or exc}") from None
    except InputError as exc:
        raise ConfigError(f"custom prompt file cannot be read: {exc}") from None  # exc names the file (and line)
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as exc:
        raise ConfigError(
            f"custom prompt file {str(file)!r} is not a valid template ({exc}); write literal braces as {{{{ and }}}}"
        ) from None
    allowed = {"question", "context", "query"}
    unknown = sorted(fields - allowed)
    if unknown:
        raise ConfigError(
            f"custom prompt file {str(file)!r} has unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            "allowed are {question}, {context} and {query} (write literal braces as {{ and }})"
        )
    missing = sorted({"question", "context"} - fields)
    if missing:
        raise ConfigError(
            f"custom prompt file {str(file)!r} lacks the placeholder(s) {', '.join('{' + m + '}' for m in missing)}; "
            "a custom prompt needs {question} (the test point) and {context} (the passage)"
        )
    if output not in CUSTOM_OUTPUTS:
        raise ConfigError(f"custom_output={output!r} is invalid; expected one of {', '.join(CUSTOM_OUTPUTS)}")
    kind = CUSTOM_OUTPUTS[output]
    max_grade = 5 if kind == "self_rating" else 2 if kind == "label" else 1
    template_output: prompts.OutputKind = ("self_rating" if kind == "self_rating" else "assignment" if kind == "label"
                                           else "answer")
    template = prompts.PromptTemplate(f"custom:{file.name}", text, template_output, max_grade)
    return PromptMode(
        f"custom:{file}",
        kind,
        question=template,
        nugget=template,
        max_grade=max_grade,
        default_min_grade=4 if kind == "self_rating" else 2 if kind == "label" else 1,
        max_new_tokens=128 if kind == "answer" else 32,
    )


def resolve_mode(prompt: str, custom_output: str = "self-rating") -> PromptMode:
    if prompt.startswith("custom:"):
        return custom_mode(prompt[len("custom:") :], custom_output)
    try:
        return MODES[prompt]
    except KeyError:
        from exam_harness.core.registry import unknown_name_message

        raise ConfigError(unknown_name_message("prompt", prompt, [*MODES, "custom:PATH"])) from None


# --------------------------------------------------------------------------------------------
# The grader


@dataclass
class _AssignmentCall:
    """One nugget-assignment prompt: the nugget texts it lists, the requests each position answers."""

    texts: list[str]
    asked: dict[int, list[int]]  # position in texts -> indices of the requests it answers
    parts: PromptParts


@dataclass
class _Item:
    """One prompt sent to the backend, shared by every request with the same content."""

    template: prompts.PromptTemplate
    parts: PromptParts
    requests: list[int]


class LLMGrader(Grader):
    """Grades (passage, test point) pairs with one prompt mode of the method over a text backend."""

    meter: Meter  # every LLM grader counts its tokens (docs/cost.md)

    def __init__(
        self,
        backend: TextBackend,
        *,
        prompt: str | PromptMode = "self-rating",
        name: str = "llm",
        max_new_tokens: int | None = None,
        custom_output: str = "self-rating",
        nuggets_per_call: int = 10,
        prices: Prices | None = None,
        max_cost: float | None = None,
    ) -> None:
        self.backend = backend
        if nuggets_per_call < 1:
            raise ConfigError(f"grader {name!r}: nuggets_per_call must be at least 1")
        self.nuggets_per_call = nuggets_per_call
        # id(bank tuple) -> (the tuple, test point id -> (its window's texts, its position)): see _window
        self._windows: dict[int, tuple[tuple[TestPoint, ...], dict[str, tuple[tuple[str, ...], int]]]] = {}
        self.mode = prompt if isinstance(prompt, PromptMode) else resolve_mode(prompt, custom_output)
        self.name = name
        self.max_new_tokens = max_new_tokens or self.mode.max_new_tokens
        if self.mode.output in ("self_rating", "thomas") and self.max_new_tokens < 2:
            raise ConfigError(f"grader {name!r}: max_new_tokens must be at least 2 for rating prompts")
        if max_cost is not None and prices is None:
            raise ConfigError(f"grader {name!r}: max_cost needs a price (price_prompt, price_completion)")
        # a backend's own answer limit (the openai option max_tokens) wins over the mode's
        answer_tokens = getattr(backend, "max_tokens", None) or self.max_new_tokens
        self.meter = Meter(self, backend, prices, max_cost, answer_tokens)  # docs/cost.md

    @property
    def needs_bank(self) -> bool:
        """False for the direct baselines, which grade passages against the query alone."""
        return self.mode.needs_bank

    # -- identity -------------------------------------------------------------------------

    def spec(self) -> GraderSpec:
        templates = self.mode.templates
        texts = [t.template for t in templates]
        if self.mode.output == "verify":
            texts.append(prompts.ANSWER_VERIFICATION)
        return GraderSpec(
            name=self.name,
            version=VERSION,
            model=self.backend.model_id,
            revision=self.backend.revision,
            prompt_class="+".join(t.prompt_class for t in templates),
            prompt_text="\n\n".join(texts),
            options={
                "prompt": self.mode.name,
                "output": self.mode.output,
                "max_new_tokens": self.max_new_tokens,
                "backend": self.backend.settings(),
                # the nuggets that share a call shape its answer (only this mode has it: other modes'
                # fingerprints, and so their cached grades, stay as they were)
                **({"nuggets_per_call": self.nuggets_per_call} if self.mode.output == "assignment" else {}),
            },
            max_grade=self.mode.max_grade,
            default_min_grade=self.mode.default_min_grade,
        )

    def supports(self, test_point: TestPoint) -> str | None:
        mode = self.mode
        if mode.direct is not None:
            return None
        if self._template(test_point) is None:
            wanted = "questions" if mode.question is not None else "nuggets"
            if wanted == "questions":
                other = "nugget-rating or nugget-extraction"
            else:
                other = "question-rating or answer-extraction"
            return (
                f"prompt {mode.name!r} grades {wanted} only, and {test_point.id} is a {test_point.kind} (use {other})"
            )
        if mode.needs_gold and not test_point.gold_answers:
            return f"prompt {mode.name!r} needs gold answers, and test point {test_point.id} has none"
        return None

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        if self.mode.direct is not None:
            # Same grade for every test point of the query: key on query and passage only.
            return {"query": request.query.text, "passage": request.passage.text}
        tp = request.test_point
        payload: dict[str, Any] = {"kind": tp.kind, "test_point": tp.text, "passage": request.passage.text}
        if self.mode.needs_gold:
            payload["gold_answers"] = list(tp.gold_answers)
        if any("{query}" in t.template for t in self.mode.templates):
            payload["query"] = request.query.text
        if self.mode.output == "assignment" and (window := self._window(request)) is not None:
            # the nuggets asked beside it shape its label, and a repeated text is asked once per place
            payload["window"], payload["position"] = list(window[0]), window[1]
        return payload

    def call_key(self, request: GradingRequest) -> Hashable | None:
        """Nugget assignment: the (query, passage, window) of the call that answers ``request``."""
        if self.mode.output != "assignment":
            return None
        window = self._window(request)
        return (request.query.text, request.passage.text, None if window is None else window[0])

    def _window(self, request: GradingRequest) -> tuple[tuple[str, ...], int] | None:
        """The nugget window of ``request`` as nuggetizer's ``assign`` cuts it (``_iter_window_bounds``): its
        bank's nuggets in bank order, every copy of a repeated text in its place, in windows of
        ``nuggets_per_call``; (the window's texts, the nugget's position in it). None where the bank is
        not known (a caller that gives the request alone)."""
        bank = request.bank
        if not bank:
            return None
        known = self._windows.get(id(bank))
        if known is None or known[0] is not bank:
            nuggets = [tp for tp in bank if self.supports(tp) is None]
            size = self.nuggets_per_call
            places: dict[str, tuple[tuple[str, ...], int]] = {}
            for start in range(0, len(nuggets), size):
                texts = tuple(tp.text for tp in nuggets[start:start + size])
                for position, tp in enumerate(nuggets[start:start + size]):
                    places[tp.id] = (texts, position)
            if len(self._windows) > 4096:  # one entry per bank; a long pass over many banks starts afresh
                self._windows.clear()
            known = self._windows[id(bank)] = (bank, places)
        return known[1].get(request.test_point.id)

    # -- grading --------------------------------------------------------------------------

    def _template(self, test_point: TestPoint) -> prompts.PromptTemplate | None:
        if self.mode.direct is not None:
            return self.mode.direct
        return self.mode.question if test_point.kind == "question" else self.mode.nugget

    def _parts(self, template: prompts.PromptTemplate, request: GradingRequest) -> PromptParts:
        text = request.test_point.text
        query = request.query.text
        before, after = template.split(question=text, nugget=text, query_title=query, query=query,
                                       nuggets=json.dumps([text], ensure_ascii=False), count="1")
        return PromptParts(before, request.passage.text, after)

    def prompt_for(self, request: GradingRequest) -> PromptParts | None:
        """The (first-stage) prompt this grader sends for ``request``; ``None`` if it is unsupported.
        For dry runs that count calls and tokens before spending them."""
        template = self._template(request.test_point)
        if template is None or self.supports(request.test_point) is not None:
            return None
        return self._parts(template, request)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        if self.mode.output == "assignment":
            return self._assign(requests)
        results: list[GradeResult | None] = [None] * len(requests)
        items: dict[tuple[str, str, str, str], _Item] = {}
        for i, request in enumerate(requests):
            reason = self.supports(request.test_point)
            template = self._template(request.test_point)
            if reason is not None or template is None:
                results[i] = GradeFailure(reason or "no prompt for this test point")
                continue
            parts = self._parts(template, request)
            key = (template.prompt_class, parts.before, parts.context, parts.after)
            if key in items:
                items[key].requests.append(i)
            else:
                items[key] = _Item(template, parts, [i])
        ordered = list(items.values())
        generations = self.backend.generate(
            [item.parts for item in ordered], max_new_tokens=self.max_new_tokens, rating_scale=self.mode.rating_scale
        )
        if len(generations) != len(ordered):
            raise RuntimeError(f"backend answered {len(generations)} prompts for {len(ordered)}")
        graded = self._grade_items(ordered, generations, requests)
        for item, result in zip(ordered, graded):
            for i in item.requests:
                results[i] = result
        return [r if r is not None else GradeFailure("not graded") for r in results]

    # -- batch grading (exam_harness/grading/batches.py) ----------------------------------------

    def batch_unsupported(self) -> str | None:
        """Why this grader's prompts cannot go into a batch file (one prompt per pair, answered once), or None."""
        if self.mode.output == "assignment":
            return "nugget assignment asks about several pairs in one prompt"
        if self.mode.output == "verify":
            return "llm-verify asks a second question that depends on the first answer"
        return None

    def grade_answer(self, request: GradingRequest, generation: Generation) -> GradeResult:
        """The grade the answer ``generation`` to :meth:`prompt_for`'s prompt gives ``request``: the same
        parser as :meth:`grade_batch`, so a malformed answer is a failure, never a grade."""
        template = self._template(request.test_point)
        if template is None or self.supports(request.test_point) is not None:
            return GradeFailure("no prompt for this test point")
        parts = self._parts(template, request)
        return self._grade_items([_Item(template, parts, [0])], [generation], [request])[0]

    def _assign(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        """Nugget assignment: one prompt per window of a (query, passage)'s nuggets (:meth:`_window`; up to
        ``nuggets_per_call``); a malformed list answer is asked again, then fails."""
        results: list[GradeResult | None] = [None] * len(requests)
        template = self.mode.nugget
        assert template is not None
        calls = self._assignment_calls(requests, results)
        answers: dict[int, tuple[list[int | str], Generation]] = {}
        failures: dict[int, GradeFailure] = {}
        pending = list(range(len(calls)))
        for attempt in range(1 + MALFORMED_RETRIES):
            if not pending:
                break
            generations = self.backend.generate([calls[c].parts for c in pending], max_new_tokens=self.max_new_tokens)
            if len(generations) != len(pending):
                raise RuntimeError(f"backend answered {len(generations)} prompts for {len(pending)}")
            again: list[int] = []
            for c, gen in zip(pending, generations):
                if isinstance(gen, GradeFailure):  # the backend has retried what it can retry
                    failures[c] = gen
                    continue
                assert isinstance(gen, Generation)
                grades = self._assignment_grades(gen.text, len(calls[c].texts))
                if grades is None:
                    failures[c] = GradeFailure(
                        f"malformed response {gen.text.strip()[:80]!r} after {attempt + 1} tries: not a list of "
                        f"{len(calls[c].texts)} labels among {', '.join(self.mode.labels)}")
                    again.append(c)
                else:
                    failures.pop(c, None)
                    answers[c] = (grades, gen)
            pending = again
        labels = {grade: label for label, grade in zip(ASSIGNMENT_LABELS_3, (2, 1, 0))}
        for c, call in enumerate(calls):
            if c not in answers:
                for indices in call.asked.values():
                    for i in indices:
                        results[i] = failures.get(c, GradeFailure("not graded"))
                continue
            grades, gen = answers[c]
            made_by_call = sum(len(indices) for indices in call.asked.values())
            details = dict(self._details(template, gen, made_by_call), nuggets_in_call=len(call.texts))
            for position, indices in call.asked.items():
                grade = grades[position]
                if isinstance(grade, str):  # the track's reading: a stray label counts 0, as nuggetizer counts it
                    made = Grade(grade=0, grader=self.name, raw_response=gen.text, extracted_answer=grade,
                                 details=dict(details, position=position, stray_label=True),
                                 fallback=FALLBACK_STRAY_LABEL)
                else:
                    made = Grade(grade=grade, grader=self.name, raw_response=gen.text, extracted_answer=labels[grade],
                                 details=dict(details, position=position))
                for i in indices:
                    results[i] = made
        return [r if r is not None else GradeFailure("not graded") for r in results]

    def _assignment_grades(self, text: str, count: int) -> list[int | str] | None:
        """The grade of each nugget of a call's answer, or, for the track's prompts, the label itself where
        it is none of the three (nuggetizer keeps it and counts it 0); None when the answer is no list of
        ``count`` labels (asked again)."""
        if not self.mode.track:
            found = parse_assignment_list(text, count, self.mode.labels)
            return None if found is None else [*found]
        labels = parse_nuggetizer_labels(text, count)
        if labels is None:
            return None
        # nuggetizer scores every label alike, whichever prompt asked: partial_support is 0.5 after the
        # 2-label prompt too (core/metrics.py)
        grades = assignment_grades(labels, ASSIGNMENT_LABELS_3)
        return [label if grade is None else grade for label, grade in zip(labels, grades)]

    def _assignment_calls(self, requests: Sequence[GradingRequest], results: list[GradeResult | None]
                          ) -> list[_AssignmentCall]:
        """The nugget-assignment prompts of ``requests``: one per window (:meth:`_window`), with the requests
        each position answers; a request whose bank is not known is asked among the distinct texts of its
        (query, passage) in chunks of ``nuggets_per_call``. Unsupported requests get their failure in
        ``results``."""
        template = self.mode.nugget
        assert template is not None
        windows: dict[tuple[str, str, tuple[str, ...]], dict[int, list[int]]] = {}
        loose: dict[tuple[str, str], dict[str, list[int]]] = {}  # (query, passage) -> nugget text -> requests
        for i, request in enumerate(requests):
            reason = self.supports(request.test_point)
            if reason is not None:
                results[i] = GradeFailure(reason)
                continue
            window = self._window(request)
            if window is None:
                by_text = loose.setdefault((request.query.text, request.passage.text), {})
                by_text.setdefault(request.test_point.text, []).append(i)
            else:
                asked = windows.setdefault((request.query.text, request.passage.text, window[0]), {})
                asked.setdefault(window[1], []).append(i)
        calls = [self._call(template, query, passage, list(texts), asked)
                 for (query, passage, texts), asked in windows.items()]
        for (query, passage), by_text in loose.items():
            texts = list(by_text)
            for start in range(0, len(texts), self.nuggets_per_call):
                chunk = texts[start : start + self.nuggets_per_call]
                calls.append(self._call(template, query, passage, chunk,
                                        {p: by_text[text] for p, text in enumerate(chunk)}))
        return calls

    def _call(self, template: prompts.PromptTemplate, query: str, passage: str, texts: list[str],
              asked: dict[int, list[int]]) -> _AssignmentCall:
        nuggets = nuggetizer_nugget_list(texts) if self.mode.track else json.dumps(texts, ensure_ascii=False)
        before, after = template.split(query=query, nuggets=nuggets, count=str(len(texts)))
        return _AssignmentCall(texts, asked, PromptParts(before, passage, after))

    def prompts_for(self, requests: Sequence[GradingRequest]) -> list[PromptParts]:
        """The (first-stage) prompts grading ``requests`` sends, for dry runs: one per supported request,
        or per call of batched nugget assignment."""
        if self.mode.output == "assignment":
            return [call.parts for call in self._assignment_calls(requests, [None] * len(requests))]
        return [p for p in map(self.prompt_for, requests) if p is not None]

    def _details(self, template: prompts.PromptTemplate, generation: Generation, shared_by: int = 1
                 ) -> dict[str, Any]:
        details: dict[str, Any] = {
            "prompt_class": template.prompt_class, "prompt": self.mode.name, "model": self.backend.model_id
        }
        if self.backend.revision:
            details["revision"] = self.backend.revision
        if generation.prompt_tokens is not None:
            details["prompt_tokens"] = generation.prompt_tokens
        if generation.completion_tokens is not None:
            details["completion_tokens"] = generation.completion_tokens
        if shared_by > 1:  # one call made this many grades: each costs its share (llm/cost.py)
            details["shared_by"] = shared_by
        extra = getattr(generation, "details", None)
        if extra:
            details.update(extra)
        return details

    def _grade_items(
        self, items: list[_Item], generations: Sequence[GradeResult | Generation], requests: Sequence[GradingRequest]
    ) -> list[GradeResult]:
        out: list[GradeResult] = []
        verify: list[tuple[int, str]] = []  # (item index, extracted answer) awaiting verification
        for index, (item, gen) in enumerate(zip(items, generations)):
            if isinstance(gen, GradeFailure):
                out.append(gen)
                continue
            assert isinstance(gen, Generation)
            details = self._details(item.template, gen, len(item.requests))
            text = gen.text
            output = self.mode.output
            probabilities = None
            grade_probabilities = gen.grade_probabilities
            if output in ("self_rating", "thomas") and grade_probabilities is not None \
                    and len(grade_probabilities) == self.mode.max_grade + 1:
                probabilities = tuple(grade_probabilities)
            answer: str | None = None
            if output in ("self_rating", "thomas") and is_malformed_rating(text, self.mode.max_grade):
                # Empty or off the scale: no grade (a backend that can ask again already did).
                out.append(GradeFailure(f"malformed response {text.strip()[:80]!r}: not a grade on "
                                        f"0..{self.mode.max_grade}"))
                continue
            fallback: str | None = None
            if output == "self_rating":
                grade, fallback = read_self_rating(text, self.mode.max_grade)
            elif output == "thomas":
                parsed = single_digit_grade(text, self.mode.max_grade)
                if parsed is None:
                    details["not_a_grade"] = True
                    fallback = FALLBACK_NOT_A_GRADE
                grade = parsed or 0
            elif output == "support":
                parsed = parse_support(text)
                if parsed is None:  # not one of the three labels: no grade
                    out.append(GradeFailure(f"malformed response {text.strip()[:80]!r}: not Full Support, "
                                            "Partial Support or No Support"))
                    continue
                grade = parsed
            elif output == "label":
                parsed = parse_assignment_label(text)
                if parsed is None:  # not one of the three labels: no grade
                    out.append(GradeFailure(f"malformed response {text.strip()[:80]!r}: not support, "
                                            "partial_support or not_support"))
                    continue
                grade = parsed
            elif output == "umbrela":
                parsed = (parse_umbrela_reference(text) if self.mode.track
                          else parse_umbrela_score(text, self.mode.max_grade))
                if parsed is None:  # no score in the answer: no grade
                    out.append(GradeFailure(f"malformed response {text.strip()[:80]!r}: no final score on "
                                            f"0..{self.mode.max_grade}"))
                    continue
                grade = parsed
            elif output == "yes_no":
                parsed = parse_yes_no(text)
                if parsed is None:
                    details["not_yes_no"] = True
                    fallback = FALLBACK_NOT_YES_NO
                grade = parsed or 0
            else:
                answer = text.strip()
                grade = 1 if is_answer(answer) else 0
                if output == "answer_key" and grade:
                    tp = requests[item.requests[0]].test_point
                    gold = matching_gold_answer(answer, tp.gold_answers)
                    # gold answers are bank secrets and grades are cached: a fingerprint stands in for one
                    details["gold_fingerprint"] = gold_fingerprint(tp.text, gold) if gold is not None else None
                    grade = 1 if gold is not None else 0
                elif output == "verify" and grade:
                    verify.append((index, answer))
            out.append(
                Grade(
                    grade=grade,
                    grader=self.name,
                    raw_response=text,
                    extracted_answer=answer,
                    probabilities=probabilities,
                    details=details,
                    fallback=fallback,
                )
            )
        if verify:
            self._verify(items, out, verify, requests)
        return out

    def _verify(
        self,
        items: list[_Item],
        out: list[GradeResult],
        pending: list[tuple[int, str]],
        requests: Sequence[GradingRequest],
    ) -> None:
        """Second stage of ``llm-verify``: one yes/no prompt per (extracted answer, gold answer)."""
        asks: list[tuple[int, str]] = []
        parts: list[PromptParts] = []
        for index, answer in pending:
            tp = requests[items[index].requests[0]].test_point
            for gold in tp.gold_answers:
                text = prompts.ANSWER_VERIFICATION.format(question=tp.text, correct_answer=gold, answer=answer)
                asks.append((index, gold))
                parts.append(PromptParts(text, ""))
        answers = self.backend.generate(parts, max_new_tokens=VERIFY_MAX_NEW_TOKENS)
        verdicts: dict[int, list[list[Any]]] = {}
        failures: dict[int, str] = {}
        spent: dict[int, list[int]] = {}  # the verification calls' tokens, added to the grade's
        for (index, gold), gen in zip(asks, answers):
            if isinstance(gen, GradeFailure):
                failures[index] = gen.message
                continue
            tokens = spent.setdefault(index, [0, 0])
            tokens[0] += gen.prompt_tokens or 0
            tokens[1] += gen.completion_tokens or 0
            tp = requests[items[index].requests[0]].test_point
            verdicts.setdefault(index, []).append([gold_fingerprint(tp.text, gold), gen.text,
                                                   parse_yes_no(gen.text) == 1])
        for index, _ in pending:
            grade = out[index]
            assert isinstance(grade, Grade)
            checks = verdicts.get(index, [])
            correct = any(ok for _, _, ok in checks)
            if not correct and index in failures:
                out[index] = GradeFailure(f"answer verification failed: {failures[index]}")
                continue
            details = dict(grade.details, verifications=checks)
            if index in spent:
                for name, value in zip(("prompt_tokens", "completion_tokens"), spent[index]):
                    details[name] = int(details.get(name) or 0) + value
            out[index] = grade.model_copy(update={"grade": 1 if correct else 0, "details": details})

    def sampling(self, index: int) -> AbstractContextManager[None]:
        """Sample ``index`` sends the backend's seed moved by ``index`` (the same seed would ask for the
        same answer)."""
        return moved_seed(self.backend, index)

    def estimate(self, requests: Sequence[GradingRequest]) -> tuple[int, int]:
        from exam_harness.llm.estimate import estimate_prompts

        return estimate_prompts(self.backend, self.prompts_for(requests), self.max_new_tokens)

    def probe(self) -> None:
        """Ask the backend whether it can answer at all (a server reachable, the model served)."""
        probe = getattr(self.backend, "probe", None)
        if callable(probe):
            probe()

    def stop_reason(self) -> str | None:
        """Why grading must stop (the backend's server stopped answering), or None."""
        stopped = getattr(self.backend, "stopped", None)
        return stopped if isinstance(stopped, str) else None

    def close(self) -> None:
        self.backend.close()


# --------------------------------------------------------------------------------------------
# Options of every LLM grader, whatever its backend

COST_OPTIONS: tuple[GraderOption, ...] = (  # docs/cost.md
    GraderOption("price_prompt", None, "price of 1,000 prompt tokens, for the cost figures (default: none, "
                 "tokens only)", optional(number(0))),
    GraderOption("price_completion", None, "price of 1,000 completion tokens (default: none, tokens only)",
                 optional(number(0))),
    GraderOption("max_cost", None, "stop grading before this session's cost would pass this amount; the "
                 "grades made are kept (default: none; needs a price)", optional(number(0, open_low=True))),
)


def cost_settings(grader: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``prices`` and ``max_cost`` arguments of :class:`LLMGrader` from read option values."""
    max_cost = values.get("max_cost")
    return {"prices": prices_from(values.get("price_prompt"), values.get("price_completion"), max_cost, grader),
            "max_cost": max_cost}


LLM_OPTIONS: tuple[GraderOption, ...] = (
    GraderOption("prompt", "self-rating", "prompt mode: " + ", ".join(MODES) + ", or custom:PATH "
                 "(default: self-rating)", text),
    GraderOption("max_new_tokens", None, "longest answer in tokens (default: per mode, 32 for ratings, 128 for "
                 "extraction, 8 for yes/no)", optional(integer(1))),
    GraderOption("nuggets_per_call", 10, "nugget-assignment prompts: nuggets of one passage asked in one call "
                 "(default: 10, as nuggetizer)", integer(1)),
    GraderOption("custom_output", "self-rating", "parser of custom:PATH answers: " + ", ".join(CUSTOM_OUTPUTS)
                 + " (default: self-rating)", choice(*CUSTOM_OUTPUTS)),
    *COST_OPTIONS,
)
