"""Rich tables of the human-in-the-loop analyses: verify grading, grade grid, missing in bank,
spurious test points and the bank edit impact."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from exam_harness.core.display import shorten, visible
from exam_harness.report.tables import fmt, title_of


def _short(text: str | None, limit: int = 70) -> str:
    """A text for a table cell: one line, control characters shown escaped, cut to ``limit``."""
    return "–" if text is None else visible(shorten(text, limit))


def _judged(level: int | None) -> str:
    return "–" if level is None else str(level)


def verify_tables(reports: Sequence[Any], *, limit: int | None = 10) -> list[Table]:
    """One table per test point: grade counts in the title, then answers, highest grade first."""
    tables = []
    for rep in reports:
        counts = ", ".join(f"{g}: {n}" for g, n in rep.grade_counts.items())
        t = Table(title=f"{rep.test_point_id}  {_short(rep.text, 90)}\n  grades over {rep.graded} passages ({counts})",
                  title_justify="left", header_style="bold")
        t.add_column("grade", justify="right")
        t.add_column("judged", justify="right")
        t.add_column("passage", style="cyan", no_wrap=True)
        t.add_column("extracted answer")
        rows = rep.rows if limit is None else rep.rows[:limit]
        for row in rows:
            t.add_row(str(row.grade), _judged(row.judgment), row.passage_id, _short(row.answer, 80))
        if limit is not None and len(rep.rows) > limit:
            t.add_row("…", "", f"{len(rep.rows) - limit} more", "")
        tables.append(t)
    return tables


def grid_table(grid: Any, *, answers: bool = False, limit: int | None = None) -> Table:
    """Passages x test points (T1..Tn, listed in the caption) of one query."""
    names = [f"T{i}" for i in range(1, len(grid.test_points) + 1)]
    caption = "\n".join(f"{n} = {tp['id']}  {_short(tp['text'], 80)}" for n, tp in zip(names, grid.test_points))
    t = Table(title=f"Grade grid of query {grid.query_id} ({len(grid.rows)} passages)", title_justify="left",
              caption=caption, caption_justify="left", header_style="bold")
    t.add_column("passage", style="cyan", no_wrap=True)
    t.add_column("judged", justify="right")
    t.add_column("max", justify="right")
    for n in names:
        t.add_column(n, justify="right", no_wrap=not answers)
    rows = grid.rows if limit is None else grid.rows[:limit]
    for row in rows:
        cells = []
        for tp in grid.test_points:
            g = row.grades.get(tp["id"])
            cell = "–" if g is None else str(g)
            answer = row.answers.get(tp["id"])
            if answers and answer is not None and answer.strip() != cell:  # a bare rating adds nothing
                cell += "\n" + _short(answer, 24)
            cells.append(Text(cell, style="bold green" if g is not None and g >= 4 else ""))
        t.add_row(row.passage_id, _judged(row.judgment), "–" if row.max_grade is None else str(row.max_grade), *cells)
    return t


def missing_tables(result: Any, *, limit: int | None = 20) -> list[Table]:
    per_query = Table(
        title=f"Missing in bank: passages judged ≥ {result.relevance_level} without any grade ≥ {result.min_grade}",
        title_justify="left", header_style="bold",
    )
    per_query.add_column("query", style="cyan")
    per_query.add_column("relevant", justify="right")
    per_query.add_column("missing", justify="right")
    per_query.add_column("share", justify="right")
    for q in result.queries:
        per_query.add_row(q.query_id, str(q.relevant), str(q.missing), f"{q.missing / q.relevant:.0%}")
    total_rel = sum(q.relevant for q in result.queries)
    total_miss = sum(q.missing for q in result.queries)
    per_query.add_section()
    per_query.add_row("all", str(total_rel), str(total_miss), f"{total_miss / total_rel:.0%}" if total_rel else "–")
    listing = Table(title="Most relevant passages the bank misses (best grade, best test point)", title_justify="left",
                    header_style="bold")
    listing.add_column("query", style="cyan", no_wrap=True)
    listing.add_column("passage", no_wrap=True)
    listing.add_column("judged", justify="right")
    listing.add_column("best", justify="right")
    listing.add_column("text")
    rows = result.passages if limit is None else result.passages[:limit]
    for m in rows:
        listing.add_row(m.query_id, m.passage_id, str(m.judgment), "–" if m.max_grade is None else str(m.max_grade),
                        _short(m.text, 90))
    return [per_query, listing]


def spurious_table(points: Sequence[Any], *, min_grade: int, relevance_level: int, limit: int | None = 20) -> Table:
    t = Table(
        title=f"Spurious test points: judged non-relevant (< {relevance_level}) passages reaching grade ≥ {min_grade}",
        title_justify="left", header_style="bold",
    )
    with_text = any(p.text for p in points)
    t.add_column("test point", style="cyan", no_wrap=True)
    t.add_column("non-rel", justify="right", no_wrap=True)
    t.add_column("rate", justify="right", no_wrap=True)
    t.add_column("rel", justify="right", no_wrap=True)
    t.add_column("prec.", justify="right", no_wrap=True)
    if with_text:
        t.add_column("text", ratio=1)
    rows = points if limit is None else points[:limit]
    for p in rows:
        cells = [p.test_point_id, f"{p.non_relevant_high}/{p.non_relevant_judged}", f"{p.rate:.0%}",
                 f"{p.relevant_high}/{p.relevant_judged}", fmt(p.precision, 2)]
        if with_text:
            cells.append(_short(p.text, 70))
        t.add_row(*cells)
    t.caption = ("non-rel: non-relevant passages at grade ≥ τ / judged non-relevant; rel: the same for relevant ones; "
                 "prec.: share of passages at grade ≥ τ that are judged relevant")
    t.caption_justify = "left"
    return t


def edit_impact_tables(impact: Any, *, limit: int | None = 20) -> list[Table]:
    title = f"Bank changes ({len(impact.changes)} in {len(impact.affected_queries)} of {impact.queries} queries)"
    diff = Table(title=title,
                 title_justify="left", header_style="bold")
    diff.add_column("query", style="cyan", no_wrap=True)
    diff.add_column("change")
    diff.add_column("test point", no_wrap=True)
    diff.add_column("text (old → new)")
    for c in impact.changes:
        if c.change in ("changed", "edited"):
            text = f"{_short(c.old_text, 50)} → {_short(c.text, 50)}"
        else:
            text = _short(c.text if c.change == "added" else c.old_text, 100)
        diff.add_row(c.query_id, c.change, c.test_point_id or "", text)
    labels = Table(title=f"Passages whose {impact.label} label changes (grade ≥ {impact.min_grade}; "
                   f"{len(impact.label_changes)} passages, flips of relevance first)",
                   title_justify="left", header_style="bold")
    labels.add_column("query", style="cyan", no_wrap=True)
    labels.add_column("passage", no_wrap=True)
    labels.add_column("judged", justify="right")
    labels.add_column("old → new", justify="right")
    labels.add_column("relevance", justify="right")
    rows = impact.label_changes if limit is None else impact.label_changes[:limit]
    for c in rows:
        flip = "" if c.old_relevant == c.new_relevant else ("gained" if c.new_relevant else "lost")
        labels.add_row(c.query_id, c.passage_id, _judged(c.judgment), f"{c.old_label} → {c.new_label}", flip)
    moves = Table(title="System scores that move (change of the mean over all queries)", title_justify="left",
                  header_style="bold")
    moves.add_column("run", style="cyan", no_wrap=True)
    measures = list(impact.moves)
    for m in measures:
        moves.add_column(f"Δ {title_of(m)}", justify="right")
    first = impact.moves[measures[0]] if measures else []
    order = [m.run for m in first]
    by = {m: {row.run: row for row in impact.moves[m]} for m in measures}
    shown = 0
    for run in order:
        deltas = [by[m][run].delta for m in measures]
        if all(d == 0 for d in deltas):
            continue
        shown += 1
        if limit is not None and shown > limit:
            break
        moves.add_row(run, *(Text(f"{d:+.4f}", style="red" if d < 0 else "green" if d > 0 else "") for d in deltas))
    return [diff, labels, moves]


def grading_line(summary: Any, what: str) -> str:
    if summary is None:
        return ""
    return (f"{what}: {summary.unique_pairs:,} pairs, {summary.cache_hits:,} from the cache, "
            f"{summary.graded:,} graded, {summary.failures:,} failed")
