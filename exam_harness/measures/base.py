"""Measures as small value objects that carry their parameters and print in a form that parses back.

``str(ExamCover(k=20, min_grade=4))`` is ``exam-cover(tau=4)@20``; :func:`parse_measure` reads it
back to an equal object, the way ir_measures reads ``P(rel=2)@20``. A parameter left unset (``None``)
is filled from the exam plan by :meth:`Measure.bind` (``exam-cover@20`` means "at the plan's tau").

Each measure computes its per-query values from a :class:`~exam_harness.measures.context.ScoringContext`
and aggregates them (mean and standard error over the queries it scored). Adding a measure means one
class (here or in a plugin) plus one entry in the measure registry (``pytest_exam_register_measures``).
"""

from __future__ import annotations

import abc
import functools
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from exam_harness.core.errors import ConfigError
from exam_harness.core.grade_kinds import GradesNeeded  # at run time: get_type_hints reads the ClassVar
from exam_harness.measures.stats import mean_stderr

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext

PerQuery = dict[str, dict[str, float]]  # run -> query -> value, only the queries the measure scores
M = TypeVar("M", bound="Measure")


@dataclass(frozen=True)
class Bindings:
    """Plan values that fill a measure's unset parameters."""

    k: int
    min_grade: int
    pool: str
    qrels_m: int
    label: str
    beta: float
    redundancy_alpha: float
    empty: str


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a measure family, as ir_measures declares its ``SUPPORTED_PARAMS``: the field it
    sets, the type its text converts to, and the name it prints as."""

    field: str
    dtype: type  # int, float or str
    printed: str


PARAM_TYPES: tuple[type, ...] = (int, float, str)
# What a measure may read of the scoring input beyond the queries, test points and rankings every
# measure reads (the fields of measures.context.ScoringInput).
INPUTS: frozenset[str] = frozenset({"grades", "nuggets", "importance", "support", "judged", "responses",
                                    "passage_text"})


@dataclass(frozen=True)
class Score:
    """A mean over queries with its standard error (stdev / sqrt(n))."""

    mean: float
    stderr: float


@dataclass(frozen=True)
class Measure(abc.ABC):
    """Base of every measure. Subclasses are frozen dataclasses; each field is a parameter.

    ``family`` is the printed name; ``printed`` maps a field to the name it prints as (``tau`` for
    ``min_grade``); ``at`` names the field printed after ``@`` (a cut-off), if any.
    """

    family: ClassVar[str] = ""
    shown: ClassVar[str] = ""  # the name in table headings (EXAM-Cover); "": the key
    at: ClassVar[str | None] = "k"
    printed: ClassVar[Mapping[str, str]] = {"min_grade": "tau"}
    # from Bindings: field name -> bindings attribute
    bound_from: ClassVar[Mapping[str, str]] = {"k": "k", "min_grade": "min_grade"}
    # whether a run of generated answers (Run.generated) gets a value: False for a measure of a ranking
    # against passage labels (trec_eval over EXAM-Qrels), which says nothing of an answer; the pipeline
    # leaves such a run out of the measure's result (see scores_run)
    scores_generated: ClassVar[bool] = True
    # the one kind of grades the values mean something over (core/grade_kinds.py), None for any: a gate on the
    # measure over a report of other grades says why it has no value
    grades_needed: ClassVar[GradesNeeded | None] = None

    def __post_init__(self) -> None:
        k = getattr(self, "k", None)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k={k!r} must be an integer >= 1")
        tau = getattr(self, "min_grade", None)
        if tau is not None and (isinstance(tau, bool) or not isinstance(tau, int) or tau < 1):
            raise ValueError(f"tau={tau!r} must be an integer >= 1 (tau 0 would count ungraded pairs as covered)")

    def pool_read(self) -> str | None:
        """The pool policy whose passages this measure's values depend on beyond each run's top-k, or
        None (a failed pair there makes the value incomplete; see ScoringContext.rests_on_failures):
        a measure with a ``pool`` parameter reads its pool."""
        return str(bound(self, "pool")) if "pool" in self.__dataclass_fields__ else None

    def depth(self) -> int:
        """The cut-off of the runs this measure reads."""
        return int(getattr(self, "k", 0) or 0)

    def requires(self) -> frozenset[str]:
        """The scoring inputs (:data:`INPUTS`) this measure's values depend on beyond the queries, test points
        and rankings: by default the grades, and the judged passages where it reads the ``judged`` pool."""
        return frozenset({"grades", "judged"} if self.pool_read() == "judged" else {"grades"})

    def scores_run(self, generated: bool) -> bool:
        """Whether this measure gives a run a value: every run, except a run of generated answers for a
        measure that declares ``scores_generated = False``."""
        return self.scores_generated or not generated

    @classmethod
    def supported_params(cls) -> dict[str, ParamInfo]:
        """Printed name -> :class:`ParamInfo` of each parameter (every field), typed from the fields'
        annotations as Python resolves them (``int | None`` -> int)."""
        return dict(_supported_params(cls))

    @abc.abstractmethod
    def compute(self, ctx: ScoringContext) -> PerQuery:
        """Per run, the value on every query this measure scores (queries it leaves out are absent)."""

    def aggregate(self, values: Mapping[str, float]) -> Score:
        mean, stderr = mean_stderr(values.values())
        return Score(mean, stderr)

    # -- identity ------------------------------------------------------------------------------
    @property
    def key(self) -> str:
        """The short name used in tables and JSON, without the parameters they show elsewhere."""
        return self._with_cut(self.family)

    @property
    def title(self) -> str:
        """The name a table's heading shows: ``shown`` (the family when empty) with the cut-off."""
        return self._with_cut(self.shown) if self.shown else self.key

    def _with_cut(self, name: str) -> str:
        cut = getattr(self, self.at) if self.at else None
        return name + (f"@{cut}" if cut is not None else "")

    def __str__(self) -> str:
        params = []
        for f in fields(self):
            if f.name == self.at:
                continue
            value = getattr(self, f.name)
            if value is not None:
                params.append(f"{self.printed.get(f.name, f.name)}={_show(value)}")
        cut = getattr(self, self.at) if self.at else None
        return self.family + (f"({','.join(params)})" if params else "") + (f"@{cut}" if cut is not None else "")

    def bind(self: M, bindings: Bindings) -> M:
        """This measure with every unset parameter taken from ``bindings``."""
        changes = {name: getattr(bindings, attr) for name, attr in self.bound_from.items()
                   if getattr(self, name) is None}
        return replace(self, **changes) if changes else self

    @classmethod
    def from_text(cls: type[M], params: Mapping[str, str], cut: int | None, text: str) -> M:
        """Build from parsed ``name=value`` parameters and the ``@`` cut-off (used by :func:`parse_measure`)."""
        names = cls.supported_params()
        values: dict[str, Any] = {}
        for key, raw in params.items():
            info = names.get(key)
            if info is None or info.field == cls.at:
                valid = ", ".join(n for n, x in names.items() if x.field != cls.at)
                raise ConfigError(f"measure {text!r}: unknown parameter {key!r}; valid: {valid}")
            values[info.field] = _convert(raw, info.dtype, text, key)
        if cut is not None:
            if cls.at is None:
                raise ConfigError(f"measure {text!r}: {cls.family} takes no @ cut-off")
            values[cls.at] = cut
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"measure {text!r}: {exc}") from None


def bound(measure: Measure, name: str) -> Any:
    """A parameter of a bound measure (see :meth:`Measure.bind`)."""
    value = getattr(measure, name)
    if value is None:
        raise ConfigError(f"measure {measure} has no {name}: bind it to an exam plan first (Measure.bind)")
    return value


def family_of(base: type[M], name: str, family: str, doc: str) -> type[M]:
    """A measure class that differs from ``base`` only in its printed ``family``: for measures one class
    computes from a table keyed by family (the TREC RAG scores, the citation measures), one line each."""
    made = type(name, (base,), {"family": family, "__doc__": doc, "__module__": base.__module__,
                                "__qualname__": name})
    return cast("type[M]", dataclass(frozen=True)(made))


def _show(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def required_inputs(measures: Iterable[Measure]) -> frozenset[str]:
    """Every scoring input (:data:`INPUTS`) some of ``measures`` depends on (:meth:`Measure.requires`)."""
    return frozenset().union(*(measure.requires() for measure in measures))


@functools.cache
def _supported_params(cls: type[Measure]) -> tuple[tuple[str, ParamInfo], ...]:
    hints = typing.get_type_hints(cls)
    found = []
    for f in fields(cls):
        printed = cls.printed.get(f.name, f.name)
        found.append((printed, ParamInfo(f.name, _param_type(cls, f.name, hints[f.name]), printed)))
    return tuple(found)


def _param_type(cls: type[Measure], name: str, hint: object) -> type:
    """int, float or str from ``X`` or ``X | None``; a ConfigError for any other type."""
    options = [t for t in typing.get_args(hint) if t is not type(None)] \
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union else [hint]
    if typing.get_origin(options[0]) is typing.Literal and len(options) == 1:
        options = [type(v) for v in typing.get_args(options[0])]
    if len(set(options)) == 1 and options[0] in PARAM_TYPES:
        return cast(type, options[0])
    raise ConfigError(f"measure class {cls.__qualname__}: parameter {name} is typed {hint}; a parameter is an int, "
                      "a float or a str (or one of them | None)")


def measure_class_problem(entry: object) -> str | None:
    """Why ``entry`` cannot be a measure family (the measure registry's check on register and on load), or None:
    it must be a subclass of :class:`Measure` whose parameters (its fields) are typed int, float or str."""
    if not (isinstance(entry, type) and issubclass(entry, Measure)):
        return f"{entry!r} is not a Measure subclass"
    try:
        entry.supported_params()
    except ConfigError as exc:
        return str(exc)
    except NameError as exc:  # an annotation that names nothing importable
        return f"{entry.__qualname__}: a parameter's type cannot be resolved ({exc})"
    return None


def _convert(raw: str, dtype: type, text: str, key: str) -> object:
    if dtype is str:
        return raw
    try:
        return dtype(raw)
    except ValueError:
        raise ConfigError(f"measure {text!r}: parameter {key}={raw!r} must be a number") from None
