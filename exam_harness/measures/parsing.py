"""Measures by name: ``family(name=value,...)@cut`` parsed through the measure registry, any other
trec_eval name into a :class:`~exam_harness.measures.trec.TrecMeasure`.

Above the measure classes (it imports the registry and the trec family), so that :mod:`.base` imports
none of its subclasses.
"""

from __future__ import annotations

import re

from exam_harness.core.errors import ConfigError
from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure
from exam_harness.measures.registry import default_measures
from exam_harness.measures.trec import TrecMeasure

_SYNTAX = re.compile(r"(?P<family>[A-Za-z0-9][\w\-.]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<cut>\d+))?")


def is_measure_syntax(text: str) -> bool:
    """Whether ``text`` is written as a measure (``family(name=value,...)@cut``), known or not."""
    return _SYNTAX.fullmatch(text.strip()) is not None


def parse_measure(text: str, registry: Registry[type[Measure]] | None = None) -> Measure:
    """Parse ``family(name=value,...)@cut`` (parameters and cut-off optional) into a measure.

    Families come from the measure registry (when ``registry`` is None, the built-ins and the active front
    end's features' and plugins': measures/registry.py); trec_eval names
    such as ``P@20``, ``ndcg_cut_10`` or ``map`` are trec measures over EXAM-Qrels.
    """
    registry = registry if registry is not None else default_measures()
    raw = text.strip()
    match = _SYNTAX.fullmatch(raw)
    if match is None:
        return TrecMeasure.parse(raw)  # trec_eval spellings like ndcg_cut_10; errors list what is valid
    family = match.group("family")
    params = _params(match.group("params") or "", raw)
    cut = int(match.group("cut")) if match.group("cut") is not None else None
    if family.lower() in registry:
        return registry.get(family.lower()).from_text(params, cut, raw)
    try:
        return TrecMeasure.parse(raw, params=params, base=family + (f"@{cut}" if cut is not None else ""))
    except ConfigError as exc:
        if not str(exc).startswith("unknown measure"):
            raise
        raise _unknown_family(raw, family, registry, str(exc)) from None


def _unknown_family(raw: str, family: str, registry: Registry[type[Measure]], trec_error: str) -> ConfigError:
    """The trec family's error, with the registry's families (exam-cover, nugget-f, a plugin's) named too and
    the closest one suggested: ``cover`` is most likely ``exam-cover`` (issue 28, item 8)."""
    import difflib

    families = registry.names()
    close = difflib.get_close_matches(family.lower(), families, n=1, cutoff=0.5)
    if not close:
        close = [f for f in families if family.lower() in f.split("-")]
    head, _, available = trec_error.partition(" Available: ")  # head: the trec family's own hint, if any
    hint = f" Did you mean {close[0]!r}?" if close and "Did you mean" not in head else ""
    return ConfigError(f"{head}{hint} Available: {', '.join(families)}, {available}")


def _params(text: str, whole: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"measure {whole!r}: parameters are written name=value, got {item!r}")
        params[key.strip()] = value.strip()
    return params
