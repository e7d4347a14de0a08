"""The agreement feature's tables: the max-grade grade x judgment table with its binarisations, the "min answers
= m" and direct-grade views (drawn by the ``agreement`` section and by ``analyze agreement``), and two graders'
grades against each other (``analyze agreement --grades``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

from exam_harness.core.display import visible
from exam_harness.features.agreement.graders import GraderAgreement
from exam_harness.features.agreement.model import AgreementResult, DirectAgreement, MinAnswersAgreement
from exam_harness.report.tables import fmt


def agreement_renderables(agreement: AgreementResult) -> list[Table]:
    levels = sorted({lvl for row in agreement.table.values() for lvl in row})
    full = Table(
        title=f"Grades × human judgments ({agreement.passages:,} judged passages; label = max grade)",
        title_justify="left", header_style="bold",
    )
    full.add_column("grade", justify="right")
    for lvl in levels:
        full.add_column(f"judged {lvl}", justify="right")
    full.add_column("total", justify="right")
    for grade in sorted(agreement.table):
        row = agreement.table[grade]
        full.add_row(str(grade), *(f"{row.get(lvl, 0):,}" for lvl in levels), f"{sum(row.values()):,}")
    tables = [full]
    for b in agreement.binarised:
        t = Table(
            title=f"{b.name}: grade ≥ {b.min_grade} vs judgment ≥ {b.relevance_level}   Cohen's κ = {fmt(b.kappa)}",
            title_justify="left", header_style="bold",
        )
        t.add_column("", no_wrap=True)
        t.add_column("relevant", justify="right")
        t.add_column("not relevant", justify="right")
        for side, name in ((1, f"grade ≥ {b.min_grade}"), (0, f"grade < {b.min_grade}")):
            t.add_row(name, f"{b.counts[side][1]:,}", f"{b.counts[side][0]:,}")
        tables.append(t)
    return tables


def grader_agreement_tables(result: GraderAgreement) -> list[Table]:
    """Two graders' grades against each other: the confusion table, the verdicts at tau, and per label."""
    units = "(passage, test point) pairs" if result.unit == "pair" else "cases (run, test point: best grade)"
    full = Table(title=f"Grades of A × grades of B ({result.common:,} {units} both graded; {result.only_a:,} only by "
                       f"A, {result.only_b:,} only by B)   same grade {fmt(result.observed)}, Cohen's κ = "
                       f"{fmt(result.kappa)}\nA = {visible(result.a)}\nB = {visible(result.b)}",
                 title_justify="left", header_style="bold")
    full.add_column("A \\ B", justify="right")
    for label in result.labels:
        full.add_column(str(label), justify="right")
    for label in result.labels:
        row = result.confusion.get(label, {})
        full.add_row(str(label), *(f"{row.get(other, 0):,}" for other in result.labels))
    tau = result.min_grade
    verdicts = Table(title=f"Verdicts: grade ≥ {tau} by A × by B   Cohen's κ = {fmt(result.verdict_kappa)}",
                     title_justify="left", header_style="bold")
    verdicts.add_column("", no_wrap=True)
    verdicts.add_column(f"B ≥ {tau}", justify="right")
    verdicts.add_column(f"B < {tau}", justify="right")
    for side, name in ((1, f"A ≥ {tau}"), (0, f"A < {tau}")):
        verdicts.add_row(name, f"{result.verdicts[side][1]:,}", f"{result.verdicts[side][0]:,}")
    labels = Table(title="Per label, one against the rest", title_justify="left", header_style="bold")
    for name in ("label", "both", "only A", "only B", "neither", "κ"):
        labels.add_column(name, justify="right")
    for la in result.per_label:
        labels.add_row(str(la.label), f"{la.both:,}", f"{la.only_a:,}", f"{la.only_b:,}", f"{la.neither:,}",
                       fmt(la.kappa))
    return [full, verdicts, labels]


def _levels(table: Mapping[int, Mapping[int, int]]) -> list[int]:
    return sorted({lvl for row in table.values() for lvl in row})


def _group(values: Sequence[int]) -> str:
    """A group of grades or levels as text: ``4–5``, ``0``, ``0–1``."""
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high}" if len(values) == high - low + 1 else "+".join(map(str, values))


def min_answers_summary(views: Sequence[MinAnswersAgreement]) -> Table:
    """One row per m: Cohen's kappa of each binarisation and of the merged 3-way table."""
    cuts = [(b.name, b.min_grade) for b in views[0].binarised]
    level = views[0].relevance_level
    table = Table(title=f"Min answers = m: label = the m-th highest grade (relevant at τ when ≥ m test points "
                  f"reach τ); Cohen's κ against judgment ≥ {level}", title_justify="left", header_style="bold")
    table.add_column("m", justify="right")
    table.add_column("passages", justify="right")
    for name, tau in cuts:
        table.add_column(f"{name} (≥ {tau})", justify="right")
    table.add_column("merged 3-way", justify="right")
    for view in views:
        kappas = {b.name: b.kappa for b in view.binarised}
        merged_kappa = view.merged.kappa if view.merged is not None else None
        table.add_row(str(view.min_answers), f"{view.passages:,}", *(fmt(kappas.get(n)) for n, _ in cuts),
                      fmt(merged_kappa))
    return table


def graded_table(view: MinAnswersAgreement) -> Table:
    """The label x judgment counts with, per row, the paired judgment level and the row's kappa."""
    levels = _levels(view.table)
    table = Table(title=f"Min answers = {view.min_answers}: grade × judgment ({view.passages:,} judged passages); "
                  "row κ: the grade vs its paired judgment level",
                  title_justify="left", header_style="bold")
    table.add_column("grade", justify="right")
    for lvl in levels:
        table.add_column(f"judged {lvl}", justify="right")
    table.add_column("total", justify="right")
    table.add_column("paired", justify="right")
    table.add_column("row κ", justify="right")
    rows = {r.label: r for r in view.row_kappas}
    for grade in sorted(view.table, reverse=True):
        counts = view.table[grade]
        paired = rows.get(grade)
        table.add_row(str(grade), *(f"{counts.get(lvl, 0):,}" for lvl in levels), f"{sum(counts.values()):,}",
                      _group(paired.judgments) if paired else "–", fmt(paired.kappa) if paired else "–")
    return table


def merged_3way_table(view: MinAnswersAgreement) -> Table | None:
    merged = view.merged
    if merged is None:
        return None
    n = len(merged.grades)
    table = Table(title=f"Min answers = {view.min_answers}, merged 3-way: κ = {fmt(merged.kappa)}",
                  title_justify="left", header_style="bold")
    table.add_column("grade", justify="right")
    for group in merged.judgments:
        table.add_column(f"judged {_group(group) if group else '–'}", justify="right")
    table.add_column("row κ", justify="right")
    for i, group in enumerate(merged.grades):
        row = merged.counts[n - 1 - i]
        table.add_row(_group(group), *(f"{row[n - 1 - j]:,}" for j in range(n)), fmt(merged.row_kappas[i]))
    return table


def direct_table(view: DirectAgreement) -> Table:
    """A direct grading run's grade x judgment counts; per grade g >= 1, Cohen's kappa of the cut
    "grade >= g" against "judgment >= relevance level"."""
    levels = _levels(view.table)
    kappas = {b.min_grade: b.kappa for b in view.binarised}
    who = " / ".join(x for x in (view.llm, view.prompt_class) if x) or "(unnamed)"
    table = Table(title=f"Direct grades {who} × human judgments ({view.passages:,} judged passages)",
                  title_justify="left", header_style="bold")
    table.add_column("grade", justify="right")
    for lvl in levels:
        table.add_column(f"judged {lvl}", justify="right")
    table.add_column("total", justify="right")
    table.add_column(f"κ of grade ≥ g vs judged ≥ {view.relevance_level}", justify="right")
    for grade in sorted(view.table, reverse=True):
        counts = view.table[grade]
        kappa = f"≥ {grade}: {fmt(kappas[grade])}" if grade in kappas else "–"
        table.add_row(str(grade), *(f"{counts.get(lvl, 0):,}" for lvl in levels), f"{sum(counts.values()):,}", kappa)
    return table


def agreement_view_tables(
    min_answers: Sequence[MinAnswersAgreement], direct: Sequence[DirectAgreement]
) -> list[Table]:
    """The min-answers summary, each m's graded and merged tables, then each direct grading run's table."""
    tables: list[Table] = [min_answers_summary(min_answers)] if min_answers else []
    for view in min_answers:
        tables.append(graded_table(view))
        merged = merged_3way_table(view)
        if merged is not None:
            tables.append(merged)
    tables.extend(direct_table(view) for view in direct)
    return tables
