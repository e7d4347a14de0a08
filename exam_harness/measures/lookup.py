"""Finding a measure by name among those a result or report holds.

A report keys its scores by each measure's full printed name (``exam-cover(tau=4)@20``). A user names a
measure with as many parameters as matter to them: ``exam-cover`` is any EXAM-Cover, ``exam-cover@10``
the one at k = 10, ``ndcg@10`` the nDCG@10 of the first label variant, ``ndcg(label=count)@10`` that of
the count labels. A name matches a held measure of the same class whose parameters equal every
parameter the name sets; the first match in the held order wins (the report's order: label by label).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Protocol, TypeVar

from exam_harness.core.errors import ConfigError
from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure
from exam_harness.measures.parsing import parse_measure


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)
_PARAMETERS = re.compile(r"\([^()]*\)")


def matches(pattern: Measure, measure: Measure) -> bool:
    """Whether ``measure`` is of ``pattern``'s class with every parameter ``pattern`` sets."""
    if type(pattern) is not type(measure):
        return False
    return all(getattr(pattern, f.name) is None or getattr(pattern, f.name) == getattr(measure, f.name)
               for f in fields(pattern))


def find_measure(held: Sequence[N], text: str, registry: Registry[type[Measure]] | None = None) -> N | None:
    """The first of ``held`` (anything with a measure ``name``) that ``text`` names (see the module
    docstring), or None. A name the registry does not know (a plugin's measure, the plugin not loaded, as
    when a kept report is read elsewhere) matches a held name that reads the same without its parameters
    (``hits@2`` or ``hits`` for ``hits(tau=4)@2``); a name that is no measure at all raises ConfigError."""
    for item in held:
        if item.name == text:
            return item
    try:
        pattern = parse_measure(text, registry)
    except ConfigError:
        for item in held:
            short = _PARAMETERS.sub("", item.name)
            if text.strip() in (short, short.partition("@")[0]):
                return item
        raise
    for item in held:
        try:
            measure = parse_measure(item.name, registry)
        except ConfigError:
            continue
        if matches(pattern, measure):
            return item
    return None
