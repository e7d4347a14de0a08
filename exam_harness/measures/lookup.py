"""Finding a measure by name among those a result or report holds.

A report keys its scores by each measure's full printed name (``exam-cover(tau=4)@20``). A user names a
measure with as many parameters as matter to them: ``exam-cover`` is any EXAM-Cover, ``exam-cover@10``
the one at k = 10, ``ndcg@10`` the nDCG@10 of the first label variant, ``ndcg(label=count)@10`` that of
the count labels. A name matches a held measure of the same class whose parameters equal every
parameter the name sets; the first match in the held order wins (the report's order: label by label).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Protocol, TypeVar

from exam_harness.errors import ConfigError
from exam_harness.measures.base import Measure, parse_measure
from exam_harness.registry import Registry


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def matches(pattern: Measure, measure: Measure) -> bool:
    """Whether ``measure`` is of ``pattern``'s class with every parameter ``pattern`` sets."""
    if type(pattern) is not type(measure):
        return False
    return all(getattr(pattern, f.name) is None or getattr(pattern, f.name) == getattr(measure, f.name)
               for f in fields(pattern))


def find_measure(held: Sequence[N], text: str, registry: Registry[type[Measure]] | None = None) -> N | None:
    """The first of ``held`` (anything with a measure ``name``) that ``text`` names (see the module
    docstring), or None. ``text`` that is no measure at all raises ConfigError; a held name the registry
    cannot parse (a plugin's measure, the plugin not loaded) is matched by its exact name only."""
    for item in held:
        if item.name == text:
            return item
    pattern = parse_measure(text, registry)
    for item in held:
        try:
            measure = parse_measure(item.name, registry)
        except ConfigError:
            continue
        if matches(pattern, measure):
            return item
    return None
