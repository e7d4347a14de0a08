"""The ``cascade`` grader: a cheap first judge filters, a deciding judge grades what passes (docs/graders.md,
"Cascade grading").

``--exam-grader cascade --exam-grader-option decider=openai`` (any registered grader may decide; ``first``
defaults to ``embedding``). The first judge scores every pair (:func:`score_of`); pairs scoring below the
escalation threshold are graded 0 without a call, except an audit sample stratified by that score (options
``strata``, ``audit`` and ``audit_min``: :mod:`exam_harness.graders.cascade_filter`), which the decider grades
so that every output can state a 95% lower bound of the share of the decider's passes the cascade kept. The
threshold is the option ``threshold``, or is lowered while the pass is prepared until that bound reaches the
option ``target_recall`` (the default, 0.95); where it never does, every pair goes to the decider. A pool too
small for the audit to leave a pair to filter is sent whole, and the first judge is not run.

The decider's own spending, repeats and reducer are the cascade's: its meter (tokens, cost, ``max_cost``,
which bounds only the pairs that go to the decider), its ``repeats``/``reducer`` and its backend's seed. The
options of the two judges are given as ``first_options`` / ``decider_options``: ``key=value`` pairs
separated by ``;`` (``--exam-model`` goes to the decider). Each grade's reason starts with the part that
decided it (``cascade: kept``/``cascade: audit``, then the decider's reason, or ``cascade: filtered``) and
names its band of scores, so that the bound is stated again from cached grades (:func:`kept_bound_of`), and
:meth:`CascadeGrader.decided_by` reads it back for the report's "decided by". What the filter cost and what it
saved, in seconds, is :meth:`CascadeGrader.pass_figures`.
"""

from __future__ import annotations

import json
import re
import time
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
from exam_harness.graders.cascade_filter import (
    Band,
    KeptBound,
    audit_draw,
    audit_sample,
    audit_sizes,
    descend,
    describe,
    kept_bound,
    strata_of,
)
from exam_harness.llm.cost import Meter, TokenUsage

VERSION = "2"  # 2: the audit sample stratified by score, a lower bound of the kept share; reasons name the band
KEPT = "cascade: kept"
AUDIT = "cascade: audit"
FILTERED = "cascade: filtered"
FIRST_FAILED = "cascade: kept (the first judge could not grade it"
UNFILTERED = "cascade: kept (no filter"
DEFAULT_TARGET_RECALL = 0.95
# A pool whose audit would leave fewer than this share of its pairs to filter goes to the decider whole: the first
# judge's cost (a model to load) could not be saved back.
MIN_SPARED = 0.1
_BAND = re.compile(r"; band (\d+) of (\d+)(, audited)?\)")
_THRESHOLD = re.compile(r"threshold (-?\d+\.\d+)")


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
                     "are graded 0 without a call (default: lowered until target_recall is shown)",
                     optional(number(0, 1))),
        GraderOption("target_recall", None, "share of the decider's passes to keep, shown by a 95% lower bound of the "
                     "audit sample; the threshold is lowered until it is (with a given threshold: checked, a warning "
                     f"where it is not) (default: {DEFAULT_TARGET_RECALL} when no threshold is given)",
                     optional(number(0, 1))),
        GraderOption("strata", 4, "bands of the first judge's score the audit sample is drawn from, each of about "
                     "as many pairs (default: 4)", integer(1, 64)),
        GraderOption("audit", 0.1, "share of each band the decider grades all the same, to bound the passes the "
                     "filter lost (default: 0.1)", number(0, 1)),
        GraderOption("audit_min", 30, "pairs of each band the decider grades all the same, at least (every pair of "
                     "a smaller band; default: 30)", integer(0)),
        GraderOption("seed", 0, "seed of the audit sample (default: 0)", integer()),
        GraderOption("step", None, "pairs sent to the decider per step while the threshold is chosen (default: "
                     "1% of the pairs, at least 16)", optional(integer(1))),
    )

    def __init__(self, config: GraderConfig) -> None:
        values = read_grader_options(self.name, self.options, config.options)
        if not values["decider"]:
            raise ConfigError("grader 'cascade' needs a deciding judge: --exam-grader-option decider=openai (or hf, "
                              "or any registered grader)")
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
        self.audit_min: int = values["audit_min"]
        self.strata: int = values["strata"]
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
        self.unfiltered: str | None = None  # why the pass was sent whole, without running the first judge
        self._scores: dict[str, float | None] = {}  # pair content -> first judge's score (None: it failed)
        self._first_failures: dict[str, str] = {}
        self._decided: dict[str, GradeResult] = {}  # the decider's grades made while choosing the threshold
        self._bands: dict[str, int] = {}  # pair content -> its band of scores (0: the best), in this pass
        self._audited: set[str] = set()  # pair contents drawn for the audit sample
        self._band_count = 1
        # what the filter cost and what the decider took, in seconds, this pass (pass_figures)
        self._filter_seconds = 0.0
        self._decider_seconds = 0.0
        self._decider_calls = 0
        self._filtered = 0

    # --- identity ---------------------------------------------------------------------------------------
    def spec(self) -> GraderSpec:
        decider = self.decider.spec()
        return GraderSpec(
            name=self.name, version=VERSION, model=decider.model, revision=decider.revision,
            prompt_class=decider.prompt_class,
            options={"first": self.first_name, "first_spec": self.first.spec().fingerprint(),
                     "decider": self.decider_name, "decider_spec": decider.fingerprint(),
                     "threshold": self.given_threshold, "target_recall": self.target_recall,
                     "strata": self.strata, "audit": self.audit, "audit_min": self.audit_min, "seed": self.seed,
                     "step": self.step},
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

    def _score(self, requests: Sequence[GradingRequest]) -> None:
        """The first judge's score of each request not scored yet."""
        todo = list({self._key(r): r for r in requests if self._key(r) not in self._scores}.items())
        if not todo:
            return
        started = time.perf_counter()
        try:
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
        finally:
            self._filter_seconds += time.perf_counter() - started

    def _ask(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        """The decider's grades of ``requests``, timed."""
        if not requests:
            return []
        started = time.perf_counter()
        try:
            return self.decider.grade_batch(requests)
        finally:
            self._decider_seconds += time.perf_counter() - started
            self._decider_calls += len(requests)

    def sent_to_decider(self, requests: Sequence[GradingRequest]) -> list[GradingRequest] | None:
        """The requests the decider will be asked about (None while the threshold is unknown)."""
        if self.unfiltered is not None:
            return [r for r in requests if self._key(r) not in self._decided]
        if self.threshold is None or any(self._key(r) not in self._scores for r in requests):
            return None
        return [r for r in requests if self._role(r) != FILTERED and self._key(r) not in self._decided]

    def _role(self, request: GradingRequest) -> str:
        if self.unfiltered is not None:
            return KEPT
        assert self.threshold is not None
        key = self._key(request)
        score = self._scores[key]
        if score is None or score >= self.threshold:
            return KEPT
        return AUDIT if key in self._audited else FILTERED

    def _too_small(self, pairs: int) -> str | None:
        """Why a pool of ``pairs`` is sent whole without running the first judge: its bands' audit would leave
        fewer than :data:`MIN_SPARED` of its pairs to filter (None: it may be filtered)."""
        bands = [pairs // self.strata + (i < pairs % self.strata) for i in range(self.strata)]
        left = pairs - sum(audit_sizes([n for n in bands if n], self.audit, self.audit_min))
        if pairs and left < MIN_SPARED * pairs:
            return (f"{pairs:,} pairs in {self.strata} bands: the audit (at least {self.audit_min} a band) would leave "
                    f"{left:,} to filter, fewer than {MIN_SPARED:.0%}, so the first judge was not run")
        return None

    def prepare(self, requests: Sequence[GradingRequest]) -> None:
        """Score every pair with the first judge (unless the pool is too small to filter), draw the stratified
        audit sample and, for a target, choose the threshold (asking the decider about the audit sample and the
        best-scored pairs, whose grades are kept for :meth:`grade_batch`)."""
        pairs = list({self._key(r): r for r in requests}.values())
        if not pairs:
            return
        self._filter_seconds = self._decider_seconds = 0.0
        self._decider_calls = self._filtered = 0
        self.unfiltered = self._too_small(len(pairs)) if self.given_threshold is None else None
        if self.unfiltered is not None:
            return
        self._score(pairs)
        self._draw(pairs)
        if self.given_threshold is None and self.target_recall is not None:
            self._choose_threshold(pairs)

    def _draw(self, pairs: Sequence[GradingRequest]) -> None:
        """The bands of the pass's scores and the audit sample drawn from each."""
        keys = [self._key(r) for r in pairs]
        # a pair the first judge could not score always goes to the decider: it sorts above every score
        scores = [s if (s := self._scores[k]) is not None else 2.0 for k in keys]
        self._band_count = min(self.strata, len(keys))
        bands = strata_of(scores, self._band_count)
        audited = audit_sample(bands, [audit_draw(self.seed, k) for k in keys], self.audit, self.audit_min)
        self._bands = dict(zip(keys, bands))
        self._audited = {k for k, a in zip(keys, audited) if a}

    def _choose_threshold(self, pairs: Sequence[GradingRequest]) -> None:
        assert self.target_recall is not None
        keys = [self._key(r) for r in pairs]
        scores = [s if (s := self._scores[k]) is not None else 2.0 for k in keys]
        min_grade = self.decider.spec().default_min_grade
        spent_from = self.meter.used() if self.meter is not None else TokenUsage()

        def decide(indices: Sequence[int]) -> list[bool | None]:
            batch = [pairs[i] for i in indices]
            if self.meter is not None and self.meter.max_cost is not None:
                inner = self.meter.inner
                spent = inner.prices.cost(inner.used() - spent_from) if inner.prices is not None else 0.0
                batch = [] if self.meter.closed else batch[: inner.affordable(batch, spent)]
            results = self._ask(batch)
            out: list[bool | None] = []
            for request, result in zip(batch, results):
                self._decided[self._key(request)] = result
                out.append(result.grade >= min_grade if isinstance(result, Grade) else None)
            return out + [None] * (len(indices) - len(out))

        step = self.step or max(16, len(pairs) // 100)
        descent = descend(scores, [self._bands[k] for k in keys], [k in self._audited for k in keys], decide,
                          target=self.target_recall, step=step)
        self.threshold = descent.threshold
        self.descent_note = descent.stopped

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        if self.unfiltered is None and (self.threshold is None or any(self._key(r) not in self._bands
                                                                      for r in requests)):
            self.prepare(requests)  # a caller that never prepared the pass (or these pairs): choose on this batch
        roles = [self._role(r) for r in requests]
        ask = [r for r, role in zip(requests, roles) if role != FILTERED and self._key(r) not in self._decided]
        asked = dict(zip((self._key(r) for r in ask), self._ask(ask)))
        results: list[GradeResult] = []
        for request, role in zip(requests, roles):
            key = self._key(request)
            if role == FILTERED:
                self._filtered += 1
                score, threshold = self._scores[key], self.threshold
                assert score is not None and threshold is not None
                results.append(Grade(grade=0, grader=self.name, raw_response=(
                    f"{FILTERED} by {self.first_name} (score {score:.4f} < threshold {threshold:.4f}"
                    f"{self._band_text(key)}); graded 0 without asking {self.decider_name}"),
                    details={"decided_by": self.first_name, "cascade": "filtered", "score": score,
                             "threshold": threshold, "band": self._bands[key]}))
                continue
            found = self._decided.pop(key, None) or asked.get(key)
            if found is None:
                results.append(GradeFailure(f"grader {self.decider_name!r} returned no result"))
            elif isinstance(found, GradeFailure):
                results.append(GradeFailure(f"{self.decider_name}: {found.message}"))
            else:
                results.append(self._wrap(found, role, key))
        return results

    def _band_text(self, key: str) -> str:
        band = self._bands.get(key)
        if band is None:
            return ""
        return f"; band {band + 1} of {self._band_count}" + (", audited" if key in self._audited else "")

    def pass_figures(self) -> dict[str, float] | None:
        """What this pass's filter cost and what its decider took, in seconds, and the calls the filter spared
        (None before a pass)."""
        if not self._decider_calls and not self._filter_seconds and not self._filtered:
            return None
        return {"filter_seconds": self._filter_seconds, "decider_seconds": self._decider_seconds,
                "decider_calls": float(self._decider_calls), "filtered": float(self._filtered)}

    def _wrap(self, grade: Grade, role: str, key: str) -> Grade:
        score, threshold = self._scores.get(key), self.threshold
        if self.unfiltered is not None:
            head = f"{UNFILTERED}: {self.unfiltered}); decided by {self.decider_name}"
        elif score is None:
            at = f"; threshold {threshold:.4f}" if threshold is not None else ""
            head = (f"{FIRST_FAILED}: {self._first_failures.get(key, 'no score')}{at}{self._band_text(key)}); "
                    f"decided by {self.decider_name}")
        else:
            assert threshold is not None
            relation = ">=" if role == KEPT else "<"
            head = (f"{role} (score {score:.4f} {relation} threshold {threshold:.4f}{self._band_text(key)}); decided "
                    f"by {self.decider_name}")
        said = grade.extracted_answer if grade.extracted_answer is not None else grade.raw_response
        details = {**grade.details, "decided_by": self.decider_name, "cascade": role.split(": ")[1],
                   "score": score, "threshold": threshold, "band": self._bands.get(key)}
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


def kept_bound_of(answers: Mapping[Pair, str | None], grades: Mapping[Pair, int], min_grade: int) -> KeptBound | None:
    """The kept share's lower bound of a cascade's grades (cached ones too), read from their reasons: each pass
    (its threshold) with its bands, the passes bounded together (at 5% / passes each); None when no grade is a
    cascade's."""
    passes: dict[str, dict[int, list[int]]] = {}  # threshold -> band -> [size, audited, audit passes, sent, passes]
    counts: dict[str, int] = {}
    seen = False
    for pair, answer in answers.items():
        if answer is None or pair not in grades or not answer.startswith("cascade: "):
            continue
        seen = True
        band = _BAND.search(answer)  # the first: the cascade's own part comes before the decider's reason
        found = _THRESHOLD.search(answer)
        where = found.group(1) if found is not None and band is not None else "one"  # a pass sent whole
        index, count, drawn = (int(band.group(1)) - 1, int(band.group(2)), band.group(3) is not None) if band \
            else (0, 1, False)
        counts[where] = max(counts.get(where, 1), count)
        row = passes.setdefault(where, {}).setdefault(index, [0, 0, 0, 0, 0])
        row[0] += 1
        passed = grades[pair] >= min_grade
        if answer.startswith(FILTERED):
            continue
        if drawn:
            row[1] += 1
            row[2] += passed
        else:
            row[3] += 1
            row[4] += passed
    if not seen:
        return None
    from exam_harness.graders.cascade_filter import ALPHA

    bounds = [kept_bound([Band(*bands.get(i, [0, 0, 0, 0, 0])) for i in range(counts[where])], ALPHA / len(passes))
              for where, bands in passes.items()]
    return KeptBound(found=sum(b.found for b in bounds), lost=sum(b.lost for b in bounds),
                     calls=sum(b.calls for b in bounds), pairs=sum(b.pairs for b in bounds),
                     unasked=sum(b.unasked for b in bounds))


def statement(answers: Mapping[Pair, str | None], grades: Mapping[Pair, int], min_grade: int, spec: GraderSpec
              ) -> str | None:
    """The line every output of a cascade session states (:func:`~exam_harness.graders.cascade_filter.describe`),
    or None for another grader's grades."""
    if spec.name != CascadeGrader.name:
        return None
    bound = kept_bound_of(answers, grades, min_grade)
    if bound is None:
        return None
    target = spec.options.get("target_recall")
    return describe(bound, str(spec.options.get("decider")), float(target) if isinstance(target, (int, float))
                    else None)


def target_of(spec: GraderSpec) -> float | None:
    """The share of the decider's passes a cascade of ``spec`` was asked to keep (None: a given threshold)."""
    target = spec.options.get("target_recall") if spec.name == CascadeGrader.name else None
    return float(target) if isinstance(target, (int, float)) else None
