"""Report sections the pytest plugin prints on request: analyses and the baseline comparison.

Each section is ``(title, text)``: plain text rendered by rich at a given width, ready for
``terminalreporter.write_sep("-", title)`` + ``terminalreporter.write(text)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exam_harness.errors import ConfigError
from exam_harness.evaluation.grades import GradeTable, GradingSummary
from exam_harness.evaluation.inputs import view_from_banks
from exam_harness.evaluation.render import render_text
from exam_harness.evaluation.statistics import compare_runs
from exam_harness.models import ExamData, Grade, QueryBank

SECTIONS: tuple[str, ...] = ("verify", "grid", "missing", "spurious", "agreement")

Section = tuple[str, str]


def analysis_sections(
    data: ExamData,
    banks: Sequence[QueryBank],
    grades: Mapping[tuple[str, str], Grade | int],
    *,
    names: Sequence[str],
    min_grade: int,
    relevance_level: int = 1,
    query: str | None = None,
    limit: int = 10,
    width: int = 100,
) -> list[Section]:
    """The analyses ``names`` (of :data:`SECTIONS`) of a graded exam, as printable sections.

    ``grades``: the session's grades (Grade objects or plain ints) per (passage, test point).
    ``grid`` needs ``query``; ``verify`` shows every test point of ``query`` (all queries if None),
    ``limit`` rows each. Unknown names are a ConfigError listing the valid ones.
    """
    from exam_harness.evaluation import analyses, render
    from exam_harness.evaluation.agreement import agreement_tables

    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise ConfigError(f"unknown analysis {unknown[0]!r}; valid: {', '.join(SECTIONS)}")
    plain = {pair: (g.grade if isinstance(g, Grade) else int(g)) for pair, g in grades.items()}
    answers = {
        pair: (g.extracted_answer if g.extracted_answer is not None else g.raw_response)
        for pair, g in grades.items() if isinstance(g, Grade)
    }
    view = view_from_banks(data, banks, plain)
    table = GradeTable(grades=plain, answers=answers, summary=GradingSummary(source="session"))
    sections: list[Section] = []
    for name in names:
        if name == "verify":
            reports = analyses.verify_grading(view, table, query=query)
            text = "".join(render_text(t, width) for t in render.verify_tables(reports, limit=limit))
            sections.append(("exam: verify grading", text))
        elif name == "grid":
            if query is None:
                raise ConfigError("the grid analysis needs a query id")
            grid = analyses.grade_grid(view, table, query=query)
            sections.append((f"exam: grade grid of query {query}", render_text(render.grid_table(grid, limit=limit), width)))
        elif name == "missing":
            missing = analyses.missing_in_bank(view, table, min_grade=min_grade, relevance_level=relevance_level,
                                               query=query)
            text = "".join(render_text(t, width) for t in render.missing_tables(missing, limit=limit))
            sections.append(("exam: relevant passages missing in the bank", text))
        elif name == "spurious":
            points = analyses.spurious_test_points(view, table, min_grade=min_grade, relevance_level=relevance_level,
                                                   query=query)
            sections.append(("exam: spurious test points", render_text(
                render.spurious_table(points, min_grade=min_grade, relevance_level=relevance_level, limit=limit), width)))
        else:  # agreement
            tps = {q: view.test_points[q] for q in view.queries}
            result = agreement_tables(plain, tps, data.judgments, relevance_level=relevance_level, min_grades=[min_grade])
            text = "".join(render_text(t, width) for t in render.agreement_renderables(result))
            sections.append(("exam: agreement with human judgments", text))
    return sections


def baseline_section(
    per_query_by_run: Mapping[str, Mapping[str, float]],
    baseline: str,
    *,
    alpha: float = 0.05,
    method: str = "permutation",
    measure: str = "EXAM-Cover",
    n_resamples: int = 10000,
    seed: int = 0,
    width: int = 100,
) -> Section:
    """Every run against ``baseline`` (difference, CI, p; worse runs marked) as a printable section."""
    from rich.table import Table
    from rich.text import Text

    qids = sorted({q for scores in per_query_by_run.values() for q in scores})
    comparisons = compare_runs(per_query_by_run, baseline, queries=qids, alpha=alpha, method=method,
                               n_resamples=n_resamples, seed=seed)
    table = Table(title=f"{measure} against baseline {baseline!r} ({method} test over {len(qids)} queries, "
                  f"α = {alpha:g}; ▼ significantly worse, ▲ better)", title_justify="left", header_style="bold")
    for name, justify in (("run", "left"), ("mean", "right"), ("Δ", "right"), ("CI of Δ", "right"), ("p", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in sorted(comparisons, key=lambda c: (-c.diff, c.run)):
        mark = "▼ " if c.significantly_worse else "▲ " if c.significantly_better else ""
        table.add_row(c.run, f"{c.mean:.4f}", Text(f"{mark}{c.diff:+.4f}"), f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
                      f"{c.p:.3g}")
    return (f"exam: {measure} against baseline {baseline}", render_text(table, width))
