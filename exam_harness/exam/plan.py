"""The exam plan: everything that shapes scores, resolved once when the grader exists, then frozen.

The minimum grade tau is resolved here and nowhere else: the user's value(s), else the grader's own
default, checked against the grader's scale. Measures carry their parameters from the plan
(``exam-cover(tau=4)@20``), so nothing downstream is passed tau separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from exam_harness.config.gates import RequiredScope
from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import GraderSpec
from exam_harness.core.registry import Registry
from exam_harness.measures.base import Bindings, Measure
from exam_harness.measures.citations import CITATION_MEASURES
from exam_harness.measures.exam import AlphaNDCG, ExamCover, NExam, NuggetF
from exam_harness.measures.parsing import parse_measure
from exam_harness.measures.trec import TrecMeasure


@dataclass(frozen=True)
class ExamPlan:
    """A frozen plan: grader identity, tau(s), cut-off, qrels settings and which measures to compute."""

    grader: GraderSpec
    min_grades: tuple[int, ...]
    k: int
    qrels_m: int
    pool: str
    labels: tuple[str, ...]
    # the measures asked for (--exam-measures / --measures), parsed from the measure registry, parameters
    # left unset filled from the plan; a trec measure without a label is computed for every label variant
    requested: tuple[Measure, ...]
    relevance_level: int
    beta: float
    redundancy_alpha: float
    empty: str
    alpha_ndcg: bool
    nugget_f: bool  # also for banks without nuggets (their test points count as nuggets)
    tie_order: str = "score"  # how trec_eval measures order a run: score (as trec_eval) or rank
    # the runs required test points apply to, and the baseline run that never fails the session
    required: RequiredScope = field(default_factory=RequiredScope)

    @property
    def min_grade(self) -> int:
        """The one tau of a pytest session (the first of several in ``exam-harness evaluate``)."""
        return self.min_grades[0]

    def bindings(self, min_grade: int) -> Bindings:
        return Bindings(k=self.k, min_grade=min_grade, pool=self.pool, qrels_m=self.qrels_m, label=self.labels[0],
                        beta=self.beta, redundancy_alpha=self.redundancy_alpha, empty=self.empty)

    @property
    def trec_measures(self) -> tuple[str, ...]:
        """The names of the trec measures asked for (``P@20``, ``ndcg@10``, ``success.10``), once each."""
        return tuple(dict.fromkeys(m.name for m in self.requested if isinstance(m, TrecMeasure)))

    def measures(self, min_grade: int, *, nuggets: bool, extra: Sequence[Measure] = (), support: bool = False,
                 ranked: bool = True) -> list[Measure]:
        """The measures at one tau, bound, each once: EXAM-Cover and n-EXAM (the leaderboard's own), every
        other measure asked for in the order given, the trec measures per label variant (label by label),
        alpha-nDCG when asked, nugget F when the exam has nuggets (or ``nugget_f``), the features' own for this
        exam (``extra``: hook ``pytest_exam_planned_measures``), citation precision, recall and F1 when answers'
        citations were graded (``support``). Without a ranked run (``ranked``
        False: every run is generated answers) a measure that scores no generated answers (the trec
        measures: Measure.scores_generated) is left out, as no run would get a value of it."""
        found: list[Measure] = [ExamCover(), NExam()]
        found += [m for m in self.requested if not (isinstance(m, TrecMeasure) and m.label is None)]
        found += [TrecMeasure(name=m.name, min_grade=m.min_grade, m=m.m, pool=m.pool, k=m.k, label=label)
                  for label in self.labels for m in self.requested if isinstance(m, TrecMeasure) and m.label is None]
        if self.alpha_ndcg:
            found.append(AlphaNDCG())
        if nuggets:
            found.append(NuggetF())
        found += extra
        if support:
            found += [kind() for kind in CITATION_MEASURES]
        bindings = self.bindings(min_grade)
        return list({str(b): b for b in (m.bind(bindings) for m in found) if ranked or b.scores_generated}.values())


def resolve_min_grades(given: Sequence[int], spec: GraderSpec, where: str = "--exam-min-grade") -> tuple[int, ...]:
    """The user's tau values, else the grader's default, each checked against the grader's scale."""
    taus = tuple(dict.fromkeys(given)) or (spec.default_min_grade,)
    for tau in taus:
        if not 1 <= tau <= spec.max_grade:
            raise ConfigError(
                f"{where} {tau} is outside grader {spec.name!r}'s scale: its grades run 0..{spec.max_grade}, "
                f"so tau must be in 1..{spec.max_grade}"
            )
    return taus


def parse_measures(names: Sequence[str], registry: Registry[type[Measure]] | None = None,
                   where: str = "--exam-measures") -> tuple[Measure, ...]:
    """Each name parsed by the measure registry (built-ins when None; plugin families too), once each."""
    found: dict[str, Measure] = {}
    for name in names:
        try:
            measure = parse_measure(name, registry)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        found.setdefault(str(measure), measure)
    return tuple(found.values())


def make_plan(
    options: ExamOptions, spec: GraderSpec, *, where: str = "--exam-min-grade", several: bool = False,
    alpha_ndcg: bool | None = None, registry: Registry[type[Measure]] | None = None,
) -> ExamPlan:
    """The plan for ``options`` once the grader's ``spec`` is known; a pytest session takes one tau.

    ``alpha_ndcg`` overrides the option (a pytest session computes alpha-nDCG only when ``--exam-measures``
    names it); ``registry`` holds the measure families ``options.measures`` may name (built-ins when None).
    """
    taus = resolve_min_grades(options.min_grade, spec, where)
    requested = parse_measures(options.measures, registry, where.replace("min-grade", "measures"))
    for measure in requested:
        depth = measure.depth()  # 0 while the cut-off is the plan's, still unbound
        if depth > options.k:
            # passages below the exam's k are not graded: they would count as covering nothing
            k_option = where.replace("min-grade", "k")
            raise ConfigError(f"{where.replace('min-grade', 'measures')}: {measure} reads each run's top {depth}, "
                              f"but the exam grades the top {options.k} only ({k_option}); raise {k_option} "
                              f"to {depth} or cut the measure at {options.k} or less")
    if len(taus) > 1 and not several:
        raise ConfigError(f"{where} takes one minimum grade in a pytest session, got {' '.join(map(str, taus))}")
    return ExamPlan(
        grader=spec,
        min_grades=taus,
        k=options.k,
        qrels_m=options.qrels_m,
        pool=options.pool,
        labels=tuple(dict.fromkeys(options.labels)),
        requested=requested,
        relevance_level=options.relevance_level,
        beta=options.beta,
        redundancy_alpha=options.redundancy_alpha,
        empty=options.n_exam_empty,
        alpha_ndcg=(not options.no_alpha_ndcg) if alpha_ndcg is None else alpha_ndcg,
        nugget_f=options.nugget_f,
        tie_order=options.tie_order,
        required=options.required_scope,
    )

