"""The ``cascade`` grader: a cheap first judge filters, a deciding judge grades what passes (docs/graders.md,
"Cascade grading").

``--exam-grader cascade --exam-grader-option decider=openai`` (any registered grader may decide; ``first``
defaults to ``embedding``). The first judge scores every pair (:func:`score_of`); pairs scoring below the
escalation threshold are graded 0 without a call, except a seeded random audit sample of them (option
``audit``, default 2%), which the decider grades so that every output can state the filter's estimated miss
rate (:mod:`exam_harness.graders.cascade_filter`). The threshold is the option ``threshold``, or is chosen
for the option ``target_recall`` (the default, 0.95) from the audit sample and the kept pairs while the pass
is prepared.

The decider's own spending, repeats and reducer are the cascade's: its meter (tokens, cost, ``max_cost``,
which bounds only the pairs that go to the decider), its ``repeats``/``reducer`` and its backend's seed. The
options of the two judges are given as ``first_options`` / ``decider_options``: ``key=value`` pairs
separated by ``;`` (``--exam-model`` goes to the decider). Each grade's reason starts with the part that
decided it (``cascade: kept``/``cascade: audit``, then the decider's reason, or ``cascade: filtered``), and
:meth:`CascadeGrader.decided_by` reads it back for the report's "decided by".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from exam_harness.config.options import integer, number, optional, text
from exam_harness.core.cache_keys import cache_key
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, GraderSpec, TestPoint
from exam_harness.exam.inputs import Pair
from exam_harness.graders.base import (
    GradeFailure,
    Grader,
    GraderConfig,
    GradeResult,
    GraderOption,
    GradingRequest,
    read_grader_options,
)
from exam_harness.graders.cascade_filter import MissEstimate, audit_draw, descend, describe, miss_estimate
from exam_harness.llm.cost import Meter, TokenUsage

VERSION = "1"
KEPT = "cascade: kept"
AUDIT = "cascade: audit"
FILTERED = "cascade: filtered"
FIRST_FAILED = "cascade: kept (the first judge could not grade it"
DEFAULT_TARGET_RECALL = 0.95


def parse_sub_options(raw: str) -> dict[str, str]:
    """``key=value;key=value`` -> a dict (a value may hold ``=``; empty parts are ignored)."""
    out: dict[str, str] = {}
    for part in raw.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"must be key=value pairs separated by ';' ({part.strip()!r} is not)")
        out[key.strip()] = value.strip()
    return out


def score_of(grade: Grade, max_grade: int) -> float:
    """The first judge's score of a pair in 0..1: a part other than its support decided a top grade (the
    embedding grader's answer key) -> 1; else its ``support`` when it gives one; else grade / top grade."""
    if grade.details.get("decided_by") not in (None, "embedding"):
        return 1.0 if grade.grade >= max_grade else grade.grade / max_grade
    support = grade.details.get("support")
    if isinstance(support, (int, float)):
        return float(support)
    return grade.grade / max_grade if max_grade else 0.0


class CascadeGrader(Grader):
    name = "cascade"
    options = (
        GraderOption("decider", None, "the deciding judge: openai, hf or any registered grader (required: no default)",
                     optional(text)),
        GraderOption("first", "embedding", "the cheap first judge that filters (default: embedding)", text),
        GraderOption("decider_options", None, "the decider's options as key=value;key=value (default: none)",
                     optional(parse_sub_options)),
        GraderOption("first_options", None, "the first judge's options as key=value;key=value (default: none)",
                     optional(parse_sub_options)),
        GraderOption("threshold", None, "escalation threshold on the first judge's score (0..1); pairs below it "
                     "are graded 0 without a call (default: chosen for target_recall)", optional(number(0, 1))),
        GraderOption("target_recall", None, "share of the decider's passes to keep, estimated on the audit sample "
                     f"and the kept pairs (default: {DEFAULT_TARGET_RECALL} when no threshold is given)",
                     optional(number(0, 1))),
        GraderOption("audit", 0.02, "share of the filtered pairs the decider grades all the same, to estimate "
                     "the miss rate (default: 0.02)", number(0, 1)),
        GraderOption("seed", 0, "seed of the audit sample (default: 0)", integer()),
        GraderOption("step", None, "pairs sent to the decider per step while the threshold is chosen (default: "
                     "1% of the pairs, at least 16)", optional(integer(1))),
    )

    def __init__(self, config: GraderConfig) -> None:
        values = read_grader_options(self.name, self.options, config.options)
        if not values["decider"]:
            raise ConfigError("grader 'cascade' needs a deciding judge: --exam-grader-option decider=openai (or hf, "
                              "or any registered grader)")
        if values["threshold"] is not None and values["target_recall"] is not None:
            raise ConfigError("grader 'cascade': give threshold or target_recall, not both")
        if values["target_recall"] is not None and values["target_recall"] <= 0:
            raise ConfigError("grader 'cascade': target_recall must be above 0")
        self.first_name: str = values["first"]
        self.decider_name: str = values["decider"]
        if self.first_name == self.name or self.decider_name == self.name:
            raise ConfigError("grader 'cascade': neither judge can be a cascade")
        registry = config.registry
        if registry is None:
            from exam_harness.graders.registry import default_registry

            registry = default_registry()
        self.first: Grader = registry.create(self.first_name, replace(
            config, model=None, options=dict(values["first_options"] or {}), dry_run=config.dry_run))
        try:
            self.decider: Grader = registry.create(self.decider_name, replace(
                config, options=dict(values["decider_options"] or {})))
        except BaseException:
            self.first.close()
            raise
        self.given_threshold: float | None = values["threshold"]
        self.target_recall: float | None = (values["target_recall"] if values["target_recall"] is not None
                                            else (DEFAULT_TARGET_RECALL if values["threshold"] is None else None))
        self.audit: float = values["audit"]
        self.seed: int = values["seed"]
        self.step: int | None = values["step"]
        # the decider's spending and sampling are the cascade's (grading/passes.py reads these attributes)
        self.repeats = self.decider.repeats
        self.reducer = self.decider.reducer
        self.backend = getattr(self.decider, "backend", None)  # an LLM grader's (not a capability of every grader)
        self.chunk_size = self.decider.chunk_size
        inner = self.decider.meter
        self.meter: CascadeMeter | None = CascadeMeter(self, inner) if inner is not None else None
        self.threshold: float | None = self.given_threshold
        self.descent_note: str | None = None
        self._scores: dict[str, float | None] = {}  # pair content -> first judge's score (None: it failed)
        self._first_failures: dict[str, str] = {}
        self._decided: dict[str, GradeResult] = {}  # the decider's grades made while choosing the threshold

    # --- identity ---------------------------------------------------------------------------------------
    def spec(self) -> GraderSpec:
        decider = self.decider.spec()
        return GraderSpec(
            name=self.name, version=VERSION, model=decider.model, revision=decider.revision,
            prompt_class=decider.prompt_class,
            options={"first": self.first_name, "first_spec": self.first.spec().fingerprint(),
                     "decider": self.decider_name, "decider_spec": decider.fingerprint(),
                     "threshold": self.given_threshold, "target_recall": self.target_recall,
                     "audit": self.audit, "seed": self.seed, "step": self.step},
            max_grade=decider.max_grade, default_min_grade=decider.default_min_grade,
        )

    def cache_payload(self, request: GradingRequest) -> dict[str, Any]:
        return {**self.first.cache_payload(request), **self.decider.cache_payload(request)}

    def supports(self, test_point: TestPoint) -> str | None:
        return self.decider.supports(test_point)

    def uses_cache(self) -> bool:
        return True

    def probe(self) -> None:
        self.first.probe()
        self.decider.probe()

    def stop_reason(self) -> str | None:
        return self.decider.stop_reason()

    def close(self) -> None:
        try:
            self.first.close()
        finally:
            self.decider.close()

    def decided_by(self, answer: str | None) -> str | None:
        """``first (filtered)``, ``decider (audit)`` or the decider's name, read from a grade's reason."""
        if answer is None:
            return None
        if answer.startswith(FILTERED):
            return f"{self.first_name} (filtered, no call)"
        if answer.startswith(AUDIT):
            return f"{self.decider_name} (audit)"
        if answer.startswith("cascade: kept"):
            return self.decider_name
        return None

    # --- the filter ---------------------------------------------------------------------------------------
    def _key(self, request: GradingRequest) -> str:
        return cache_key("", self.cache_payload(request))

    def audited(self, request: GradingRequest) -> bool:
        return audit_draw(self.seed, self._key(request)) < self.audit

    def _score(self, requests: Sequence[GradingRequest]) -> None:
        """The first judge's score of each request not scored yet."""
        todo = list({self._key(r): r for r in requests if self._key(r) not in self._scores}.items())
        if not todo:
            return
        self.first.prepare([r for _, r in todo])
        max_grade = self.first.spec().max_grade
        for start in range(0, len(todo), 4096):
            part = todo[start : start + 4096]
            results = self.first.grade_batch([r for _, r in part])
            for (key, _), result in zip(part, results):
                if isinstance(result, Grade):
                    self._scores[key] = score_of(result, max_grade)
                else:
                    self._scores[key] = None
                    self._first_failures[key] = result.message

    def sent_to_decider(self, requests: Sequence[GradingRequest]) -> list[GradingRequest] | None:
        """The requests the decider will be asked about (None while the threshold is unknown)."""
        if self.threshold is None or any(self._key(r) not in self._scores for r in requests):
            return None
        return [r for r in requests if self._role(r) != FILTERED and self._key(r) not in self._decided]

    def _role(self, request: GradingRequest) -> str:
        assert self.threshold is not None
        score = self._scores[self._key(request)]
        if score is None or score >= self.threshold:
            return KEPT
        return AUDIT if self.audited(request) else FILTERED

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        """Score every pair with the first judge; for a target recall, choose the threshold (asking the decider
        about the audit sample and the best-scored pairs, whose grades are kept for :meth:`grade_batch`)."""
        self._score(requests)
        if self.threshold is None and self.target_recall is not None and requests:
            self._choose_threshold(requests)

    def _choose_threshold(self, requests: Sequence[GradingRequest]) -> None:
        assert self.target_recall is not None
        pairs = list({self._key(r): r for r in requests}.values())
        # a pair the first judge could not score always goes to the decider: it sorts above every score
        scores = [s if (s := self._scores[self._key(r)]) is not None else 2.0 for r in pairs]
        audited = [self.audited(r) for r in pairs]
        min_grade = self.decider.spec().default_min_grade
        spent_from = self.meter.used() if self.meter is not None else TokenUsage()

        def decide(indices: Sequence[int]) -> list[bool | None]:
            batch = [pairs[i] for i in indices]
            if self.meter is not None and self.meter.max_cost is not None:
                inner = self.meter.inner
                spent = inner.prices.cost(inner.used() - spent_from) if inner.prices is not None else 0.0
                batch = [] if self.meter.closed else batch[: inner.affordable(batch, spent)]
            results = self.decider.grade_batch(batch) if batch else []
            out: list[bool | None] = []
            for request, result in zip(batch, results):
                self._decided[self._key(request)] = result
                out.append(result.grade >= min_grade if isinstance(result, Grade) else None)
            return out + [None] * (len(indices) - len(out))

        step = self.step or max(16, len(pairs) // 100)
        descent = descend(scores, audited, decide, target=self.target_recall, step=step)
        self.threshold = descent.threshold
        self.descent_note = descent.stopped

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        self._score(requests)
        if self.threshold is None:  # a caller that never prepared the pass: choose on this batch
            self.prepare(requests)
        threshold = self.threshold
        assert threshold is not None
        roles = [self._role(r) for r in requests]
        ask = [r for r, role in zip(requests, roles) if role != FILTERED and self._key(r) not in self._decided]
        asked = dict(zip((self._key(r) for r in ask), self.decider.grade_batch(ask) if ask else []))
        results: list[GradeResult] = []
        for request, role in zip(requests, roles):
            key = self._key(request)
            score = self._scores[key]
            if role == FILTERED:
                assert score is not None
                results.append(Grade(grade=0, grader=self.name, raw_response=(
                    f"{FILTERED} by {self.first_name} (score {score:.4f} < threshold {threshold:.4f}); graded 0 "
                    f"without asking {self.decider_name}"), details={"decided_by": self.first_name,
                                                                    "cascade": "filtered", "score": score,
                                                                    "threshold": threshold}))
                continue
            found = self._decided.pop(key, None) or asked.get(key)
            if found is None:
                results.append(GradeFailure(f"grader {self.decider_name!r} returned no result"))
            elif isinstance(found, GradeFailure):
                results.append(GradeFailure(f"{self.decider_name}: {found.message}"))
            else:
                results.append(self._wrap(found, role, score, threshold, key))
        return results

    def _wrap(self, grade: Grade, role: str, score: float | None, threshold: float, key: str) -> Grade:
        if score is None:
            head = f"{FIRST_FAILED}: {self._first_failures.get(key, 'no score')}); decided by {self.decider_name}"
        else:
            relation = ">=" if role == KEPT else "<"
            head = f"{role} (score {score:.4f} {relation} threshold {threshold:.4f}); decided by {self.decider_name}"
        said = grade.extracted_answer if grade.extracted_answer is not None else grade.raw_response
        details = {**grade.details, "decided_by": self.decider_name, "cascade": role.split(": ")[1],
                   "score": score, "threshold": threshold}
        return Grade(grade=grade.grade, grader=self.name, raw_response=f"{head}: {said}",
                     probabilities=grade.probabilities, details=json.loads(json.dumps(details, default=str)),
                     fallback=grade.fallback)


class CascadeMeter(Meter):
    """The decider's meter, bounding only the pairs the cascade sends to the decider (filtered pairs cost
    nothing); its counters are the decider's."""

    def __init__(self, cascade: CascadeGrader, inner: Meter) -> None:
        self.cascade = cascade
        self.inner = inner  # before Meter's own set-up, which reads the counters (used())
        super().__init__(inner.grader, inner.backend, inner.prices, inner.max_cost, inner.answer_tokens)

    def used(self) -> TokenUsage:
        return self.inner.used()

    def note(self, tokens: tuple[float, float]) -> None:
        self.inner.note(tokens)

    def bound(self, requests: Sequence[GradingRequest]) -> tuple[int, int, float]:
        sent = self.cascade.sent_to_decider(requests)
        chosen = list(requests) if sent is None else sent  # threshold unknown: every pair may be sent
        return self.inner.bound(chosen) if chosen else (0, 0, 0.0)


def estimate_of(answers: Mapping[Pair, str | None], grades: Mapping[Pair, int], min_grade: int) -> MissEstimate | None:
    """The miss estimate of a cascade's grades, read from their reasons (cached grades too); None when no grade
    is a cascade's."""
    kept: list[bool] = []
    audited: list[bool] = []
    filtered = 0
    for pair, answer in answers.items():
        if answer is None or pair not in grades:
            continue
        if answer.startswith(FILTERED):
            filtered += 1
        elif answer.startswith(AUDIT):
            audited.append(grades[pair] >= min_grade)
        elif answer.startswith("cascade: kept"):
            kept.append(grades[pair] >= min_grade)
    if not kept and not audited and not filtered:
        return None
    return miss_estimate(kept, audited, filtered)


def statement(answers: Mapping[Pair, str | None], grades: Mapping[Pair, int], min_grade: int, spec: GraderSpec
              ) -> str | None:
    """The line every output of a cascade session states (:func:`~exam_harness.graders.cascade_filter.describe`),
    or None for another grader's grades."""
    if spec.name != CascadeGrader.name:
        return None
    estimate = estimate_of(answers, grades, min_grade)
    if estimate is None:
        return None
    options = spec.options
    given = options.get("threshold")  # a threshold chosen per pass is not in the spec
    return describe(estimate, str(options.get("first")), str(options.get("decider")),
                    float(given) if isinstance(given, (int, float)) else None)
