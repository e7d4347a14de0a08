"""Rich tables of ``exam-harness evaluate``: the summary line, correlations with the official
leaderboard, one leaderboard per tau (drawn by the one renderer), baseline comparisons, agreement;
the "min answers = m" and direct-grade agreement views (also drawn by ``analyze agreement``) and the
leaderboards over external qrels with their per-query correlations.

Systems are listed in official order when an official leaderboard is known (runs it lacks last),
else by score. The document's sections (an LLM grader's cost, judge variance, a plugin's own) print
their terminal lines, as in the pytest session (results/sections.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from exam_harness.analysis.agreement import DirectAgreement, MinAnswersAgreement
from exam_harness.analysis.trec_rag_agreement import AssignmentAgreement
from exam_harness.display import counted
from exam_harness.preflight import near_match
from exam_harness.report.analysis_tables import agreement_renderables
from exam_harness.report.evaluation import OFFICIAL_QRELS_SOURCE
from exam_harness.report.tables import Column, fmt, render_table, title_of
from exam_harness.report.tables import Leaderboard as Board
from exam_harness.results.evaluation import (
    EvaluationReport,
    ExternalLeaderboard,
    ExternalQrelsResult,
    Leaderboard,
    PerQueryCorrelation,
)
from exam_harness.results.sections import shown_sections

_WITH_STDERR = ("exam-cover", "n-exam-cover")


def system_order(
    systems: Sequence[str], official: Mapping[str, float] | None, scores: Mapping[str, float]
) -> list[str]:
    if official:
        return sorted(systems, key=lambda r: (r not in official, official.get(r, 0.0), -scores.get(r, 0.0), r))
    return sorted(systems, key=lambda r: (-scores.get(r, 0.0), r))


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


def correlation_table(result: EvaluationReport) -> Table:
    """Spearman's rho / Kendall's tau of every leaderboard against the official one, per tau."""
    # boards of measures without a tau (min_grade 0) are shown in every tau's table
    boards = result.boards()
    taus = sorted({b.min_grade for b in boards} - {0}) or [0]
    table = Table(
        title="Correlation with the official leaderboard (Spearman ρ / Kendall τ)", title_justify="left",
        header_style="bold",
    )
    table.add_column("measure", style="cyan", no_wrap=True)
    table.add_column("label", no_wrap=True)
    for tau in taus:
        table.add_column(f"grade ≥ {tau}", justify="right", no_wrap=True)
    rows: dict[tuple[str, str], dict[int, Leaderboard]] = {}
    for b in boards:
        rows.setdefault((b.measure, b.label or ""), {})[b.min_grade] = b
    missing: set[str] = set()
    extra: set[str] = set()
    for (_, label), by_tau in rows.items():
        cells = []
        for tau in taus:
            board = by_tau.get(tau)
            c = board.correlation if board is not None else None
            if c is not None:
                missing.update(c.missing)
                extra.update(c.extra)
            # n: the runs both leaderboards rank; a coefficient over 2 runs says little
            cells.append("–" if c is None else f"{fmt(c.spearman)} / {fmt(c.kendall)} (n={c.n})")
        table.add_row(next(iter(by_tau.values())).title, label, *cells)
    notes = []
    if missing:
        # a misspelt run name leaves its run out of every correlation: show what it was probably meant as
        notes.append(f"official runs not among the evaluated runs (left out): {_names(missing, near=sorted(extra))}")
    if extra:
        notes.append(f"evaluated runs the official leaderboard lacks (left out): {_names(extra)}")
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    return table


def _names(names: set[str], limit: int = 8, near: Sequence[str] = ()) -> str:
    """The names, cut after ``limit``; each with its look-alike among ``near`` (``'a_b' ~ 'a-b'``) if any."""
    shown = sorted(names)

    def named(n: str) -> str:
        match = near_match(n, near) if near else None
        return f"{n!r} ~ {match}" if match else repr(n)

    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(named(n) for n in shown[:limit]) + more


def system_table(result: EvaluationReport, min_grade: int, *, label: str = "max-grade") -> Table:
    """One row per system at one tau: official rank, EXAM and n-EXAM with stderr, the qrels measures
    of one label variant, alpha-nDCG and nugget F where computed; correlations in the footer."""
    official = result.official
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
            footer.append((name, [fmt(getattr(b.correlation, attr)) if b.correlation else "–" for b in boards]))
    board = Board(f"Leaderboards at grade ≥ {min_grade} (qrels label {label}; ± standard error)", order, columns,
                  before=before, footer=footer)
    return render_table(board, "inline")


def significance_table(result: EvaluationReport, min_grade: int) -> Table | None:
    """The baseline comparison of the cover leaderboards at one tau (all others are in the JSON)."""
    boards = [b for b in result.boards()
              if b.min_grade == min_grade and b.significance is not None and b.measure.startswith(_WITH_STDERR)]
    if not boards:
        return None
    sig = boards[0].significance
    assert sig is not None
    table = Table(
        title=f"Against baseline {sig.baseline!r} at grade ≥ {min_grade} ({sig.method} test, α = {sig.alpha:g}; "
        "▼ significantly worse, ▲ better)",
        title_justify="left", header_style="bold",
    )
    table.add_column("run", style="cyan", no_wrap=True)
    for b in boards:
        table.add_column(f"{b.title} Δ [CI]", justify="right", no_wrap=True)
        table.add_column("p", justify="right")
    order = system_order([r for r in boards[0].systems if r != sig.baseline], result.official, boards[0].systems)
    for run in order:
        cells: list[Any] = [run]
        for b in boards:
            assert b.significance is not None
            c = b.significance.runs.get(run)
            if c is None:
                cells += ["–", "–"]
                continue
            mark = "▼ " if c.significantly_worse else "▲ " if c.significantly_better else ""
            style = "red" if c.significantly_worse else "green" if c.significantly_better else ""
            cells.append(Text(f"{mark}{c.diff:+.3f} [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]", style=style))
            cells.append(Text(f"{c.p:.3g}", style=style))
        table.add_row(*cells)
    return table


def print_evaluation(
    result: EvaluationReport, console: Console, *, brief: bool = False, label: str = "max-grade"
) -> None:
    console.print(summary_line(result), soft_wrap=True)
    for line in dropped_lines(result):
        console.print(line, soft_wrap=True)
    if result.official:
        console.print(correlation_table(result))
    taus = sorted({b.min_grade for b in result.boards()})
    if not brief:
        for tau in taus:
            console.print(system_table(result, tau, label=label))
        for section, content in shown_sections(result.sections):  # cost, judge variance, a plugin's part
            for line in section.terminal(content):
                console.print(line, soft_wrap=True, markup=False, highlight=False)
    for tau in taus:
        sig = significance_table(result, tau)
        if sig is not None:
            console.print(sig)
    if result.agreement is not None:
        for table in agreement_renderables(result.agreement):
            console.print(table)
    for table in agreement_view_tables(result.min_answers or [], result.direct_agreement or []):
        console.print(table)
    if result.external_qrels is not None:
        for table in external_qrels_tables(result.external_qrels, result.official, brief=brief):
            console.print(table)
    if result.trec_rag_agreement is not None:
        console.print(assignment_agreement_table(result.trec_rag_agreement))


def assignment_agreement_table(agreement: AssignmentAgreement) -> Table:
    """The grader's nugget assignments (rows) against the human ones (columns), with each label's kappa."""
    table = Table(title=f"TREC RAG nugget assignments against human labels ({agreement.pairs:,} pairs, "
                  f"{agreement.unmatched:,} human labels unmatched; agreement {fmt(agreement.agreement)}, "
                  f"Cohen's κ {fmt(agreement.kappa)})", title_justify="left", header_style="bold")
    table.add_column("grader \\ human")
    labels = list(agreement.confusion)
    for label in labels:
        table.add_column(label, justify="right")
    table.add_column("κ (label vs rest)", justify="right")
    for label in labels:
        table.add_row(label, *(f"{agreement.confusion[label][other]:,}" for other in labels),
                      fmt(agreement.label_kappa.get(label)))
    return table


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


# --- external qrels ----------------------------------------------------------------------------


def _source_name(qrels: str, level: int | None) -> str:
    from pathlib import Path

    name = qrels if qrels == OFFICIAL_QRELS_SOURCE else Path(qrels).name
    return name if level is None else f"{name} (level {level})"


def _by_source(boards: Sequence[ExternalLeaderboard]) -> dict[tuple[str, int], list[ExternalLeaderboard]]:
    grouped: dict[tuple[str, int], list[ExternalLeaderboard]] = {}
    for b in boards:
        grouped.setdefault((b.qrels, b.relevance_level), []).append(b)
    return grouped


def _named_rows_table(title: str, names: tuple[str, str], figures: Sequence[str]) -> Table:
    """A table whose rows are named by two columns (the first highlighted) followed by right-aligned figures."""
    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column(names[0], style="cyan")
    table.add_column(names[1], no_wrap=True)
    for name in figures:
        table.add_column(name, justify="right", no_wrap=True)
    return table


def external_correlation_table(ext: ExternalQrelsResult) -> Table:
    """Spearman's rho / Kendall's tau of each qrels leaderboard against the official leaderboard: a row
    per measure, a section per qrels file and relevance level."""
    table = _named_rows_table("Leaderboards over qrels files: correlation with the official leaderboard",
                              ("qrels", "measure"), ("Spearman ρ", "Kendall τ", "runs", "queries"))
    for i, ((qrels, level), boards) in enumerate(_by_source(ext.leaderboards).items()):
        if i:
            table.add_section()
        for j, b in enumerate(boards):
            c = b.correlation
            table.add_row(_source_name(qrels, level) if j == 0 else "", title_of(b.measure),
                          fmt(c.spearman if c else None), fmt(c.kendall if c else None),
                          str(c.n) if c else "–", str(b.queries))
    return table


def external_system_table(boards: Sequence[ExternalLeaderboard], official: Mapping[str, float] | None) -> Table:
    """One qrels file at one relevance level: runs x measures (± standard error)."""
    first = boards[0]
    order = system_order(list(first.systems), official, first.systems)
    columns = [Column(title_of(b.measure), {r: (v, b.stderr.get(r)) for r, v in b.systems.items()}) for b in boards]
    before = [("official", {r: "–" if r not in official else f"{official[r]:g}" for r in order})] if official else []
    title = f"Qrels {_source_name(first.qrels, first.relevance_level)}, {first.queries} queries, ± stderr"
    return render_table(Board(title, order, columns, before=before), "inline")


def _per_query_name(c: PerQueryCorrelation) -> str:
    if c.min_grade is not None:
        return f"{title_of(c.measure)} (grade ≥ {c.min_grade})"
    return _source_name(c.source, c.relevance_level)


def per_query_table(ext: ExternalQrelsResult) -> Table | None:
    """Per-query correlation with the official qrels: per query rho / tau over the runs, their means over
    the queries where defined, and tau pooled over every (run, query) point."""
    if not ext.per_query:
        return None
    table = _named_rows_table(
        f"Per-query correlation with the {ext.official_qrels or OFFICIAL_QRELS_SOURCE} (relevance level "
        f"{ext.official_relevance_level}): per query, ρ / τ over the runs; mean over the queries; τ pooled over "
        "every (run, query)", ("leaderboard", "vs official"), ("mean ρ", "mean τ", "pooled τ", "queries"))
    previous = None
    for c in ext.per_query:
        name = _per_query_name(c)
        if previous is not None and name != previous:
            table.add_section()
        undefined = f" ({c.undefined} undefined)" if c.undefined else ""
        table.add_row(name if name != previous else "", title_of(c.official_measure), fmt(c.mean_spearman),
                      fmt(c.mean_kendall), fmt(c.pooled.kendall), f"{len(c.queries)}{undefined}")
        previous = name
    return table


def external_qrels_tables(
    ext: ExternalQrelsResult, official: Mapping[str, float] | None, *, brief: bool = False
) -> list[Table]:
    """Each qrels leaderboard (unless ``brief``), their correlations with the official leaderboard, and
    the per-query correlations."""
    tables: list[Table] = []
    if not brief:
        tables += [external_system_table(boards, official) for boards in _by_source(ext.leaderboards).values()]
    if official:
        tables.append(external_correlation_table(ext))
    per_query = per_query_table(ext)
    if per_query is not None:
        tables.append(per_query)
    return tables
