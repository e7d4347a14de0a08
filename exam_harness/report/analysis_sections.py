"""Report sections the pytest plugin prints on request: analyses and the baseline comparison.

Each section is ``(title, text)``: plain text rendered by rich at a given width, ready for
``terminalreporter.write_sep("-", title)`` + ``terminalreporter.write(text)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exam_harness.core.display import render_text
from exam_harness.core.errors import ConfigError
from exam_harness.exam.inputs import ExamView
from exam_harness.grading.passes import GradingOutcome
from exam_harness.measures.significance import compare_to_baseline

SECTIONS: tuple[str, ...] = ("verify", "missing", "spurious", "agreement")

Section = tuple[str, str]


def analysis_sections(
    view: ExamView,
    outcome: GradingOutcome,
    *,
    names: Sequence[str],
    min_grade: int,
    relevance_level: int = 2,
    limit: int = 10,
    width: int = 100,
) -> list[Section]:
    """The analyses ``names`` (of :data:`SECTIONS`) of a graded exam, as printable sections; ``view``
    must be built with the outcome's grades (its pool then holds every graded passage)."""
    from exam_harness.analysis import analyses
    from exam_harness.analysis.agreement import agreement_tables
    from exam_harness.report import analysis_tables as tables

    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise ConfigError(f"unknown analysis {unknown[0]!r}; valid: {', '.join(SECTIONS)}")
    sections: list[Section] = []
    for name in names:
        if name == "verify":
            reports = analyses.verify_grading(view, outcome)
            text = "".join(render_text(t, width) for t in tables.verify_tables(reports, limit=limit))
            sections.append(("exam: verify grading", text))
        elif name == "missing":
            missing = analyses.missing_in_bank(view, outcome, min_grade=min_grade, relevance_level=relevance_level)
            text = "".join(render_text(t, width) for t in tables.missing_tables(missing, limit=limit))
            sections.append(("exam: relevant passages missing in the bank", text))
        elif name == "spurious":
            points = analyses.spurious_test_points(view, outcome, min_grade=min_grade, relevance_level=relevance_level)
            table = tables.spurious_table(points, min_grade=min_grade, relevance_level=relevance_level, limit=limit)
            sections.append(("exam: spurious test points", render_text(table, width)))
        else:  # agreement
            tps = {q: view.test_points[q] for q in view.queries}
            result = agreement_tables(outcome.grades, tps, view.data.judgments, relevance_level=relevance_level,
                                      min_grades=[min_grade])
            text = "".join(render_text(t, width) for t in tables.agreement_renderables(result))
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
    comparisons = compare_to_baseline(per_query_by_run, baseline, queries=qids, alpha=alpha, method=method,
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
