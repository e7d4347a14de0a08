"""Rich tables of evaluation results and analyses for the terminal.

Systems are listed in official order when an official leaderboard is known (runs it lacks last),
else by score. Best values are starred; undefined numbers show as a dash.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from exam_harness.evaluation.results import AgreementResult, EvaluationResult, Leaderboard
from exam_harness.progress import GradingProgress

MEASURE_TITLES = {
    "P@20": "P@20", "map": "MAP", "ndcg@10": "nDCG@10", "ndcg@20": "nDCG@20", "rprec": "R-prec", "mrr": "MRR",
    "nugget-f": "nugget F",
}


def title_of(measure: str) -> str:
    if measure.startswith("n-exam-cover@"):
        return "n-EXAM@" + measure.split("@", 1)[1]
    if measure.startswith("exam-cover@"):
        return "EXAM@" + measure.split("@", 1)[1]
    if measure.startswith("alpha-ndcg@"):
        return "α-nDCG@" + measure.split("@", 1)[1]
    return MEASURE_TITLES.get(measure, measure)


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def console_for(file: Any = None, width: int | None = None) -> Console:
    return Console(file=file or sys.stdout, width=width, highlight=False)


def render_text(renderable: Any, width: int = 100) -> str:
    """A renderable as plain text (for pytest's terminal reporter and tests)."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, highlight=False, color_system=None).print(renderable)
    return buffer.getvalue()


ProgressBar = GradingProgress  # the CLI commands draw the same bar as the pytest session


def progress_factory(enabled: bool) -> Any:
    return lambda label: ProgressBar(label, enabled)


def system_order(systems: Sequence[str], official: Mapping[str, float] | None, scores: Mapping[str, float]) -> list[str]:
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
        extra = f", {g.cache_hits:,} from cache, {g.graded:,} graded in {g.seconds:.1f}s" if g.source == "grader" else ""
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
            b = by_tau.get(tau)
            c = b.correlation if b is not None else None
            cells.append("–" if c is None else f"{fmt(c.spearman)} / {fmt(c.kendall)}")
        table.add_row(title_of(measure), label, *cells)
    return table


def system_table(
    result: EvaluationResult, min_grade: int, *, label: str = "max-grade", official: Mapping[str, float] | None = None
) -> Table:
    """One row per system at one tau: official rank, EXAM and n-EXAM with stderr, the qrels measures
    of one label variant, alpha-nDCG and nugget F where computed."""
    official = official if official is not None else result.official
    boards = [b for b in result.leaderboards if b.min_grade == min_grade and (b.label is None or b.label == label)]
    if not boards:
        return Table(title=f"no leaderboards at grade ≥ {min_grade}")
    first = boards[0]
    order = system_order(list(first.systems), official, first.systems)
    table = Table(
        title=f"Leaderboards at grade ≥ {min_grade} (qrels label {label}; ± standard error)", title_justify="left",
        header_style="bold",
    )
    table.add_column("run", style="cyan", no_wrap=True)
    if official:
        table.add_column("official", justify="right")
    for b in boards:
        table.add_column(title_of(b.measure), justify="right", no_wrap=True)
    bests = [max(b.systems.values(), default=0.0) for b in boards]
    for run in order:
        cells: list[Any] = [run]
        if official:
            rank = official.get(run)
            cells.append("–" if rank is None else f"{rank:g}")
        for b, best in zip(boards, bests):
            value = b.systems.get(run)
            if value is None:
                cells.append(Text("–", style="dim"))
                continue
            text = f"{value:.3f}"
            if b.measure.startswith(("exam-cover", "n-exam-cover")):
                text += f" ±{b.stderr.get(run, 0.0):.3f}"
            star = value == best and best > 0
            cells.append(Text(("★" if star else "") + text, style="bold green" if star else ""))
        table.add_row(*cells)
    if official:
        table.add_section()
        for name, attr in (("Spearman ρ", "spearman"), ("Kendall τ", "kendall")):
            cells = [Text(name, style="bold"), ""]
            for b in boards:
                c = b.correlation
                cells.append(Text(fmt(getattr(c, attr)) if c else "–", style="bold"))
            table.add_row(*cells)
    return table


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


def significance_table(result: EvaluationResult, min_grade: int) -> Table | None:
    """The baseline comparison of the cover leaderboards at one tau (all others are in the JSON)."""
    boards = [
        b for b in result.leaderboards
        if b.min_grade == min_grade and b.significance is not None and b.measure.startswith(("exam-cover", "n-exam-cover"))
    ]
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


# --- analyses -------------------------------------------------------------------------------------


def _short(text: str | None, limit: int = 70) -> str:
    if text is None:
        return "–"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    diff = Table(title=f"Bank changes ({len(impact.changes)} in {len(impact.affected_queries)} of {impact.queries} queries)",
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
