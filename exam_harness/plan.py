"""The exam plan: everything that shapes scores, resolved once when the grader exists, then frozen.

The minimum grade tau is resolved here and nowhere else: the user's value(s), else the grader's own
default, checked against the grader's scale. Measures carry their parameters from the plan
(``exam-cover(tau=4)@20``), so nothing downstream is passed tau separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exam_harness.errors import ConfigError
from exam_harness.measures.base import Bindings, Measure
from exam_harness.measures.citations import CITATION_MEASURES
from exam_harness.measures.exam import AlphaNDCG, ExamCover, NExam, NuggetF
from exam_harness.measures.trec import TrecMeasure, parse_trec_name
from exam_harness.measures.trec_rag import TRACK_MEASURES
from exam_harness.models import GraderSpec
from exam_harness.options import ExamOptions


@dataclass(frozen=True)
class ExamPlan:
    """A frozen plan: grader identity, tau(s), cut-off, qrels settings and which measures to compute."""

    grader: GraderSpec
    min_grades: tuple[int, ...]
    k: int
    qrels_m: int
    pool: str
    labels: tuple[str, ...]
    trec_measures: tuple[str, ...]
    relevance_level: int
    beta: float
    redundancy_alpha: float
    empty: str
    alpha_ndcg: bool
    nugget_f: bool  # also for banks without nuggets (their test points count as nuggets)
    tie_order: str = "score"  # how trec_eval measures order a run: score (as trec_eval) or rank

    @property
    def min_grade(self) -> int:
        """The one tau of a pytest session (the first of several in ``exam-harness evaluate``)."""
        return self.min_grades[0]

    def bindings(self, min_grade: int) -> Bindings:
        return Bindings(k=self.k, min_grade=min_grade, pool=self.pool, qrels_m=self.qrels_m, label=self.labels[0],
                        beta=self.beta, redundancy_alpha=self.redundancy_alpha, empty=self.empty)

    def measures(self, min_grade: int, *, nuggets: bool, track: bool = False, support: bool = False) -> list[Measure]:
        """The measures at one tau, bound: EXAM-Cover, n-EXAM, the trec measures per label variant,
        alpha-nDCG when asked, nugget F when the exam has nuggets (or ``nugget_f``), and the TREC RAG
        track's scores with the answers' length when nuggets carry an importance (``track``), citation
        precision, recall and F1 when answers' citations were graded (``support``)."""
        found: list[Measure] = [ExamCover(), NExam()]
        found += [TrecMeasure(name=name, label=label) for label in self.labels for name in self.trec_measures]
        if self.alpha_ndcg:
            found.append(AlphaNDCG())
        if nuggets:
            found.append(NuggetF())
        if track:
            found += [kind() for kind in TRACK_MEASURES]
        if support:
            found += [kind() for kind in CITATION_MEASURES]
        bindings = self.bindings(min_grade)
        return [m.bind(bindings) for m in found]


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


def make_plan(
    options: ExamOptions, spec: GraderSpec, *, where: str = "--exam-min-grade", several: bool = False,
    alpha_ndcg: bool | None = None,
) -> ExamPlan:
    """The plan for ``options`` once the grader's ``spec`` is known; a pytest session takes one tau.

    ``alpha_ndcg`` overrides the option (the pytest report has no alpha-nDCG column, so it skips the work).
    """
    taus = resolve_min_grades(options.min_grade, spec, where)
    if len(taus) > 1 and not several:
        raise ConfigError(f"{where} takes one minimum grade in a pytest session, got {' '.join(map(str, taus))}")
    return ExamPlan(
        grader=spec,
        min_grades=taus,
        k=options.k,
        qrels_m=options.qrels_m,
        pool=options.pool,
        labels=tuple(dict.fromkeys(options.labels)),
        trec_measures=tuple(dict.fromkeys(parse_trec_name(m).name for m in options.measures)),
        relevance_level=options.relevance_level,
        beta=options.beta,
        redundancy_alpha=options.redundancy_alpha,
        empty=options.n_exam_empty,
        alpha_ndcg=(not options.no_alpha_ndcg) if alpha_ndcg is None else alpha_ndcg,
        nugget_f=options.nugget_f,
        tie_order=options.tie_order,
    )
