"""The team's label file (docs/calibration.md, "The label file"): JSONL, one label of a (test point, passage)
pair per line, the format of issue 30 with optional fields that say which sample the label belongs to.

``{"query_id", "test_point_id", "passage_id", "label"}`` is a label of the old format: no sample, so it weighs
1 (its figures describe the labelled pairs). A label drawn by ``exam-harness label`` adds:

- ``sample``: the sample's id (``pairs/seed=0/<population>`` or ``test-points/...``), ``unit`` (``pair`` or
  ``test-point``: one draw labels a pair, or every pair of a test point's pool), ``population`` (the units it
  is drawn from);
- ``stratum``, ``stratum_size`` (the units of the stratum), ``stratum_labelled`` (those labelled) and
  ``inclusion`` (their ratio: the unit's inclusion probability; null on a pair of a test point whose pairs
  are not all labelled yet, which is not in the sample until they are);
- ``source`` (``passage`` or ``answer``: a run's generated answer), ``shown`` (whether the judge's grade was
  shown while labelling: false is blind) and any ``kind`` a team gives a pair (the report splits by it).

A pair may have a line in each sample that holds it (the same label); any other field is kept as read. Old
readers (``analysis/labels.py:read_labels``) read the new lines as labels, ignoring the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from exam_harness.core.errors import InputError

Pair = tuple[str, str]  # (passage id, test point id)
UNITS = ("pair", "test-point")
KNOWN = ("query_id", "test_point_id", "passage_id", "label", "sample", "unit", "population", "stratum",
         "stratum_size", "stratum_labelled", "inclusion", "source", "shown", "kind")
EXPECTED = '{"query_id", "test_point_id", "passage_id", "label"} and, from exam-harness label, "sample", "unit", ' \
           '"stratum", "stratum_size", "stratum_labelled", "inclusion"'


@dataclass(frozen=True)
class TeamLabel:
    query_id: str
    test_point_id: str
    passage_id: str
    label: bool
    sample: str | None = None  # None: no sample (a label of the old format, or given by hand)
    unit: str = "pair"
    population: int | None = None
    stratum: str | None = None
    stratum_size: int | None = None
    stratum_labelled: int | None = None
    inclusion: float | None = None
    source: str | None = None
    shown: bool | None = None
    kind: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # fields this version does not know, kept
    where: str = ""  # file:line it was read from ("" for a label made in this session)

    @property
    def pair(self) -> Pair:
        return (self.passage_id, self.test_point_id)

    @property
    def unit_id(self) -> tuple[str, ...]:
        return self.pair if self.unit == "pair" else (self.test_point_id,)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query_id": self.query_id, "test_point_id": self.test_point_id,
                               "passage_id": self.passage_id, "label": self.label}
        if self.sample is not None:
            out.update(sample=self.sample, unit=self.unit, population=self.population, stratum=self.stratum,
                       stratum_size=self.stratum_size,
                       stratum_labelled=self.stratum_labelled, inclusion=self.inclusion)
        for name in ("source", "shown", "kind"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return {**out, **{k: v for k, v in self.extra.items() if k not in out}}


def _field(row: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str, *,
           required: bool = False) -> Any:
    value = row.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        value = "a boolean"  # refused below: True is no count
    if not isinstance(value, kind):
        shown = kind.__name__ if isinstance(kind, type) else "number"
        raise InputError(f"{where}: field {name!r} is {'missing' if value is None else 'not a ' + shown}",
                         field=name, value=str(row.get(name))[:80], expected=shown)
    return value


def parse_line(row: Any, where: str) -> TeamLabel:
    """One line's label; a bad field is an InputError naming the file, line and field."""
    if not isinstance(row, dict):
        raise InputError(f"{where}: a label line is a JSON object", field="line", value=str(row)[:80],
                         expected=EXPECTED)
    query = _field(row, "query_id", str, where) or ""
    tp = _field(row, "test_point_id", str, where, required=True)
    passage = _field(row, "passage_id", str, where, required=True)
    label = _field(row, "label", bool, where, required=True)
    sample = _field(row, "sample", str, where)
    unit = _field(row, "unit", str, where) or "pair"
    if unit not in UNITS:
        raise InputError(f"{where}: field 'unit' is {unit!r}", field="unit", value=unit, expected=" or ".join(UNITS))
    found = TeamLabel(query, tp, passage, label, sample, unit, population=_field(row, "population", int, where),
                      stratum=_field(row, "stratum", str, where),
                      stratum_size=_field(row, "stratum_size", int, where),
                      stratum_labelled=_field(row, "stratum_labelled", int, where),
                      inclusion=_field(row, "inclusion", (int, float), where),
                      source=_field(row, "source", str, where), shown=_field(row, "shown", bool, where),
                      kind=_field(row, "kind", str, where),
                      extra={k: v for k, v in row.items() if k not in KNOWN}, where=where)
    if sample is not None:
        for name in ("population", "stratum", "stratum_size", "stratum_labelled"):
            if getattr(found, name) is None:
                raise InputError(f"{where}: a label of sample {sample!r} needs the field {name!r}", field=name,
                                 value=None, expected=EXPECTED)
        if found.inclusion is not None and not (math.isfinite(found.inclusion) and 0 < found.inclusion <= 1):
            raise InputError(f"{where}: field 'inclusion' is {found.inclusion!r}", field="inclusion",
                             value=found.inclusion, expected="a probability in (0, 1]")
    return found


def read_label_file(path: Path) -> list[TeamLabel]:
    """Every label of the file, each line checked; a pair labelled twice with different labels, or twice in one
    sample, is an InputError naming both lines."""
    # bounded lines and nesting, UTF-8 and a regular file only (a FIFO would block), as every JSON-lines input
    from exam_harness.io.textio import iter_json_lines

    out: list[TeamLabel] = []
    for number, row in iter_json_lines(path):
        out.append(parse_line(row, f"{path}:{number}"))
    check_consistent(out)
    return out


def check_consistent(labels: Sequence[TeamLabel]) -> None:
    """One label per pair (whatever its lines), one line per pair and sample."""
    value: dict[Pair, TeamLabel] = {}
    seen: dict[tuple[Pair, str | None], TeamLabel] = {}
    for label in labels:
        first = value.setdefault(label.pair, label)
        if first.label != label.label:
            raise InputError(f"{label.where}: passage {label.passage_id!r} on test point {label.test_point_id!r} is "
                             f"labelled {label.label} here and {first.label} at {first.where}", field="label",
                             value=label.label, expected="one label per pair")
        twice = seen.setdefault((label.pair, label.sample), label)
        if twice is not label:
            raise InputError(f"{label.where}: passage {label.passage_id!r} on test point {label.test_point_id!r} is "
                             f"labelled twice in {label.sample or 'the labels of no sample'} (also {twice.where})",
                             field="passage_id", value=label.passage_id, expected="one line per pair and sample")


def write_label_file(path: Path, labels: Iterable[TeamLabel]) -> None:
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(label.to_json(), ensure_ascii=False) + "\n" for label in labels))


def labels_of(labels: Iterable[TeamLabel]) -> dict[Pair, bool]:
    return {label.pair: label.label for label in labels}


@dataclass(frozen=True)
class Sample:
    """The labels of one sample: its unit, its strata's sizes and the labelled units (each with its labels);
    a unit whose labels are not all given yet (inclusion null) is left out."""

    id: str
    unit: str
    population: int  # units it is drawn from
    sizes: Mapping[str, int]  # stratum -> units in it (the strata a line names)
    units: Mapping[tuple[str, ...], tuple[str, Sequence[TeamLabel]]]  # unit -> (its stratum, its labels)

    @property
    def labelled(self) -> int:
        return len(self.units)

    @property
    def unreached(self) -> int:
        """Units in strata no labelled unit is in yet (the file names only the strata its lines are in)."""
        held = {stratum for stratum, _ in self.units.values()}
        return self.population - sum(size for name, size in self.sizes.items() if name in held)


def samples_of(labels: Sequence[TeamLabel]) -> dict[str, Sample]:
    """sample id -> its labels, checked: a sample's lines agree on its unit and each stratum's size, and a
    stratum's labelled count and inclusion are what its complete units make (an InputError names the line)."""
    grouped: dict[str, list[TeamLabel]] = {}
    for label in labels:
        if label.sample is not None:
            grouped.setdefault(label.sample, []).append(label)
    return {sample: _sample(sample, lines) for sample, lines in grouped.items()}


def _sample(name: str, lines: Sequence[TeamLabel]) -> Sample:
    unit, population = lines[0].unit, lines[0].population
    sizes: dict[str, int] = {}
    units: dict[tuple[str, ...], tuple[str, list[TeamLabel]]] = {}
    for label in lines:
        if label.unit != unit:
            raise InputError(f"{label.where}: sample {name!r} draws {unit}s (line {lines[0].where}), this line a "
                             f"{label.unit}", field="unit", value=label.unit, expected=unit)
        if label.population != population:
            raise InputError(f"{label.where}: sample {name!r} is drawn from {population} {unit}s ({lines[0].where}), "
                             f"this line says {label.population}", field="population", value=label.population,
                             expected=str(population))
        assert label.stratum is not None and label.stratum_size is not None
        size = sizes.setdefault(label.stratum, label.stratum_size)
        if size != label.stratum_size:
            raise InputError(f"{label.where}: stratum {label.stratum!r} of sample {name!r} holds {label.stratum_size} "
                             f"units here and {size} on another line", field="stratum_size", value=label.stratum_size,
                             expected=str(size))
        if label.inclusion is None:
            continue
        stratum, held = units.setdefault(label.unit_id, (label.stratum, []))
        if stratum != label.stratum:
            raise InputError(f"{label.where}: test point {label.test_point_id!r} is in stratum {stratum!r} on another "
                             "line of the sample", field="stratum", value=label.stratum, expected=stratum)
        held.append(label)
    counts: dict[str, int] = {}
    for stratum, _ in units.values():
        counts[stratum] = counts.get(stratum, 0) + 1
    for label in lines:
        if label.inclusion is None:
            continue
        assert label.stratum is not None and label.stratum_size is not None
        labelled = counts.get(label.stratum, 0)
        if label.stratum_labelled != labelled or not math.isclose(label.inclusion, labelled / label.stratum_size):
            raise InputError(f"{label.where}: stratum {label.stratum!r} of sample {name!r} holds {labelled} labelled "
                             f"{unit}s of {label.stratum_size} in the file, but the line says {label.stratum_labelled} "
                             f"(inclusion {label.inclusion:g}); a line was removed or edited", field="inclusion",
                             value=label.inclusion, expected=f"{labelled}/{label.stratum_size}")
        if labelled > label.stratum_size:
            raise InputError(f"{label.where}: stratum {label.stratum!r} holds more labelled units than its size",
                             field="stratum_size", value=label.stratum_size, expected=f">= {labelled}")
    assert population is not None
    if sum(sizes.values()) > population:
        raise InputError(f"{lines[0].where}: the strata of sample {name!r} hold {sum(sizes.values())} units, more than "
                         f"its population of {population}", field="population", value=population,
                         expected=f">= {sum(sizes.values())}")
    return Sample(name, unit, population, dict(sorted(sizes.items())),
                  {u: (s, tuple(held)) for u, (s, held) in sorted(units.items())})


def with_counts(labels: Sequence[TeamLabel], sample: str, strata: Mapping[tuple[str, ...], str],
                sizes: Mapping[str, int], complete: Iterable[tuple[str, ...]]) -> list[TeamLabel]:
    """``labels`` with the lines of ``sample`` given their stratum's counts: ``complete`` units get the
    inclusion labelled / size, a pair of a unit not complete gets null."""
    done = set(complete)
    counts: dict[str, int] = {}
    for unit in done:
        counts[strata[unit]] = counts.get(strata[unit], 0) + 1
    out = []
    for label in labels:
        if label.sample != sample:
            out.append(label)
            continue
        stratum = strata[label.unit_id]
        labelled = counts.get(stratum, 0)
        out.append(replace(label, population=len(strata), stratum=stratum, stratum_size=sizes[stratum],
                           stratum_labelled=labelled,
                           inclusion=labelled / sizes[stratum] if label.unit_id in done else None))
    return out
