"""Rich tables of ``exam-harness evaluate``: the summary line, one leaderboard per tau (drawn by the one
renderer) and the "min answers = m" and direct-grade agreement views (drawn by the agreement section and by
``analyze agreement``). The document's sections print their terminal parts at their placement, before or
after the leaderboards, as in the pytest session (results/sections.py): the correlations with the official
leaderboard before, significance against a baseline, agreement, the external qrels' leaderboards, an LLM
grader's cost, judge variance, a plugin's own after.

Systems are listed in official order when an official leaderboard is known (runs it lacks last),
else by score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.table import Table

from exam_harness.analysis.agreement import DirectAgreement, MinAnswersAgreement
from exam_harness.core.display import counted
from exam_harness.report.tables import Column, fmt, render_table
from exam_harness.report.tables import Leaderboard as Board
from exam_harness.results.evaluation import EvaluationReport, correlation_of, official_of, system_order
from exam_harness.results.sections import Placement, section_lines, shown_at

_WITH_STDERR = ("exam-cover", "n-exam-cover")


def summary_line(result: EvaluationReport) -> str:
    c, g, spec = result.collection, result.grading, result.settings.grader
    collection = (f"{counted(c.queries, 'query', 'queries')}, {c.passages:,} passages ({c.distinct_passages:,} "
                  f"distinct), {counted(c.runs, 'run')}, {counted(c.test_points, 'test point')}, {c.judged:,} judged")
    desc = " ".join(x for x in (spec.name, spec.model) if x) + (f" / {spec.prompt_class}" if spec.prompt_class else "")
    graded = g.source == "grader"
    extra = f", {g.hits:,} from cache, {g.graded:,} graded in {g.grading_seconds:.1f}s" if graded else ""
    fail = f", {g.failures:,} without grade" if g.failures else ""
    return "; ".join([collection, f"grades: {desc} ({g.unique_pairs:,} pairs{extra}{fail})"])


def dropped_lines(result: EvaluationReport) -> list[str]:
    """One line per measure that leaves queries out (n-EXAM where no passage of the pool covers a test point
    at its tau, nugget F where a query has no nuggets), naming them: its means are over the other queries."""
    lines = []
    for board in result.boards():
        if board.dropped:
            at = f" at grade ≥ {board.min_grade}" if board.min_grade else ""
            label = f" (qrels label {board.label})" if board.label else ""
            lines.append(f"{board.title}{at}{label} scores {board.queries} of {result.collection.queries} queries; "
                         f"left out ({len(board.dropped)}): {', '.join(board.dropped)}")
    return lines


def system_table(result: EvaluationReport, min_grade: int, *, label: str = "max-grade") -> Table:
    """One row per system at one tau: official rank, EXAM and n-EXAM with stderr, the qrels measures
    of one label variant, alpha-nDCG and nugget F where computed; correlations in the footer."""
    official = official_of(result.sections)
    # measures without a tau (min_grade 0: citation scores, answer length) stand beside every tau's
    boards = [b for b in result.boards()
              if b.min_grade in (min_grade, 0) and (b.label is None or b.label == label)]
    if not boards:
        return Table(title=f"no leaderboards at grade ≥ {min_grade}")
    order = system_order(list(boards[0].systems), official, boards[0].systems)
    columns = [
        Column(b.title, {r: (v, b.stderr.get(r)) for r, v in b.systems.items()},
               stderr=b.measure.startswith(_WITH_STDERR))
        for b in boards
    ]
    before = [("official", {r: "–" if r not in official else f"{official[r]:g}" for r in order})] if official else []
    footer: list[tuple[str, Sequence[str]]] = []
    if official:
        for name, attr in (("Spearman ρ", "spearman"), ("Kendall τ", "kendall")):
            correlations = [correlation_of(result.sections, b.name) for b in boards]
            footer.append((name, [fmt(getattr(c, attr)) if c else "–" for c in correlations]))
    board = Board(f"Leaderboards at grade ≥ {min_grade} (qrels label {label}; ± standard error)", order, columns,
                  before=before, footer=footer)
    return render_table(board, "inline")


def print_evaluation(
    result: EvaluationReport, console: Console, *, brief: bool = False, label: str = "max-grade"
) -> None:
    """The summary, the sections placed before the leaderboards (the correlations with the official one), the
    leaderboards at each tau, then the other sections (cost, judge variance, significance, agreement, the
    external qrels, a plugin's part); under ``brief`` no leaderboards and only the sections kept under it."""
    console.print(summary_line(result), soft_wrap=True)
    for line in dropped_lines(result):
        console.print(line, soft_wrap=True)
    _print_sections(result, console, "before", brief=brief)
    if not brief:
        for tau in sorted({b.min_grade for b in result.boards()}):
            console.print(system_table(result, tau, label=label))
    _print_sections(result, console, "after", brief=brief)


def _print_sections(result: EvaluationReport, console: Console, placement: Placement, *, brief: bool) -> None:
    """Each section's terminal part, as text lines drawn at the console's width: escaped and contained
    (results/sections.py), so a section's data cannot drive the terminal."""
    for section, content in shown_at(result.sections, placement, brief=brief):
        for line in section_lines(section, content, console.width, brief=brief):
            console.print(line, soft_wrap=True, markup=False, highlight=False)


# --- agreement views ---------------------------------------------------------------------------


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
