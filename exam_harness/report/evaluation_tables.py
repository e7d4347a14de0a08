"""Rich tables of ``exam-harness evaluate``: the summary line and one leaderboard per tau (drawn by the one
renderer). The document's sections print their terminal parts at their placement, before or after the
leaderboards, as in the pytest session (results/sections.py): the correlations with the official leaderboard
before, the features' sections (significance against a baseline, the grades against the judgments, the external
qrels' leaderboards, an LLM grader's cost, judge variance) and a plugin's own after.

Systems are listed in official order when an official leaderboard is known (runs it lacks last),
else by score.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from exam_harness.core.display import TEXT_WIDTH, counted
from exam_harness.report.tables import Column, fmt, render_table, split_to_fit
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


def system_tables(result: EvaluationReport, min_grade: int, *, label: str = "max-grade",
                  width: int = TEXT_WIDTH) -> list[Table]:
    """One row per system at one tau: official rank, EXAM and n-EXAM with stderr, the qrels measures
    of one label variant, alpha-nDCG and nugget F where computed; correlations in the footer. One table, or
    where it would be wider than ``width``, its columns over several tables that each fit (no value cut)."""
    official = official_of(result.sections)
    # measures without a tau (min_grade 0: citation scores, answer length) stand beside every tau's
    boards = [b for b in result.boards()
              if b.min_grade in (min_grade, 0) and (b.label is None or b.label == label)]
    if not boards:
        return [Table(title=f"no leaderboards at grade ≥ {min_grade}")]
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
    return [render_table(part, "inline") for part in split_to_fit(board, width)]


def print_evaluation(
    result: EvaluationReport, console: Console, *, brief: bool = False, label: str = "max-grade"
) -> None:
    """The summary, the sections placed before the leaderboards (the correlations with the official one), the
    leaderboards at each tau, then the other sections (cost, judge variance, significance, the grades
    against the judgments, the external qrels, a plugin's part); under ``brief`` no leaderboards and only the
    sections kept under it."""
    console.print(summary_line(result), soft_wrap=True)
    for line in dropped_lines(result):
        console.print(line, soft_wrap=True)
    _print_sections(result, console, "before", brief=brief)
    if not brief:
        for tau in sorted({b.min_grade for b in result.boards()}):
            for table in system_tables(result, tau, label=label, width=console.width):
                console.print(table)
    _print_sections(result, console, "after", brief=brief)


def _print_sections(result: EvaluationReport, console: Console, placement: Placement, *, brief: bool) -> None:
    """Each section's terminal part, as text lines drawn at the console's width: escaped and contained
    (results/sections.py), so a section's data cannot drive the terminal."""
    for section, content in shown_at(result.sections, placement, brief=brief):
        for line in section_lines(section, content, console.width, brief=brief):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
