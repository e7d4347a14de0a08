"""Tables of a comparison between two reports: per run and measure, and per query."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from exam_harness.results.gate_checks import Change, find, title
from exam_harness.results.schema import ExamReport

if TYPE_CHECKING:
    from exam_harness.config.gates import MeasureRegistry


def changes_table(changes: Sequence[Change], report: ExamReport, *, title_suffix: str = "",
                  registry: MeasureRegistry | None = None) -> Table:
    """One row per run and measure: old, new, difference, the paired test; regressions marked."""
    table = Table(title=f"Changes {title_suffix} (▼ regressed beyond the allowed drop)".replace("  ", " "),
                  title_justify="left", header_style="bold")
    for heading, justify in (("run", "left"), ("measure", "left"), ("old", "right"), ("new", "right"),
                             ("Δ", "right"), ("queries", "right"), ("p", "right")):
        table.add_column(heading, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for c in changes:
        style = "red bold" if c.regressed else ("green" if c.delta > 0 else "")
        mark = "▼ " if c.regressed else ""
        p = "–" if math.isnan(c.p) else f"{c.p:.3g}"
        table.add_row(Text(c.run), c.title or title(c.measure, report, registry), f"{c.old:.4f}", f"{c.new:.4f}",
                      Text(f"{mark}{c.delta:+.4f}", style=style), str(c.queries), p)
    return table


def query_table(old: ExamReport, new: ExamReport, measure: str, *, limit: int | None = 20,
                registry: MeasureRegistry | None = None) -> Table:
    """The per-query differences of one measure, largest first (every run both reports hold)."""
    was, now = find(old, measure, registry), find(new, measure, registry)
    rows = []
    if was is not None and now is not None:
        before = {(r.run, r.query_id): r.scores.get(was.name) for r in old.per_query}
        for r in new.per_query:
            a, b = before.get((r.run, r.query_id)), r.scores.get(now.name)
            if a is not None and b is not None and a != b:
                rows.append((r.run, r.query_id, a, b))
    rows.sort(key=lambda row: (-abs(row[3] - row[2]), row[0], row[1]))
    table = Table(title=f"Per-query changes of {title(measure, new, registry)} ({len(rows)} changed)",
                  title_justify="left",
                  header_style="bold")
    for heading, justify in (("run", "left"), ("query", "left"), ("old", "right"), ("new", "right"), ("Δ", "right")):
        table.add_column(heading, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for run, query, a, b in rows if limit is None else rows[:limit]:
        table.add_row(Text(run), Text(query), f"{a:.4f}", f"{b:.4f}",
                      Text(f"{b - a:+.4f}", style="red" if b < a else "green"))
    return table
