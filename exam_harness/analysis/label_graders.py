"""Every grader whose grades a cache holds, against a team's labels (issue 30): ``analyze ... --team-labels``
measures the session's grader and each of these.

A cache keys a grade by the hash of its grader's spec and the pair's content (exam_harness/grading/cache.py), so the
graders it holds are found from what its records name: each distinct (grader name, model, prompt) is rebuilt
from the registry (the session's own options for the session's grader, the registered defaults otherwise,
with the record's model and prompt) and the keys of the labelled pairs under its spec are looked up. A
grader that cannot be rebuilt here (not registered: a plugin not loaded; options it cannot do without) is
named with why, never left out in silence; grades stored under options other than those (another
``cut_points``, a fitted support model) are found only when they are the session's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exam_harness.analysis.labels import LabelConcordance, Pair, label_concordance
from exam_harness.core.models import ExamData, GraderSpec, QueryBank
from exam_harness.graders.base import Grader, GraderConfig, GradingRequest
from exam_harness.graders.registry import GraderRegistry
from exam_harness.grading.cache import GradeCache, cache_key


@dataclass(frozen=True)
class GraderRow:
    """One grader's verdicts against the labels: who it is, at which minimum grade, over which pairs."""

    grader: str
    model: str | None
    prompt: str | None
    min_grade: int
    concordance: LabelConcordance
    session: bool = False  # the session's grader (its grades graded or read by this session)
    grades: dict[Pair, int] = field(default_factory=dict)  # its cached grades of the requests looked up


@dataclass
class CachedAgreement:
    rows: list[GraderRow] = field(default_factory=list)
    unprobed: list[str] = field(default_factory=list)  # "name (model, prompt): why it was not looked up"


def labelled_requests(labels: Iterable[Pair], banks: Iterable[QueryBank], data: ExamData
                      ) -> dict[Pair, GradingRequest]:
    """The grading request of every labelled pair whose test point is in the banks and passage in the data."""
    points = {tp.id: (bank, tp) for bank in banks for tp in bank.test_points}
    out: dict[Pair, GradingRequest] = {}
    for passage_id, tp_id in labels:
        found = points.get(tp_id)
        passage = data.passages.get(passage_id)
        if found is not None and passage is not None:  # the bank too: an assignment grade's key holds its window
            out[(passage_id, tp_id)] = GradingRequest(found[0].query, found[1], passage, found[0].test_points)
    return out


def cached_grades(grader: Grader, requests: Mapping[Pair, GradingRequest], cache: GradeCache) -> dict[Pair, int]:
    """The grades ``cache`` holds for ``requests`` under ``grader``'s spec (nothing is graded)."""
    spec = grader.spec()
    fingerprint = spec.fingerprint()
    keys = {pair: cache_key(fingerprint, grader.cache_payload(r)) for pair, r in requests.items()
            if grader.supports(r.test_point) is None}
    found = cache.get_grades(keys.values(), max_grade=spec.max_grade, answers=False)
    return {pair: found[key].grade for pair, key in keys.items() if key in found}


def _describe(name: str, model: str | None, prompt: str | None) -> str:
    said = ", ".join(part for part in (model, f"prompt {prompt}" if prompt else None) if part)
    return f"{name} ({said})" if said else name


def cached_concordance(cache: GradeCache, registry: GraderRegistry, requests: Mapping[Pair, GradingRequest],
                     labels: Mapping[Pair, bool], *, data: ExamData | None, session: GraderSpec,
                     session_config: GraderConfig, known: Iterable[str] = ()) -> CachedAgreement:
    """A row for every grader other than the session's whose grades ``cache`` holds for the requests, each
    at its own default minimum grade; the graders the cache names that could not be looked up, with why.
    ``known``: the spec fingerprints of graders looked up already (a panel's members), left out."""
    prober = _Prober(cache, registry, requests, labels, data, session_config)
    prober.seen.add(session.fingerprint())
    prober.seen.update(known)
    for name, model, prompt in cache.identities():
        if name not in registry:
            prober.result.unprobed.append(f"{_describe(name, model, prompt)}: not a registered grader here (a "
                                          "plugin not loaded?)")
            continue
        if name == session.name:  # looked up under the session's options and model, then under the defaults
            prober.probe(name, model or session_config.model, prompt, dict(session_config.options))
        # the session's grader may need options its defaults lack (a panel's members): not rebuilt then, not said
        prober.probe(name, model, prompt, {}, quiet=name == session.name)
    return prober.result


@dataclass
class _Prober:
    cache: GradeCache
    registry: GraderRegistry
    requests: Mapping[Pair, GradingRequest]
    labels: Mapping[Pair, bool]
    data: ExamData | None
    session_config: GraderConfig
    seen: set[str] = field(default_factory=set)  # spec fingerprints looked up already (the session's first)
    result: CachedAgreement = field(default_factory=CachedAgreement)

    def probe(self, name: str, model: str | None, prompt: str | None, options: dict[str, Any], *,
              quiet: bool = False) -> None:
        described = _describe(name, model, prompt)
        if prompt is not None:
            options = {**options, "prompt": prompt}
        try:
            grader = self.registry.create(name, GraderConfig(model=model, options=options, data=self.data,
                                                             dry_run=True, registry=self.registry))
        except Exception as exc:  # said in the output: the grader is named with why it was not looked up
            if not quiet:
                self.result.unprobed.append(f"{described}: could not be rebuilt to look its grades up "
                                            f"({type(exc).__name__}: {exc})")
            return
        try:
            spec = grader.spec()
            if spec.fingerprint() in self.seen:
                return
            self.seen.add(spec.fingerprint())
            grades = cached_grades(grader, self.requests, self.cache) if grader.uses_cache() else {}
        finally:
            grader.close()
        if not grades:
            self.result.unprobed.append(f"{described}: none of its grades in the cache is of a pair looked up under "
                                        + ("these options" if options else "its default options"))
            return
        self.result.rows.append(GraderRow(name, spec.model, prompt, spec.default_min_grade,
                                          label_concordance(grades, self.labels, spec.default_min_grade),
                                          grades=grades))
