"""The one leaderboard renderer: rows are runs, columns are measures (mean, optionally ± stderr).

The pytest summary, ``exam-harness leaderboard`` and ``exam-harness evaluate`` all draw their
leaderboards here. The best value of each measure column is starred; an undefined value is a dash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.table import Table
from rich.text import Text

from exam_harness.core.display import visible

StderrLayout = Literal["inline", "below", "hidden"]
Value = tuple[float, float | None]  # mean, standard error (None: not shown)


@dataclass(frozen=True)
class Column:
    """A measure column: run -> (mean, stderr) or None where the run has no value."""

    title: str
    values: Mapping[str, Value | None]
    stderr: bool = True


@dataclass(frozen=True)
class Leaderboard:
    title: str
    runs: Sequence[str]  # row order
    columns: Sequence[Column]
    labels: Mapping[str, str] = field(default_factory=dict)  # run -> shown name (e.g. "rag (gen)")
    before: Sequence[tuple[str, Mapping[str, str]]] = ()  # text columns before the measures (official rank)
    after: Sequence[tuple[str, Mapping[str, str]]] = ()  # text columns after them (case tallies)
    footer: Sequence[tuple[str, Sequence[str]]] = ()  # bold rows under a line, one cell per measure column


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def _cell_text(value: Value, best: bool, layout: StderrLayout, show_stderr: bool) -> str:
    mean, stderr = value
    text = ("★ " if best else "  ") + f"{mean:.3f}"
    if show_stderr and stderr is not None and layout != "hidden":
        text += (" " if layout == "inline" else "\n  ") + f"±{stderr:.3f}"
    return text


def _cell(value: Value | None, best: bool, layout: StderrLayout, show_stderr: bool) -> Text:
    if value is None:
        return Text("–", style="dim")
    return Text(_cell_text(value, best, layout, show_stderr), style="bold green" if best else "")


def split_to_fit(board: Leaderboard, width: int, layout: StderrLayout = "inline") -> list[Leaderboard]:
    """``board``, or where its table would be wider than ``width`` columns, parts of it that each fit: the
    measure columns in order (with their footer cells), each part with the run and ``before`` columns, the
    ``after`` columns in the first, the title marked "continued" from the second on. Widths are the cells'
    own (no cell of a leaderboard wraps), so a fitting part is never cut; a column too wide alone is a part."""
    from rich.cells import cell_len

    def needed(texts: Sequence[str]) -> int:  # a column's width in the table: its widest line, padding, border
        return max((cell_len(line) for text in texts for line in text.split("\n")), default=0) + 3

    names = [visible(board.labels.get(r, r)) for r in board.runs]
    # every part repeats the run and before columns; the after columns stand in the first part only
    repeated = 1 + needed(["run", *names, *(title for title, _ in board.footer)]) + sum(
        needed([title, *values.values()]) for title, values in board.before)
    parts: list[list[int]] = [[]]
    used = repeated + sum(needed([title, *values.values()]) for title, values in board.after)
    for index, column in enumerate(board.columns):
        cells = [_cell_text(v, False, layout, column.stderr) if v is not None else "–" for v in column.values.values()]
        footer = [row[index] for _, row in board.footer if index < len(row)]
        extra = needed([column.title, *cells, *footer])
        if parts[-1] and used + extra > width:
            parts.append([])
            used = repeated
        parts[-1].append(index)
        used += extra
    if len(parts) == 1:
        return [board]
    return [Leaderboard(
        board.title if n == 0 else f"{board.title}, continued", board.runs, [board.columns[i] for i in part],
        labels=board.labels, before=board.before, after=board.after if n == 0 else (),
        footer=[(title, [row[i] for i in part if i < len(row)]) for title, row in board.footer],
    ) for n, part in enumerate(parts)]


def render_table(board: Leaderboard, layout: StderrLayout = "inline") -> Table:
    """One row per run in ``board.runs`` order; ``layout`` places each standard error. Every text of the
    board (run names, titles, text cells: data of a report, a kept one too) is shown escaped
    (display.visible), so a name holding terminal escapes cannot drive the terminal."""
    table = Table(title=visible(board.title), title_justify="left", header_style="bold", show_lines=layout == "below")
    names = [visible(board.labels.get(r, r)) for r in board.runs]
    table.add_column("run", style="cyan", no_wrap=True, min_width=max((len(n) for n in names), default=3))
    for title, _ in board.before:
        table.add_column(visible(title), justify="right", no_wrap=True)
    for column in board.columns:
        table.add_column(visible(column.title), justify="right", no_wrap=True, min_width=len(visible(column.title)))
    for title, _ in board.after:
        table.add_column(visible(title), justify="right", no_wrap=True, min_width=len(visible(title)))
    bests = [max((v[0] for v in c.values.values() if v is not None), default=None) for c in board.columns]
    for run, name in zip(board.runs, names):
        cells: list[Any] = [name, *(visible(values.get(run, "–")) for _, values in board.before)]
        for column, best in zip(board.columns, bests):
            value = column.values.get(run)
            starred = len(board.runs) > 1 and value is not None and best is not None and best > 0 and value[0] == best
            cells.append(_cell(value, starred, layout, column.stderr))
        cells.extend(visible(values.get(run, "")) for _, values in board.after)
        table.add_row(*cells)
    if board.footer:
        table.add_section()
        for title, row in board.footer:
            pad = [""] * len(board.before)
            table.add_row(Text(visible(title), style="bold"), *pad, *(Text(visible(c), style="bold") for c in row))
    return table


def title_of(measure_key: str) -> str:
    """The column title of a measure given by its short name (``exam-cover@20`` -> ``EXAM-Cover@20``)."""
    from exam_harness.core.errors import ConfigError
    from exam_harness.measures.parsing import parse_measure

    try:
        return parse_measure(measure_key).title
    except ConfigError:
        return measure_key
