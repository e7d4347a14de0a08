"""The agreement feature's computation: grades against human judgments (the method's phase 3) as result objects.

:func:`agreement_tables`: a judged passage's label is its maximum grade over its query's test points
(the ``max-grade`` qrels label). The tables: label (0..5) x judgment level counts; the same
binarised lenient (grade >= 1) and strict (grade >= 4) against a judgment relevance level (2 for
TREC DL, 1 for CAR), plus one binarisation per extra minimum grade asked for; Cohen's kappa of each
2x2 table.

Further views (issue 11):

* :func:`min_answers_agreement` ("min answers = m"): the label is the m-th highest grade, so a
  passage counts as relevant at tau when at least m test points reach tau (m = 1 is the max-grade
  table above); with the binarisations above, the per-row kappa of the graded table and the merged
  3-way table;
* :func:`direct_agreement`: the recorded direct grades of the Workbench ``grades`` entries (one view
  per grading run, i.e. model and prompt class), the grade itself the label, binarised at every
  grade 1..the highest grade seen (a yes/no prompt grades 0/1, Thomas 0..2, a 0..3 labelling prompt
  0..3, so the exam-grade strict cut 4 would not apply).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from exam_harness.analysis.judged_labels import Grades as Grades
from exam_harness.analysis.judged_labels import Judgments as Judgments
from exam_harness.analysis.judged_labels import max_grade_labels as max_grade_labels
from exam_harness.analysis.judged_labels import merged_table as merged_table
from exam_harness.analysis.judged_labels import min_answers_labels as min_answers_labels
from exam_harness.core.models import RecordedGrade
from exam_harness.features.agreement.model import AgreementResult as AgreementResult
from exam_harness.features.agreement.model import BinarisedTable as BinarisedTable
from exam_harness.features.agreement.model import DirectAgreement as DirectAgreement
from exam_harness.features.agreement.model import MergedTable as MergedTable
from exam_harness.features.agreement.model import MinAnswersAgreement as MinAnswersAgreement
from exam_harness.features.agreement.model import RowKappa as RowKappa
from exam_harness.io.workbench import direct_grade_id
from exam_harness.measures.kappa import (
    LENIENT_MIN_GRADE,
    STRICT_MIN_GRADE,
    Table,
    binarised,
    cohen_kappa,
    finite,
    grade_judgment_table,
    one_vs_rest,
    reference_row_pairing,
)


def _cuts(min_grades: Iterable[int]) -> list[tuple[str, int]]:
    """Lenient and strict, then one cut per further minimum grade asked for."""
    cuts: list[tuple[str, int]] = [("lenient", LENIENT_MIN_GRADE), ("strict", STRICT_MIN_GRADE)]
    for tau in min_grades:
        if all(t != tau for _, t in cuts):
            cuts.append((f"min-grade-{tau}", tau))
    return cuts


def _binarisations(table: Table, cuts: Iterable[tuple[str, int]], relevance_level: int) -> list[BinarisedTable]:
    tables = []
    for name, tau in cuts:
        counts = binarised(table, tau, relevance_level)
        tables.append(BinarisedTable(name=name, min_grade=tau, relevance_level=relevance_level, counts=counts,
                                     kappa=finite(cohen_kappa(counts))))
    return tables


def agreement_tables(
    grades: Grades,
    test_points: Mapping[str, Sequence[str]],
    judgments: Judgments,
    *,
    relevance_level: int = 2,
    min_grades: Iterable[int] = (),
) -> AgreementResult:
    """The grade x judgment table, its lenient / strict (and per extra minimum grade) binarisations
    at ``relevance_level``, and Cohen's kappa of each."""
    labels = max_grade_labels(grades, test_points, judgments)
    table = grade_judgment_table(labels, judgments)
    return AgreementResult(relevance_level=relevance_level, passages=len(labels), table=table,
                           binarised=_binarisations(table, _cuts(min_grades), relevance_level))


# --- min answers = m ---------------------------------------------------------------------------


def row_kappa_tables(table: Table, relevance_level: int) -> list[RowKappa]:
    """Per grade row of ``table`` (highest first), the row against the rest of the table: the 2x2
    counts of "label == g" x "judgment level in J(g)" and their Cohen's kappa, J(g) the paired level
    of :func:`~exam_harness.measures.kappa.reference_row_pairing` (DL: grades 4-5 with level 3,
    1-3 with level 2, 0 with level 0)."""
    pairing = reference_row_pairing(relevance_level, table)
    rows = []
    for label in sorted(table, reverse=True):
        counts = one_vs_rest(table, {label}, pairing[label])
        rows.append(RowKappa(label=label, judgments=sorted(pairing[label]), counts=counts,
                             kappa=finite(cohen_kappa(counts))))
    return rows


def min_answers_agreement(
    grades: Grades,
    test_points: Mapping[str, Sequence[str]],
    judgments: Judgments,
    min_answers: Iterable[int],
    *,
    relevance_level: int = 2,
    min_grades: Iterable[int] = (),
) -> list[MinAnswersAgreement]:
    """One view per m: the m-th-highest-grade label x judgment table, its lenient / strict (and per
    extra minimum grade) binarisations, the per-row kappa and the merged 3-way table."""
    cuts = _cuts(min_grades)
    views = []
    for m in dict.fromkeys(min_answers):
        labels = min_answers_labels(grades, test_points, judgments, m)
        table = grade_judgment_table(labels, judgments)
        views.append(MinAnswersAgreement(
            label=f"min-answers-{m}", min_answers=m, relevance_level=relevance_level, passages=len(labels),
            table=table, binarised=_binarisations(table, cuts, relevance_level),
            row_kappas=row_kappa_tables(table, relevance_level), merged=merged_table(table, relevance_level),
        ))
    return views


# --- direct grades -----------------------------------------------------------------------------


def direct_labels(
    recorded: Mapping[tuple[str, str], Sequence[RecordedGrade]], judgments: Judgments
) -> dict[tuple[str | None, str | None], dict[tuple[str, str], int]]:
    """(llm, prompt class) -> (query, passage) -> the recorded direct grade, for judged passages.

    Direct grades are recorded under the pseudo test point ``direct_grade_id(query)``; a grading
    run's first grade of a pair counts (as when recorded exam grades are replayed)."""
    by_run: dict[tuple[str | None, str | None], dict[tuple[str, str], int]] = {}
    for qid, judged in judgments.items():
        tid = direct_grade_id(qid)
        for pid in judged:
            for rec in recorded.get((pid, tid), ()):
                by_run.setdefault((rec.llm, rec.prompt_class), {}).setdefault((qid, pid), rec.grade)
    return by_run


def direct_agreement(
    recorded: Mapping[tuple[str, str], Sequence[RecordedGrade]], judgments: Judgments, *, relevance_level: int = 2
) -> list[DirectAgreement]:
    """One view per recorded direct grading run (model, prompt class): grade x judgment counts and
    the binarisations at every grade 1..the highest grade seen (1 is lenient, 4 strict)."""
    views = []
    for (llm, prompt_class), labels in sorted(direct_labels(recorded, judgments).items(), key=str):
        table = grade_judgment_table(labels, judgments)
        top = max(max(table, default=1), 1)
        cuts = [("lenient" if g == LENIENT_MIN_GRADE else "strict" if g == STRICT_MIN_GRADE else f"min-grade-{g}", g)
                for g in range(1, top + 1)]
        views.append(DirectAgreement(
            label="direct", llm=llm, prompt_class=prompt_class, relevance_level=relevance_level,
            passages=len(labels), table=table, binarised=_binarisations(table, cuts, relevance_level),
        ))
    return views
