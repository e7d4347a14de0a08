"""The viewer's search language over test point outcomes (one run on one test point).

Words, separated by spaces (quote a phrase: ``"tidal bulges"``), all of which an outcome must match:

- ``run:NAME`` / ``query:ID`` / ``id:TEXT``: the run, the query, the test point id contain it;
- ``by:PART`` (``decided-by:PART``): the part of the grader that decided its best grade contains it
  (``by:answer-key``);
- ``missed`` (missed, required ones too), ``answered``, ``required``, ``flaky`` (its verdict flips across the
  judge's samples; needs a document with judge variance);
- ``not:WORD`` (``-WORD``): the opposite of a flag (``not:required``);
- any other word: the test point's id or text contains it.

Matching ignores case. :func:`parse` raises ValueError naming a word it cannot read.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from exam_harness.features.flips.flips import MISSED
from exam_harness.results.schema import TestPointOutcome

FLAGS = ("missed", "answered", "required", "flaky")
FIELDS = {"run": "run", "query": "query", "q": "query", "id": "id", "by": "by", "decided-by": "by",
          "decided_by": "by"}


@dataclass(frozen=True)
class Filter:
    runs: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    deciders: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    flags: frozenset[str] = field(default_factory=frozenset)
    negated: frozenset[str] = field(default_factory=frozenset)

    @property
    def empty(self) -> bool:
        return not (self.runs or self.queries or self.ids or self.deciders or self.words or self.flags
                    or self.negated)

    @property
    def needs_flaky(self) -> bool:
        return "flaky" in self.flags or "flaky" in self.negated

    @property
    def needs_decider(self) -> bool:
        return bool(self.deciders)

    def matches(self, o: TestPointOutcome, flaky: Collection[tuple[str, str]] = (),
                decided_by: Callable[[TestPointOutcome], str | None] | None = None) -> bool:
        if self.runs and not all(r in o.run.lower() for r in self.runs):
            return False
        if self.queries and not all(q in o.query_id.lower() for q in self.queries):
            return False
        if self.ids and not all(i in o.test_point_id.lower() for i in self.ids):
            return False
        if self.words:
            haystack = f"{o.test_point_id} {o.text or ''}".lower()
            if not all(w in haystack for w in self.words):
                return False
        if self.deciders:
            part = (decided_by(o) if decided_by is not None else None) or ""
            if not all(d in part.lower() for d in self.deciders):
                return False
        held = {"missed": o.outcome in MISSED, "answered": o.outcome == "answered", "required": o.required,
                "flaky": (o.run, o.test_point_id) in flaky}
        return all(held[f] for f in self.flags) and not any(held[f] for f in self.negated)


def parse(text: str) -> Filter:
    """The filter ``text`` writes (see the module docstring)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"cannot read the filter {text!r}: {exc}") from None
    runs: list[str] = []
    queries: list[str] = []
    ids: list[str] = []
    deciders: list[str] = []
    free: list[str] = []
    flags: set[str] = set()
    negated: set[str] = set()
    for word in words:
        lowered = word.lower()
        negative = lowered.startswith(("not:", "-")) and len(lowered) > 1
        bare = lowered.split(":", 1)[1] if lowered.startswith("not:") else lowered[1:] if negative else lowered
        if negative:
            if bare not in FLAGS:
                raise ValueError(f"{word!r}: only a flag can be negated ({', '.join(FLAGS)})")
            negated.add(bare)
            continue
        if lowered in FLAGS:
            flags.add(lowered)
            continue
        name, colon, value = lowered.partition(":")
        if colon and name in FIELDS:
            if not value:
                raise ValueError(f"{word!r}: {name}: needs a value ({name}:TEXT)")
            {"run": runs, "query": queries, "id": ids, "by": deciders}[FIELDS[name]].append(value)
            continue
        free.append(lowered)
    return Filter(tuple(runs), tuple(queries), tuple(ids), tuple(deciders), tuple(free), frozenset(flags),
                  frozenset(negated))
