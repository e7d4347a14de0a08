"""Rich tables of ``exam-harness evaluate``: the summary line, correlations with the official
leaderboard, one leaderboard per tau (drawn by the one renderer), baseline comparisons, agreement.

Systems are listed in official order when an official leaderboard is known (runs it lacks last),
else by score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from exam_harness.report.analysis_tables import agreement_renderables
from exam_harness.report.evaluation import EvaluationResult, Leaderboard
from exam_harness.report.tables import Column, fmt, render_table, title_of
from exam_harness.report.tables import Leaderboard as Board

_WITH_STDERR = ("exam-cover", "n-exam-cover")


def system_order(
    systems: Sequence[str], official: Mapping[str, float] | None, scores: Mapping[str, float]
) -> list[str]:
    if official:
        return sorted(systems, key=lambda r: (r not in official, official.get(r, 0.0), -scores.get(r, 0.0), r))
    return sorted(systems, key=lambda r: (-scores.get(r, 0.0), r))


def summary_line(result: EvaluationResult) -> str:
    c = result.collection
    g = result.grading
    parts = []
    if c is not None:
        parts.append(
            f"{c.queries} queries, {c.passages:,} passages ({c.distinct_passages:,} distinct), {c.runs} runs, "
            f"{c.test_points} test points, {c.judged:,} judged"
        )
    if g is not None:
        who = g.grader.get("name", g.source)
        model = g.grader.get("model")
        pc = g.grader.get("prompt_class")
        desc = who + (f" {model}" if model else "") + (f" / {pc}" if pc else "")
        graded = g.source == "grader"
        extra = f", {g.cache_hits:,} from cache, {g.graded:,} graded in {g.seconds:.1f}s" if graded else ""
        fail = f", {g.failures:,} without grade" if g.failures else ""
        parts.append(f"grades: {desc} ({g.unique_pairs:,} pairs{extra}{fail})")
    return "; ".join(parts)


def correlation_table(result: EvaluationResult) -> Table:
    """Spearman's rho / Kendall's tau of every leaderboard against the official one, per tau."""
    taus = sorted({b.min_grade for b in result.leaderboards})
    table = Table(
        title="Correlation with the official leaderboard (Spearman ρ / Kendall τ)", title_justify="left",
        header_style="bold",
    )
    table.add_column("measure", style="cyan", no_wrap=True)
    table.add_column("label", no_wrap=True)
    for tau in taus:
        table.add_column(f"grade ≥ {tau}", justify="right", no_wrap=True)
    rows: dict[tuple[str, str], dict[int, Leaderboard]] = {}
    for b in result.leaderboards:
        rows.setdefault((b.measure, b.label or ""), {})[b.min_grade] = b
    for (measure, label), by_tau in rows.items():
        cells = []
        for tau in taus:
            board = by_tau.get(tau)
            c = board.correlation if board is not None else None
            cells.append("–" if c is None else f"{fmt(c.spearman)} / {fmt(c.kendall)}")
        table.add_row(title_of(measure), label, *cells)
    return table


def system_table(result: EvaluationResult, min_grade: int, *, label: str = "max-grade") -> Table:
    """One row per system at one tau: official rank, EXAM and n-EXAM with stderr, the qrels measures
    of one label variant, alpha-nDCG and nugget F where computed; correlations in the footer."""
    official = result.official
    boards = [b for b in result.leaderboards if b.min_grade == min_grade and (b.label is None or b.label == label)]
    if not boards:
        return Table(title=f"no leaderboards at grade ≥ {min_grade}")
    order = system_order(list(boards[0].systems), official, boards[0].systems)
    columns = [
        Column(title_of(b.measure), {r: (v, b.stderr.get(r)) for r, v in b.systems.items()},
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


def significance_table(result: EvaluationResult, min_grade: int) -> Table | None:
    """The baseline comparison of the cover leaderboards at one tau (all others are in the JSON)."""
    boards = [b for b in result.leaderboards
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
        table.add_column(f"{title_of(b.measure)} Δ [CI]", justify="right", no_wrap=True)
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
    result: EvaluationResult, console: Console, *, brief: bool = False, label: str = "max-grade"
) -> None:
    console.print(summary_line(result), soft_wrap=True)
    if result.official:
        console.print(correlation_table(result))
    taus = sorted({b.min_grade for b in result.leaderboards})
    if not brief:
        for tau in taus:
            console.print(system_table(result, tau, label=label))
    for tau in taus:
        sig = significance_table(result, tau)
        if sig is not None:
            console.print(sig)
    if result.agreement is not None:
        for table in agreement_renderables(result.agreement):
            console.print(table)
