"""The rich leaderboard printed in pytest's terminal summary (and by ``exam-harness leaderboard``).

Two tables keep it readable on an 80-column terminal: the exam scores (EXAM-Cover, n-EXAM, nugget F,
case outcomes) and the trec_eval measures over EXAM-Qrels. The best value of each column is starred.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from exam_harness.report.schema import ExamReport, SystemScore

MEASURE_TITLES = {"P@20": "P@20", "map": "MAP", "ndcg@10": "nDCG@10", "ndcg@20": "nDCG@20", "rprec": "R-prec", "mrr": "MRR"}
WIDE = 132  # from this width on, "± stderr" shares the value's line

Column = tuple[str, list[tuple[float, float | None] | None]]


def _cell(value: tuple[float, float | None] | None, best: bool, stderr_layout: str) -> Text:
    if value is None:
        return Text("–", style="dim")
    mean, stderr = value
    text = ("★ " if best else "  ") + f"{mean:.3f}"
    if stderr is not None and stderr_layout != "hidden":
        text += (" " if stderr_layout == "inline" else "\n  ") + f"±{stderr:.3f}"
    return Text(text, style="bold green" if best else "")


def _table(
    title: str,
    systems: Sequence[SystemScore],
    columns: list[Column],
    stderr_layout: str,
    tail: list[tuple[str, list[str]]],
    *,
    mark_generated: bool = True,
) -> Table:
    """One row per system in the given order; ``stderr_layout`` is inline, below or hidden."""
    table = Table(title=title, title_justify="left", header_style="bold", show_lines=stderr_layout == "below")
    names = [s.run + (" (gen)" if mark_generated and s.generated else "") for s in systems]
    table.add_column("run", style="cyan", no_wrap=True, min_width=max((len(n) for n in names), default=3))
    for name, _ in columns:
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    for name, _ in tail:
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    bests = [max((v[0] for v in values if v is not None), default=None) for _, values in columns]
    for row, name in enumerate(names):
        cells: list[Any] = [name]
        for (_, values), best in zip(columns, bests):
            value = values[row]
            starred = len(systems) > 1 and value is not None and best is not None and best > 0 and value[0] == best
            cells.append(_cell(value, starred, stderr_layout))
        cells.extend(values[row] for _, values in tail)
        table.add_row(*cells)
    return table


def _tally(system: SystemScore) -> str:
    """Cases answered out of all cases, then required test points missed (F) and errors (E)."""
    o = system.outcomes
    text = f"{o.answered}/{o.answered + o.missed + o.required_missed + o.errors + o.skipped}"
    extra = [f"{n} {code}" for n, code in ((o.required_missed, "F"), (o.errors, "E")) if n]
    return text + (f" ({', '.join(extra)})" if extra else "")


def leaderboard(report: ExamReport, *, label: str = "max-grade", width: int = WIDE) -> Group:
    """Systems ordered by EXAM-Cover (ties by name), as two rich tables."""
    k, tau = report.settings.k, report.settings.min_grade
    wide = width >= WIDE
    systems = sorted(report.systems, key=lambda s: (-s.exam_cover, s.run))
    exam_columns: list[Column] = [
        (f"EXAM-Cover@{k}", [(s.exam_cover, s.exam_cover_stderr) for s in systems]),
        (f"n-EXAM@{k}", [(s.n_exam_cover, s.n_exam_cover_stderr) for s in systems]),
    ]
    if any(s.nugget_f is not None for s in systems):
        exam_columns.append(("nugget-F", [(s.nugget_f.mean, s.nugget_f.stderr) if s.nugget_f else None for s in systems]))
    tallies = [("answered", [_tally(s) for s in systems])]
    exam_table = _table(
        f"EXAM scores (grader {report.settings.grader.name}, τ={tau}, k={k})",
        systems, exam_columns, "inline" if wide else "below", tallies,
    )
    measure_columns: list[Column] = []
    for m in report.settings.measures:
        measure_columns.append((MEASURE_TITLES.get(m, m), [
            (s.qrels_measures[label][m].mean, s.qrels_measures[label][m].stderr)
            if label in s.qrels_measures and m in s.qrels_measures[label] else None
            for s in systems
        ]))
    level = next((q.relevance_level for q in report.qrels if q.label == label), None)
    level_text = f" ≥ {level}" if level is not None else ""
    qrels_table = _table(
        f"EXAM-Qrels measures ({label}{level_text} relevant{'' if wide else '; ± in JSON'})",
        systems, measure_columns, "inline" if wide else "hidden", [], mark_generated=wide,
    )
    return Group(exam_table, qrels_table)


def cache_line(report: ExamReport) -> str:
    c = report.cache
    rate = 100.0 * c.hits / c.unique_pairs if c.unique_pairs else 100.0
    line = (
        f"{report.queries} queries, {report.test_points} test points, {len(report.systems)} runs; "
        f"grades: {c.pairs} pairs, {c.unique_pairs} unique; cache {c.hits} hits / {c.misses} misses "
        f"({rate:.1f}% hits); graded {c.graded} in {c.grading_seconds:.1f}s"
    )
    if c.failures:
        line += f"; {c.failures} FAILED (not scored)"
    return line


def render_to_text(report: ExamReport, *, color: bool, width: int | None = None, label: str = "max-grade") -> str:
    width = width or shutil.get_terminal_size((120, 24)).columns
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False)
    console.print(leaderboard(report, label=label, width=width))
    console.print(cache_line(report), soft_wrap=True)
    return buffer.getvalue()


def render_summary(terminalreporter: Any, session: Any) -> None:
    report = session.report
    terminalreporter.write_sep("=", "exam leaderboard")
    width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", None)
    terminalreporter.write(render_to_text(report, color=bool(terminalreporter.hasmarkup), width=width))
    folder = session.settings.report_dir
    if folder is not None:
        written = [folder / q.file for q in report.qrels] + [folder / "exam-report.json"]
        terminalreporter.write_line("reports: " + ", ".join(_relative(p, Path(session.config.rootpath)) for p in written))


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
